//! Request failures as data: a kind the client maps to an exit code, and a
//! message for a person.

use ckpt_proto::{ErrorKind, Response};

/// Why a request failed.
#[derive(Debug, Clone)]
pub struct ReqError {
    pub kind: ErrorKind,
    pub message: String,
}

pub type ReqResult<T> = Result<T, ReqError>;

impl ReqError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ReqError {
        ReqError {
            kind,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ReqError {
        ReqError::new(ErrorKind::BadRequest, message)
    }

    pub fn internal(message: impl Into<String>) -> ReqError {
        ReqError::new(ErrorKind::Internal, message)
    }
}

impl std::fmt::Display for ReqError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<ckpt_core::Error> for ReqError {
    fn from(e: ckpt_core::Error) -> Self {
        if e.is_disk_full() {
            return ReqError::new(ErrorKind::DiskFull, format!("{e} ({DISK_FULL})"));
        }
        ReqError::new(wire_kind(&e), e.to_string())
    }
}

/// The wire's kind of a core error: the one place the daemon maps them. A
/// few refusals have a kind of their own; the rest go by the core's kind.
fn wire_kind(e: &ckpt_core::Error) -> ErrorKind {
    use ckpt_core::{Error as E, ErrorKind as K};
    match e {
        E::UnknownTurn(_) => ErrorKind::UnknownTurn,
        E::TurnRewound(_) => ErrorKind::TurnRewound,
        E::NoOpenTurn => ErrorKind::NoOpenTurn,
        E::NothingToRedo => ErrorKind::NothingToRedo,
        _ => match e.kind() {
            K::BadInput => ErrorKind::BadRequest,
            K::Corrupt => ErrorKind::Corrupt,
            K::Io => ErrorKind::Io,
            K::Unusable => ErrorKind::ProjectUnavailable,
            K::Invariant => ErrorKind::Internal,
        },
    }
}

/// What a reply adds to a failure for lack of space, so the reason reads
/// the same in every reply and in `status`.
pub const DISK_FULL: &str =
    "ENOSPC: the filesystem is full; free space there and retry, nothing captured before is lost";

impl From<ReqError> for Response {
    fn from(e: ReqError) -> Self {
        Response::Error {
            kind: e.kind,
            message: e.message,
        }
    }
}

/// The text of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}
