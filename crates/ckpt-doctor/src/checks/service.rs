//! The login service: installed where `ckptctl service install` writes it,
//! and running.

use ckptctl::commands::service;

use crate::finding::Finding;

pub fn check() -> Option<Finding> {
    // No service manager on this platform: nothing to check.
    let s = service::state().ok()?;
    let name = s.manager.name();
    let file = s.file.display();
    Some(match (s.installed, s.running) {
        (false, _) => Finding::warn(
            "service",
            format!("no {name} ({file}): ckptd starts on demand, not at login"),
            "ckptctl service install",
        ),
        (true, Ok(true)) => Finding::ok("service", format!("{name} {file} is running")),
        (true, Ok(false)) => Finding::fail(
            "service",
            format!("{name} {file} is installed but not running"),
            s.manager.start_command(),
        ),
        (true, Err(e)) => Finding::warn(
            "service",
            format!("{name} {file} is installed; whether it runs is unknown: {e:#}"),
            s.manager.start_command(),
        ),
    })
}
