//! `ckptctl status`: the daemon and every project.

use ckpt_proto::{Request, Response};

use super::projects::print_project;
use super::{unexpected, Ctx};
use crate::output;

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let s = match ctx.request(&Request::Status)? {
        Response::Status(s) => s,
        other => return Err(unexpected(other)),
    };
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
