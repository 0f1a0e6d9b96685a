//! `ckptctl service install|uninstall`: start ckptd at login, as a systemd
//! user unit (Linux) or a launchd LaunchAgent (macOS); `--manager` writes
//! for either anywhere (so the tests drive the launchd path on Linux, with
//! a `launchctl` of their own on PATH). The templates live in the
//! repository's `systemd/` and `launchd/` directories.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use super::Ctx;
use crate::client::find_ckptd;
use crate::output;

const SYSTEMD_TEMPLATE: &str = include_str!("../../../../systemd/ckptd.service");
const LAUNCHD_TEMPLATE: &str = include_str!("../../../../launchd/dev.ckpt.ckptd.plist");
const LAUNCHD_LABEL: &str = "dev.ckpt.ckptd";

/// `ckptctl service`'s arguments.
#[derive(Args, Debug)]
pub struct ServiceArgs {
    /// The service manager to write for [default: launchd on macOS,
    /// systemd elsewhere].
    #[arg(long, value_enum, global = true)]
    pub manager: Option<Target>,
    #[command(subcommand)]
    pub action: ServiceAction,
}

#[derive(Subcommand, Debug)]
pub enum ServiceAction {
    /// Write the unit (or plist) and enable it.
    Install {
        /// Only write the file; do not enable or start the service.
        #[arg(long)]
        no_start: bool,
    },
    /// Disable and remove it.
    Uninstall,
}

/// The service managers `service` writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// A systemd user unit (`~/.config/systemd/user/ckptd.service`).
    Systemd,
    /// A launchd agent (`~/Library/LaunchAgents/dev.ckpt.ckptd.plist`).
    Launchd,
}

pub fn run(ctx: &Ctx, args: ServiceArgs) -> anyhow::Result<u8> {
    let action = args.action;
    let target = match args.manager {
        Some(m) => m,
        None => Target::platform()?,
    };
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("HOME is not set")?;
    let path = target.path(&home);
    match action {
        ServiceAction::Install { no_start } => {
            let ckptd = find_ckptd()?;
            let ckptd = std::fs::canonicalize(&ckptd).unwrap_or(ckptd);
            let text = target.render(ctx, &ckptd, &home)?;
            let log = (target == Target::Launchd).then(|| launchd_log(&home));
            for dir in path
                .parent()
                .into_iter()
                .chain(log.as_deref().and_then(Path::parent))
            {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            if no_start {
                report(ctx, "installed", &path, &Ok(()))?;
                return Ok(0);
            }
            // Ask the service manager first: a daemon stopped for a service
            // that cannot start would leave the user with none.
            let started = target.probe().and_then(|()| {
                let stopped = stop_unmanaged_daemon(ctx);
                let enabled = target.enable(&path);
                if enabled.is_err() && stopped {
                    // Put back what was running; the hooks need a daemon.
                    let _ = crate::client::Client::connect(&ctx.g.connection());
                }
                enabled
            });
            report(ctx, "installed", &path, &started)?;
            if started.is_err() {
                return Ok(1);
            }
        }
        ServiceAction::Uninstall => {
            let stopped = target.disable(&path);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
            }
            if target == Target::Systemd {
                let _ = systemctl(&["daemon-reload"]);
            }
            report(ctx, "removed", &path, &stopped)?;
        }
    }
    Ok(0)
}

/// The login service as `doctor` finds it: this platform's manager, the
/// file `service install` writes, and whether the manager runs it.
pub struct ServiceState {
    pub manager: Target,
    pub file: PathBuf,
    pub installed: bool,
    /// Err: the manager did not answer (no user session bus, …).
    pub running: anyhow::Result<bool>,
}

/// Reads the service's state where `service install` puts it.
pub fn state() -> anyhow::Result<ServiceState> {
    let manager = Target::platform()?;
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("HOME is not set")?;
    let file = manager.path(&home);
    let installed = file.is_file();
    Ok(ServiceState {
        manager,
        running: manager.running(),
        file,
        installed,
    })
}

/// A daemon started on demand by ckptctl would hold the lock and make the
/// service fail: stop it (cleanly) so the service manager's one takes over.
/// Returns whether one was stopped.
fn stop_unmanaged_daemon(ctx: &Ctx) -> bool {
    let Some(mut client) = crate::client::Client::connect_existing(&ctx.g.connection()) else {
        return false;
    };
    let Ok(ckpt_proto::Response::Status(s)) = client.request(&ckpt_proto::Request::Status) else {
        return false;
    };
    drop(client);
    let Ok(pid) = i32::try_from(s.daemon.pid) else {
        return false;
    };
    if !ctx.g.quiet && !ctx.g.json {
        eprintln!("ckptctl: stopping the running ckptd (pid {pid}) so the service can take over");
    }
    // SAFETY: signalling a pid the daemon itself reported; SIGTERM shuts it down cleanly.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    // SAFETY: signal 0 only probes whether the pid still exists.
    while unsafe { libc::kill(pid, 0) } == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

fn report(ctx: &Ctx, what: &str, path: &Path, service: &anyhow::Result<()>) -> anyhow::Result<()> {
    if let Err(e) = service {
        eprintln!("ckptctl: {e:#}");
        if what == "installed" {
            eprintln!(
                "ckptctl: the service file is written but not started; the running ckptd (if any) was left alone"
            );
        }
    }
    if ctx.g.json {
        output::json(&serde_json::json!({
            "file": path.to_string_lossy(),
            "action": what,
            "service_manager_ok": service.is_ok(),
        }))?;
    } else if !ctx.g.quiet {
        println!("{what} {}", path.display());
    }
    Ok(())
}

/// Where launchd writes ckptd's output: `~/Library/Logs`, where Console
/// looks for a user's logs.
fn launchd_log(home: &Path) -> PathBuf {
    home.join("Library/Logs/ckpt/ckptd.log")
}

impl Target {
    fn platform() -> anyhow::Result<Target> {
        if cfg!(target_os = "macos") {
            Ok(Target::Launchd)
        } else if cfg!(target_os = "linux") {
            Ok(Target::Systemd)
        } else {
            bail!("no service manager support on this platform; run `ckptd` from your session start-up")
        }
    }

    fn path(self, home: &Path) -> PathBuf {
        match self {
            Target::Systemd => std::env::var_os("XDG_CONFIG_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".config"))
                .join("systemd/user/ckptd.service"),
            Target::Launchd => home
                .join("Library/LaunchAgents")
                .join(format!("{LAUNCHD_LABEL}.plist")),
        }
    }

    /// Explicit `--socket` / `--data-dir` (or their variables) are baked in,
    /// so the service listens where this ckptctl looks.
    fn render(self, ctx: &Ctx, ckptd: &Path, home: &Path) -> anyhow::Result<String> {
        let mut args: Vec<String> = Vec::new();
        if let Some(s) = &ctx.g.socket {
            args.push("--socket".into());
            args.push(super::absolute(s)?.to_string_lossy().into_owned());
        }
        if let Some(d) = &ctx.g.data_dir {
            args.push("--data-dir".into());
            args.push(super::absolute(d)?.to_string_lossy().into_owned());
        }
        let exe = ckptd.to_string_lossy();
        Ok(match self {
            Target::Systemd => {
                let quoted: String = args
                    .iter()
                    .map(|a| format!(" \"{}\"", a.replace('"', "\\\"")))
                    .collect();
                SYSTEMD_TEMPLATE
                    .replace("@CKPTD@", &format!("\"{exe}\""))
                    .replace("@ARGS@", &quoted)
            }
            Target::Launchd => {
                let log = launchd_log(home);
                let items: String = args
                    .iter()
                    .map(|a| format!("\n        <string>{}</string>", xml_escape(a)))
                    .collect();
                LAUNCHD_TEMPLATE
                    .replace("@CKPTD@", &xml_escape(&exe))
                    .replace("@ARGS@", &items)
                    .replace("@LOG@", &xml_escape(&log.to_string_lossy()))
            }
        })
    }

    /// Whether the service manager answers (a user systemd bus, a launchd
    /// GUI domain), before anything is stopped.
    fn probe(self) -> anyhow::Result<()> {
        match self {
            Target::Systemd => systemctl(&["daemon-reload"]).context(
                "the user's systemd does not answer (no user session bus?); `ckptd` can run from your session start-up instead",
            ),
            Target::Launchd => launchctl(&["list"]),
        }
    }

    /// Whether the manager runs ckptd now.
    fn running(self) -> anyhow::Result<bool> {
        let (name, args): (&str, &[&str]) = match self {
            Target::Systemd => ("systemctl", &["--user", "is-active", "ckptd.service"]),
            Target::Launchd => ("launchctl", &["list", LAUNCHD_LABEL]),
        };
        let out = Command::new(name)
            .args(args)
            .output()
            .with_context(|| format!("running `{name} {}`", args.join(" ")))?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(match self {
            // `is-active` prints the state and exits 3 for inactive; a
            // missing bus prints nothing on stdout.
            Target::Systemd if text.trim().is_empty() => bail!(
                "`systemctl --user` does not answer: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            Target::Systemd => text.trim() == "active",
            // Loaded agents are listed with their pid while they run.
            Target::Launchd => out.status.success() && text.contains("\"PID\""),
        })
    }

    /// The command that starts the installed service.
    pub fn start_command(self) -> String {
        match self {
            Target::Systemd => "systemctl --user enable --now ckptd.service".to_string(),
            Target::Launchd => {
                format!("launchctl load -w ~/Library/LaunchAgents/{LAUNCHD_LABEL}.plist")
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Target::Systemd => "systemd user unit",
            Target::Launchd => "launchd agent",
        }
    }

    fn enable(self, path: &Path) -> anyhow::Result<()> {
        match self {
            Target::Systemd => systemctl(&["enable", "--now", "ckptd.service"]),
            Target::Launchd => launchctl(&["load", "-w", &path.to_string_lossy()]),
        }
    }

    fn disable(self, path: &Path) -> anyhow::Result<()> {
        match self {
            Target::Systemd => systemctl(&["disable", "--now", "ckptd.service"]),
            Target::Launchd => launchctl(&["unload", "-w", &path.to_string_lossy()]),
        }
    }
}

fn systemctl(args: &[&str]) -> anyhow::Result<()> {
    let mut full = vec!["--user"];
    full.extend_from_slice(args);
    tool("systemctl", &full)
}

fn launchctl(args: &[&str]) -> anyhow::Result<()> {
    tool("launchctl", args)
}

fn tool(name: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(name)
        .args(args)
        .output()
        .with_context(|| format!("running `{name} {}`", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "`{name} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
