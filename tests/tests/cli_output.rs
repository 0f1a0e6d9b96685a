//! The client's output as a pipeline sees it.

use std::io::Read;
use std::process::Stdio;

use ckpt_e2e::*;

/// `ckptctl … | head` ends the client quietly when `head` stops reading,
/// as other Unix tools do, instead of a panic on the failed write.
#[test]
fn a_reader_that_goes_away_ends_the_client_quietly() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("README", b"r\n")]);
    env.ctl_ok(&proj, &["watch"]);
    // A turn of many paths: a reply far larger than a pipe's buffer.
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        "for i in $(seq 1 2000); do echo line $i > f$i.txt; done",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    let mut child = env
        .ctl_cmd(&proj, &["--json", "show", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ckptctl");
    let mut first = [0u8; 16];
    child
        .stdout
        .take()
        .expect("stdout")
        .read_exact(&mut first)
        .expect("some output");
    // Dropping our end of the pipe is `head` exiting.
    let status = wait_timeout(&mut child, std::time::Duration::from_secs(60)).expect("exits");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.is_empty(), "{status:?}: {err}");
}
