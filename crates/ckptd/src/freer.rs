//! Closes, and so frees, the files rewinds removed or replaced, on one
//! thread kept for it: the last close of an unlinked file frees its blocks,
//! which on ext4 with `discard` waits for the device (up to 0.4 s after a
//! full-tree rewind), and a rewind need not wait with it. One thread for
//! the daemon, started with the first batch: a thread started per rewind
//! cost each one-file rewind a thread's start and its mappings.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex};

use crate::mutex::lock;

pub struct Freer {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled when a batch is queued, one is done, or the freer goes.
    cond: Condvar,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Vec<OwnedFd>>,
    /// The thread holds a batch it is closing.
    busy: bool,
    started: bool,
    stop: bool,
    #[cfg(test)]
    spawned: usize,
}

impl Freer {
    pub fn new() -> Freer {
        Freer {
            shared: Arc::default(),
        }
    }

    /// What the core calls with a batch of files to close.
    pub fn free_removed(&self) -> ckpt_core::FreeRemoved {
        let shared = Arc::clone(&self.shared);
        ckpt_core::FreeRemoved(Arc::new(move |fds| shared.free(fds)))
    }

    /// Returns once every batch handed over so far is closed: their space
    /// is free.
    pub fn wait_idle(&self) {
        let s = &self.shared;
        let mut state = lock(&s.state);
        while state.busy || !state.queue.is_empty() {
            state = s.cond.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Freer {
    fn drop(&mut self) {
        lock(&self.shared.state).stop = true;
        self.shared.cond.notify_all();
    }
}

impl Shared {
    fn free(self: &Arc<Self>, fds: Vec<OwnedFd>) {
        let mut state = lock(&self.state);
        if !state.started {
            let me = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("ckpt-freer".into())
                .spawn(move || me.run());
            if let Err(e) = spawned {
                drop(state);
                tracing::debug!("closed removed files inline: {e}");
                return drop(fds);
            }
            state.started = true;
            #[cfg(test)]
            {
                state.spawned += 1;
            }
        }
        state.queue.push_back(fds);
        drop(state);
        self.cond.notify_all();
    }

    fn run(&self) {
        let mut state = lock(&self.state);
        loop {
            if let Some(fds) = state.queue.pop_front() {
                state.busy = true;
                drop(state);
                drop(fds);
                state = lock(&self.state);
                state.busy = false;
                self.cond.notify_all();
            } else if state.stop {
                return;
            } else {
                state = self.cond.wait(state).unwrap_or_else(|p| p.into_inner());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every batch handed over is closed, by one thread, and `wait_idle`
    /// returns only after the last is.
    #[test]
    fn batches_are_closed_on_one_thread_and_waited_for() {
        let t = tempfile::tempdir().unwrap();
        let freer = Freer::new();
        let free = freer.free_removed();
        for b in 0..20 {
            let fds = (0..3)
                .map(|i| {
                    let path = t.path().join(format!("{b}-{i}"));
                    let file = std::fs::File::create(&path).unwrap();
                    std::fs::remove_file(&path).unwrap();
                    OwnedFd::from(file)
                })
                .collect();
            (free.0)(fds);
        }
        freer.wait_idle();
        let dir = t.path().to_string_lossy().into_owned();
        let open: Vec<String> = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .map(|p| p.to_string_lossy().into_owned())
            .filter(|p| p.starts_with(&dir))
            .collect();
        assert!(open.is_empty(), "still open: {open:?}");
        assert_eq!(lock(&freer.shared.state).spawned, 1);
    }
}
