//! `ckptctl status`: the daemon and every project.

use ckpt_proto::{Request, Response, StatusReply};

use super::projects::print_project;
use super::{unexpected, Ctx};
use crate::output;

/// The daemon and every project: the document `--json` prints.
pub fn query(ctx: &Ctx) -> anyhow::Result<StatusReply> {
    match ctx.request(&Request::Status)? {
        Response::Status(s) => Ok(s),
        other => Err(unexpected(other)),
    }
}

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let s = query(ctx)?;
    if ctx.g.json {
        output::json(&s)?;
        return Ok(0);
    }
    let d = &s.daemon;
    println!(
        "ckptd {} (pid {}, protocol {}), up {}",
        d.version,
        d.pid,
        d.protocol,
        output::duration(d.uptime_s)
    );
    println!("socket: {}", d.socket);
    println!("data:   {}", d.data_dir);
    if s.projects.is_empty() {
        println!("no watched projects");
    }
    for p in &s.projects {
        print_project(p);
    }
    Ok(0)
}
