//! Progress frames for a connection whose hello asked for them: while such
//! a connection's request runs, every core call it makes is observed, and
//! how far a scan or an apply has got is written to the connection at most
//! every [`INTERVAL`], before the reply.
//!
//! The sink is the request's thread's own (a thread-local): handlers run
//! their core calls on the thread that serves the connection, so none of
//! them has to carry it.

use std::cell::RefCell;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ckpt_core::{Observer, Progress};
use ckpt_proto::{encode, Response};

/// At most ~10 frames a second; none for a request done sooner.
const INTERVAL: Duration = Duration::from_millis(100);

thread_local! {
    static SINK: RefCell<Option<Arc<Sink>>> = const { RefCell::new(None) };
}

/// Where a request's progress goes.
struct Sink {
    /// A duplicate of the connection's socket; `None` once a write failed
    /// (the client went away: the reply's own write will tell).
    out: Mutex<Option<UnixStream>>,
    /// When the next frame may be sent.
    next: Mutex<Instant>,
}

impl Sink {
    fn send(&self, p: &Progress) {
        let now = Instant::now();
        {
            let mut next = crate::mutex::lock(&self.next);
            if now < *next {
                return;
            }
            *next = now + INTERVAL;
        }
        let mut out = crate::mutex::lock(&self.out);
        let Some(stream) = out.as_mut() else {
            return;
        };
        let sent = encode(&Response::Progress(*p))
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|bytes| stream.write_all(&bytes));
        if sent.is_err() {
            *out = None;
        }
    }
}

/// Runs `f` (a request's handler); with `out`, the progress of the core
/// calls it makes on this thread is written to `out` meanwhile (from its
/// first step if `at_once`, else after [`INTERVAL`]). Every frame has been
/// written when this returns, so the reply comes last.
pub fn while_handling<T>(out: Option<UnixStream>, at_once: bool, f: impl FnOnce() -> T) -> T {
    let Some(out) = out else {
        return f();
    };
    let first = if at_once { Duration::ZERO } else { INTERVAL };
    let sink = Arc::new(Sink {
        out: Mutex::new(Some(out)),
        next: Mutex::new(Instant::now() + first),
    });
    SINK.with(|s| *s.borrow_mut() = Some(Arc::clone(&sink)));
    // Cleared even if `f` panics (the server catches it).
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            SINK.with(|s| s.borrow_mut().take());
        }
    }
    let _clear = Clear;
    f()
}

/// The observer for a core call made on this thread: the request's sink,
/// if its connection asked for progress.
pub fn observer() -> Option<Observer> {
    let sink = SINK.with(|s| s.borrow().clone())?;
    Some(Box::new(move |p: &Progress| sink.send(p)))
}
