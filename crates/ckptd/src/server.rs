//! The socket server: accepts connections from our own user only, checks the
//! hello, then answers one response per request frame. A bad frame gets an
//! error reply (and, when the framing can no longer be trusted, a closed
//! connection); other clients never notice. A connection that stays silent
//! between requests gives its thread back and waits on the runtime's IO
//! driver (parked), so idle clients cannot starve the others.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use ckpt_proto::{
    read_frame_or_end, write_frame, ErrorKind, FrameError, HelloReply, Request, Response,
    PROTOCOL_VERSION,
};
use interprocess::local_socket::{prelude::*, Listener, Stream};

use crate::daemon::Daemon;
use crate::error::panic_message;
use crate::handlers;
use crate::socket;

/// Accepts until `shutdown` resolves. Each connection is served on the
/// thread that accepted it ([`Acceptors`]).
pub async fn accept_loop(
    listener: Listener,
    socket: PathBuf,
    d: Arc<Daemon>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let acceptors = Arc::new(Acceptors {
        listener,
        d,
        rt: tokio::runtime::Handle::current(),
        stopping: AtomicBool::new(false),
        idle: AtomicUsize::new(0),
        alive: AtomicUsize::new(0),
    });
    if !acceptors.start() {
        return;
    }
    shutdown.await;
    acceptors.stopping.store(true, Ordering::Release);
    // Wake each waiting acceptor so it sees the flag; one more for one
    // that is about to wait.
    for _ in 0..=acceptors.idle.load(Ordering::Acquire) {
        let _ = socket::connect(&socket);
    }
}

/// Threads that each wait in `accept` and serve the connection they
/// took, then wait again. One accept thread handing every connection to
/// the blocking pool was a hand-off per call, and on two saturated cores
/// that thread waited for a core 0.8 s of every second, every call behind
/// it. A new acceptor starts when the last waiting one takes a
/// connection; past [`IDLE_ACCEPTORS`] waiting, one that finishes ends.
struct Acceptors {
    listener: Listener,
    d: Arc<Daemon>,
    rt: tokio::runtime::Handle,
    stopping: AtomicBool,
    /// Acceptors waiting in `accept` (or about to).
    idle: AtomicUsize,
    /// Acceptor threads running.
    alive: AtomicUsize,
}

/// Most acceptors left waiting: enough for a burst of hook calls without
/// starting threads, few enough to cost nothing idle.
const IDLE_ACCEPTORS: usize = 16;

/// Most acceptor threads (tokio's blocking pool's default): past it a
/// connection waits for one to finish or park its silent connection.
const MAX_ACCEPTORS: usize = 512;

impl Acceptors {
    /// Starts an acceptor; false at [`MAX_ACCEPTORS`] or if no thread
    /// could be started.
    fn start(self: &Arc<Self>) -> bool {
        if self.alive.fetch_add(1, Ordering::AcqRel) >= MAX_ACCEPTORS {
            self.alive.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        self.idle.fetch_add(1, Ordering::AcqRel);
        let me = Arc::clone(self);
        match std::thread::Builder::new()
            .name("ckptd-accept".into())
            .spawn(move || me.run())
        {
            Ok(_) => true,
            Err(e) => {
                self.idle.fetch_sub(1, Ordering::AcqRel);
                self.alive.fetch_sub(1, Ordering::AcqRel);
                tracing::error!(error = %e, "cannot start an accept thread");
                false
            }
        }
    }

    fn run(self: Arc<Self>) {
        // Parked connections are watched by the runtime (see `park`).
        let _rt = self.rt.enter();
        self.accept_and_serve();
        self.alive.fetch_sub(1, Ordering::AcqRel);
    }

    fn accept_and_serve(self: &Arc<Self>) {
        loop {
            if self.stopping.load(Ordering::Acquire) {
                return;
            }
            let conn = self.listener.accept();
            let idle = self.idle.fetch_sub(1, Ordering::AcqRel) - 1;
            if self.stopping.load(Ordering::Acquire) {
                return;
            }
            if idle == 0 {
                // Someone keeps accepting while this one serves (or,
                // with no thread to be had, this one after serving).
                self.start();
            }
            match conn {
                Ok(stream) => {
                    let d = Arc::clone(&self.d);
                    let served = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        serve_connection(stream, d);
                    }));
                    if let Err(p) = served {
                        tracing::error!(panic = %panic_message(p.as_ref()), "serving a connection");
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    // Out of file descriptors and the like: do not spin.
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            }
            if self.idle.load(Ordering::Acquire) >= IDLE_ACCEPTORS {
                return;
            }
            self.idle.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// How long a connection may be silent before its next request and keep
/// its thread. A hook call's frames follow each other within microseconds;
/// an MCP server or `ckptctl ui` waits minutes between requests, and with
/// 1,000 such connections the blocking pool (512 threads) was full and a
/// hook call waited for ever.
const IDLE: std::time::Duration = std::time::Duration::from_millis(100);

/// How long a request frame may take to arrive once it has begun: a
/// client that stops mid-frame is dropped, not waited for.
const MID_FRAME: std::time::Duration = std::time::Duration::from_secs(30);

/// Serves one connection on the calling thread: reading, handling and
/// answering a request on the same thread spares each call two thread
/// hand-offs (a `ckptctl` call is a few milliseconds, mostly process
/// start-up, so every hop shows).
fn serve_connection(stream: Stream, d: Arc<Daemon>) {
    match socket::peer_uid(&stream) {
        Ok(uid) if uid == socket::euid() => {}
        Ok(uid) => {
            tracing::warn!(peer_uid = uid, "refusing a connection from another user");
            return;
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read peer credentials; refusing connection");
            return;
        }
    }
    if let Err(e) = stream.set_recv_timeout(Some(MID_FRAME)) {
        tracing::warn!(error = %e, "cannot set a receive timeout; refusing connection");
        return;
    }
    serve(stream, d, None);
}

/// What a connection's hello settled.
#[derive(Clone, Copy)]
struct Greeted {
    /// It asked for progress frames before long replies.
    progress: bool,
}

/// Answers requests until the connection ends, or parks it when it falls
/// silent. `greeted`: its hello was answered.
fn serve(mut stream: Stream, d: Arc<Daemon>, mut greeted: Option<Greeted>) {
    loop {
        match socket::wait_readable(&stream, IDLE) {
            Ok(true) => {}
            Ok(false) => return park(stream, d, greeted),
            Err(e) => {
                tracing::debug!(error = %e, "connection failed while idle");
                return;
            }
        }
        let req = match read_frame_or_end::<_, Request>(&mut stream) {
            Ok(Some(req)) => req,
            Ok(None) => return,
            Err(FrameError::Io(e)) => {
                tracing::debug!(error = %e, "connection closed mid-frame");
                return;
            }
            Err(e @ FrameError::TooLarge { .. }) => {
                // The body was not read: the stream is out of step; close.
                let _ = send(&mut stream, &error(ErrorKind::BadFrame, e.to_string()));
                return;
            }
            Err(e @ FrameError::Json(_)) => {
                let msg = format!("{e} (expected a request; is the client the same version?)");
                if send(&mut stream, &error(ErrorKind::BadFrame, msg)).is_err() || greeted.is_none()
                {
                    return;
                }
                continue;
            }
        };
        let started = std::time::Instant::now();
        let reply = if let Some(g) = greeted {
            // No duplicate, no progress: the reply alone still answers.
            let out = g
                .progress
                .then(|| socket::duplicate(&stream).ok())
                .flatten();
            let at_once = d.config.hooks.progress_at_once();
            let _admitted = d.admission.enter();
            crate::progress::while_handling(out, at_once, || handle(&d, req))
        } else {
            let progress = matches!(req, Request::Hello { progress: true, .. });
            let reply = hello(&req);
            if !matches!(reply, Response::Hello(_)) {
                let _ = send(&mut stream, &reply);
                return;
            }
            greeted = Some(Greeted { progress });
            reply
        };
        let sent = send(&mut stream, &reply);
        drop(reply);
        if started.elapsed() >= LONG_REQUEST {
            release_freed_memory();
        }
        if sent.is_err() {
            return;
        }
    }
}

/// Waits, without a thread, for a silent connection to speak (or close),
/// then serves it on a blocking thread again.
fn park(stream: Stream, d: Arc<Daemon>, greeted: Option<Greeted>) {
    let rt = tokio::runtime::Handle::current();
    rt.clone().spawn(async move {
        // SAFETY: `Parked` owns the stream, whose descriptor stays open and
        // unreplaced until `into_inner` deregisters it.
        let fd = match unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(
                socket::Parked(stream),
                tokio::io::Interest::READABLE,
            )
        } {
            Ok(fd) => fd,
            Err(e) => {
                tracing::warn!(error = %e, "cannot park an idle connection; closing it");
                return;
            }
        };
        if let Err(e) = fd.readable().await {
            tracing::debug!(error = %e, "parked connection failed");
            return;
        }
        let socket::Parked(stream) = fd.into_inner();
        rt.spawn_blocking(move || serve(stream, d, greeted));
    });
}

/// Requests that ran at least this long (a turn or a rewind of thousands
/// of files) are followed by [`release_freed_memory`] once the reply has
/// gone: the trim costs milliseconds (up to 16 ms), too much for short calls.
const LONG_REQUEST: std::time::Duration = std::time::Duration::from_millis(100);

/// Hands memory freed after a large request back to the system, which
/// glibc keeps otherwise: 37 MiB resident instead of 63 MiB after a turn-end
/// and a rewind of 5,302 files.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs a handler; a panic becomes an error reply and the daemon stays up.
fn handle(d: &Arc<Daemon>, req: Request) -> Response {
    match std::panic::catch_unwind(AssertUnwindSafe(|| handlers::handle(d, req))) {
        Ok(r) => r,
        Err(p) => error(
            ErrorKind::Internal,
            format!(
                "internal error handling the request: {}",
                panic_message(p.as_ref())
            ),
        ),
    }
}

fn hello(req: &Request) -> Response {
    match req {
        Request::Hello { version, .. } if *version == PROTOCOL_VERSION => Response::Hello(HelloReply {
            version: PROTOCOL_VERSION,
            daemon_version: env!("CARGO_PKG_VERSION").to_string(),
            pid: std::process::id(),
        }),
        Request::Hello { version, .. } => error(
            ErrorKind::Version,
            format!(
                "protocol version mismatch: ckptd {} speaks protocol {PROTOCOL_VERSION}, the client speaks {version}; \
                 restart the daemon with the matching ckptd (`kill {}`; ckptctl starts a new one)",
                env!("CARGO_PKG_VERSION"),
                std::process::id()
            ),
        ),
        _ => error(ErrorKind::BadFrame, "the first request must be Hello".to_string()),
    }
}

fn error(kind: ErrorKind, message: String) -> Response {
    Response::Error { kind, message }
}

/// Streamed (`write_frame`): a reply listing a huge turn's paths is not
/// held a second time as JSON.
fn send(wr: &mut Stream, reply: &Response) -> std::io::Result<()> {
    let e = match write_frame(wr, reply) {
        Ok(()) => return Ok(()),
        Err(FrameError::Io(e)) => return Err(e),
        // Refused before anything was written.
        Err(e) => e,
    };
    let fallback = error(
        ErrorKind::Internal,
        // Sent after the request ran: say so, or a user retries a
        // rewind that was applied.
        format!(
            "the reply could not be sent ({e}), but the request was carried out \
             (`ckptctl log` shows turns); narrow a listing (e.g. diff one path)"
        ),
    );
    write_frame(wr, &fallback).map_err(|e| match e {
        FrameError::Io(e) => e,
        e => std::io::Error::other(e.to_string()),
    })
}
