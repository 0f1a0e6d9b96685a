//! What a rewind removes is held open until the batch is done, then closed
//! (and so freed) by the caller's `FreeRemoved` (the daemon's own thread),
//! or, without one, by the rewind itself before it returns: the core starts
//! no thread of its own for it.
#![cfg(target_os = "linux")]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ckpt_core::{FreeRemoved, Options};
use common::*;

/// A project whose one turn created `n` files, for a rewind to remove.
fn created(n: usize, opts: Options) -> Turned {
    let fx = Fx::with_opts(opts);
    fx.write("keep.txt", "kept\n");
    turned(fx, |fx| {
        for i in 0..n {
            fx.write(format!("new-{i}.txt"), format!("made by the turn {i}\n"));
        }
    })
}

/// The files of `root` this process still holds open though removed.
fn held_removed(root: &std::path::Path) -> Vec<String> {
    let root = root.canonicalize().unwrap();
    let mut held = Vec::new();
    for fd in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(to) = std::fs::read_link(fd.path()) else {
            continue;
        };
        let to = to.to_string_lossy().into_owned();
        if to.starts_with(root.to_string_lossy().as_ref()) && to.ends_with(" (deleted)") {
            held.push(to);
        }
    }
    held
}

#[test]
fn files_a_rewind_removes_are_handed_to_the_callers_free_removed() {
    let closed = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&closed);
    let opts = Options {
        free_removed: Some(FreeRemoved(Arc::new(move |fds| {
            counted.fetch_add(fds.len(), Ordering::SeqCst);
        }))),
        ..test_opts()
    };
    let mut t = created(3, opts);
    rewind(&mut t.p, t.turn);
    assert_tree(&t.target, &t.fx.tree(), "rewind");
    assert_eq!(closed.load(Ordering::SeqCst), 3, "the three removed files");
}

#[test]
fn without_free_removed_a_rewind_closes_what_it_removed_before_it_returns() {
    // More than one hand-over's worth (64), so some are closed mid-batch.
    let mut t = created(100, test_opts());
    rewind(&mut t.p, t.turn);
    assert_tree(&t.target, &t.fx.tree(), "rewind");
    assert_eq!(held_removed(&t.fx.root), Vec::<String>::new());
}
