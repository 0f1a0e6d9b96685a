//! Talking to the daemon: connect (starting `ckptd` if none answers), hello,
//! one request at a time. Blocking std IO only: process start-up dominates a
//! `ckptctl` call, so nothing heavy happens before the connection.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use ckpt_proto::{
    read_frame, write_frame, ActivityReply, BlameReply, CopyInReply, DiffReply, ErrorKind,
    ExportReply, FrameError, FsckReply, GcReply, LedgerAdded, LedgerEntryReply, LedgerImported,
    LedgerReply, LogReply, PinReply, Progress, ProjectList, ReleasedReply, Request, Response,
    RewindReply, RewindsReply, ShowReply, StatusReply, Synced, ToolReply, TurnEnded, TurnStarted,
    Unwatched, Watched, PROTOCOL_VERSION,
};
use interprocess::local_socket::{prelude::*, GenericFilePath, Stream};

/// Where the daemon answers, and where one this client starts keeps its
/// data: all the transport needs (the command line fills it in).
#[derive(Clone, Debug)]
pub struct Connection {
    /// The daemon's socket.
    pub socket: PathBuf,
    /// The data dir given to a daemon this client starts; None: the default.
    pub data_dir: Option<PathBuf>,
}

impl Connection {
    /// `socket`, else the default socket; `data_dir` as given.
    pub fn new(socket: Option<PathBuf>, data_dir: Option<PathBuf>) -> Connection {
        Connection {
            socket: socket.unwrap_or_else(ckpt_proto::paths::default_socket),
            data_dir,
        }
    }

    /// The data dir given, else the default one.
    pub fn data_dir(&self) -> anyhow::Result<PathBuf> {
        data_dir_or_default(self.data_dir.as_deref())
    }
}

/// `given`, else the default data dir.
pub fn data_dir_or_default(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    match given {
        Some(d) => Ok(d.to_path_buf()),
        None => ckpt_proto::paths::default_data_dir().ok_or_else(|| {
            anyhow!("cannot tell the data directory (no home directory); pass --data-dir")
        }),
    }
}

/// How long to wait for a freshly started daemon to answer.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// How long to keep trying after our daemon exited at start-up (another one
/// may be starting).
const RACE_GRACE: Duration = Duration::from_secs(3);

/// A failure the daemon reported: carried to `main` for the exit code.
#[derive(Debug)]
pub struct DaemonError {
    pub kind: ErrorKind,
    pub message: String,
}

impl std::fmt::Display for DaemonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DaemonError {}

pub struct Client {
    stream: Stream,
    socket: PathBuf,
    /// The hello was sent but its reply not yet read: it is read right
    /// after the first request is sent, saving a round trip per call.
    hello_pending: bool,
}

/// What to do with progress frames: ask for them in the hello, and pass
/// each one on.
pub type OnProgress<'a> = &'a mut dyn FnMut(&Progress);

impl Client {
    /// Connects and sends the hello (its reply is checked with the first
    /// request's); starts a daemon first if none answers (unless
    /// `CKPT_NO_AUTOSTART=1`).
    pub fn connect(conn: &Connection) -> anyhow::Result<Client> {
        Client::connect_asking(conn, false)
    }

    /// [`Client::connect`]; with `progress`, the hello asks the daemon for
    /// progress frames before long replies (see [`Client::request_observed`]).
    pub fn connect_asking(conn: &Connection, progress: bool) -> anyhow::Result<Client> {
        let socket = conn.socket.clone();
        let stream = match connect(&socket) {
            Ok(s) => s,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                if autostart_disabled() {
                    bail!(
                        "no ckptd is running at {} (CKPT_NO_AUTOSTART is set; start one with `ckptd`)",
                        socket.display()
                    );
                }
                start_daemon(conn, &socket)?
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("connecting to ckptd at {}", socket.display()))
            }
        };
        let mut client = Client {
            stream,
            socket,
            hello_pending: false,
        };
        write_frame(&mut client.stream, &hello_request(progress))
            .context("sending the hello to ckptd")?;
        client.hello_pending = true;
        Ok(client)
    }

    /// Connects to a running daemon only (never starts one); `None` if none answers.
    pub fn connect_existing(conn: &Connection) -> Option<Client> {
        let socket = conn.socket.clone();
        let stream = connect(&socket).ok()?;
        let mut client = Client {
            stream,
            socket,
            hello_pending: false,
        };
        write_frame(&mut client.stream, &hello_request(false)).ok()?;
        client.check_hello().ok()?;
        Some(client)
    }

    /// Reads and checks the hello's reply.
    fn check_hello(&mut self) -> anyhow::Result<()> {
        match read_frame(&mut self.stream) {
            Ok(Response::Hello(h)) if h.version == PROTOCOL_VERSION => Ok(()),
            Ok(Response::Hello(h)) => Err(anyhow!(DaemonError {
                kind: ErrorKind::Version,
                message: format!(
                    "ckptd {} (pid {}) speaks protocol {}, this ckptctl {} speaks {PROTOCOL_VERSION}; \
                     restart the daemon with a matching version",
                    h.daemon_version,
                    h.pid,
                    h.version,
                    env!("CARGO_PKG_VERSION")
                ),
            })),
            Ok(Response::Error { kind, message }) => Err(anyhow!(DaemonError { kind, message })),
            Ok(other) => bail!("unexpected reply to hello: {other:?}"),
            Err(e) => Err(e).context(format!(
                "the daemon at {} did not answer the hello in a way this ckptctl understands \
                 (an incompatible version?)",
                self.socket.display()
            )),
        }
    }

    /// Sends one request; a daemon-side failure becomes a [`DaemonError`].
    pub fn request(&mut self, req: &Request) -> anyhow::Result<Response> {
        self.request_observed(req, &mut |_| {})
    }

    /// [`Client::request`], passing every progress frame that comes before
    /// the reply to `on_progress` (a daemon that sends none is fine).
    pub fn request_observed(
        &mut self,
        req: &Request,
        on_progress: OnProgress<'_>,
    ) -> anyhow::Result<Response> {
        let sent = write_frame(&mut self.stream, req);
        if std::mem::take(&mut self.hello_pending) {
            // A daemon that refused the hello has closed the connection, so
            // the send may have failed: its reason comes first.
            self.check_hello()?;
        }
        let mut read = || loop {
            match read_frame(&mut self.stream)? {
                Response::Progress(p) => on_progress(&p),
                r => return Ok(r),
            }
        };
        match sent.and_then(|()| read()) {
            Ok(Response::Error { kind, message }) => Err(anyhow!(DaemonError { kind, message })),
            Ok(r) => Ok(r),
            Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                bail!("ckptd closed the connection without answering (did it stop?)")
            }
            Err(e) => Err(e).context("talking to ckptd"),
        }
    }

    /// Sends one request and takes the reply it calls for (see
    /// [`FromResponse`]); any other reply is an error.
    pub fn reply<T: FromResponse>(&mut self, req: &Request) -> anyhow::Result<T> {
        T::from_response(self.request(req)?)
    }
}

/// A reply the client reads, and the [`Response`] variant that carries it.
pub trait FromResponse: Sized {
    /// The reply; any other response is an error that shows it.
    fn from_response(r: Response) -> anyhow::Result<Self>;
}

macro_rules! from_response {
    ($($variant:ident($reply:ty)),* $(,)?) => {$(
        impl FromResponse for $reply {
            fn from_response(r: Response) -> anyhow::Result<Self> {
                match r {
                    Response::$variant(reply) => Ok(reply),
                    other => Err(unexpected(other)),
                }
            }
        }
    )*};
}

from_response!(
    Watched(Watched),
    Unwatched(Unwatched),
    Projects(ProjectList),
    TurnStarted(TurnStarted),
    TurnEnded(TurnEnded),
    Synced(Synced),
    Log(LogReply),
    Show(ShowReply),
    Diff(DiffReply),
    Rewind(RewindReply),
    Rewinds(RewindsReply),
    Status(StatusReply),
    Fsck(FsckReply),
    Activity(ActivityReply),
    LedgerAdded(LedgerAdded),
    Ledger(LedgerReply),
    LedgerEntry(LedgerEntryReply),
    LedgerImported(LedgerImported),
    Blame(BlameReply),
    Export(ExportReply),
    CopyIn(CopyInReply),
    Tool(ToolReply),
    Pinned(PinReply),
    Released(ReleasedReply),
    Gc(GcReply),
);

/// The reply was not the one the request calls for.
pub fn unexpected(r: Response) -> anyhow::Error {
    anyhow!("unexpected reply from ckptd: {r:?}")
}

/// Connects to the daemon's socket at `path` (or at its stand-in, when
/// `path` is too long for a socket address).
fn connect(path: &Path) -> std::io::Result<Stream> {
    let address = ckpt_proto::paths::socket_address(path);
    Stream::connect(address.to_fs_name::<GenericFilePath>()?)
}

fn hello_request(progress: bool) -> Request {
    Request::Hello {
        version: PROTOCOL_VERSION,
        client: format!("ckptctl {}", env!("CARGO_PKG_VERSION")),
        progress,
    }
}

fn autostart_disabled() -> bool {
    std::env::var_os("CKPT_NO_AUTOSTART").is_some_and(|v| !v.is_empty() && v != "0")
}

/// `ckptd` next to this executable, else on PATH.
pub fn find_ckptd() -> anyhow::Result<PathBuf> {
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            let beside = dir.join("ckptd");
            if beside.is_file() {
                return Ok(beside);
            }
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let cand = dir.join("ckptd");
        if cand.is_file() {
            return Ok(cand);
        }
    }
    bail!("cannot find the ckptd executable (not next to ckptctl, not on PATH)")
}

/// Starts a detached daemon on `socket` and waits until it answers.
fn start_daemon(conn: &Connection, socket: &Path) -> anyhow::Result<Stream> {
    let exe = find_ckptd()?;
    let data_dir = conn.data_dir()?;
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating data directory {}", data_dir.display()))?;
    let log_path = data_dir.join("ckptd.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let log2 = log.try_clone().context("duplicating the log file handle")?;
    let mut cmd = Command::new(&exe);
    cmd.arg("--socket")
        .arg(socket)
        .arg("--data-dir")
        .arg(&data_dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    // SAFETY: setsid is async-signal-safe; it detaches the daemon from our
    // session and terminal so it outlives this process.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let deadline = Instant::now() + START_TIMEOUT;
    let mut exited: Option<(Instant, std::process::ExitStatus)> = None;
    loop {
        if let Ok(s) = connect(socket) {
            return Ok(s);
        }
        if exited.is_none() {
            if let Ok(Some(status)) = child.try_wait() {
                exited = Some((Instant::now(), status));
            }
        }
        // Our daemon may have lost the race to one that another ckptctl
        // started at the same moment: give that one a moment to answer.
        if let Some((_, status)) = exited.filter(|(at, _)| at.elapsed() > RACE_GRACE) {
            bail!(
                "ckptd exited at start-up ({status}); its log {} ends with:\n{}",
                log_path.display(),
                log_tail(&log_path)
            );
        }
        if Instant::now() >= deadline {
            bail!(
                "ckptd did not answer on {} within {}s; see {}",
                socket.display(),
                START_TIMEOUT.as_secs(),
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}
