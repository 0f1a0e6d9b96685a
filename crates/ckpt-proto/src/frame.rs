//! Length-prefixed JSON frames, usable from blocking std IO (the client) and
//! from an async reader (the daemon reads the 4-byte header and the body
//! itself, then calls [`decode_len`] and [`decode_body`]).

use std::io::{Read, Write};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The largest frame body either side accepts: 16 MiB.
pub const MAX_FRAME: usize = 16 << 20;

/// Why a frame could not be read or written.
#[derive(Debug)]
pub enum FrameError {
    /// The transport failed (including EOF in the middle of a frame).
    Io(std::io::Error),
    /// The length prefix announces more than [`MAX_FRAME`] bytes.
    TooLarge(usize),
    /// The body is not the JSON of the expected type.
    Json(serde_json::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "connection error: {e}"),
            FrameError::TooLarge(n) => write!(
                f,
                "frame of {n} bytes exceeds the limit of {MAX_FRAME} bytes"
            ),
            FrameError::Json(e) => write!(f, "malformed message: {e}"),
        }
    }
}

impl std::error::Error for FrameError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FrameError::Io(e) => Some(e),
            FrameError::TooLarge(_) => None,
            FrameError::Json(e) => Some(e),
        }
    }
}

impl From<std::io::Error> for FrameError {
    fn from(e: std::io::Error) -> Self {
        FrameError::Io(e)
    }
}

/// Encodes `msg` as one complete frame: header and body.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let mut out = vec![0u8; 4];
    serde_json::to_writer(&mut out, msg).map_err(FrameError::Json)?;
    let len = out.len() - 4;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    let len = u32::try_from(len).expect("MAX_FRAME fits in u32");
    out[..4].copy_from_slice(&len.to_be_bytes());
    Ok(out)
}

/// The body length announced by a frame header, checked against [`MAX_FRAME`].
pub fn decode_len(header: [u8; 4]) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    Ok(len)
}

/// Decodes a frame body.
pub fn decode_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    serde_json::from_slice(body).map_err(FrameError::Json)
}

/// Writes one frame to a blocking writer and flushes it.
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<(), FrameError> {
    w.write_all(&encode(msg)?)?;
    w.flush()?;
    Ok(())
}

/// Reads one frame from a blocking reader.
pub fn read_frame<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<T, FrameError> {
    let mut header = [0u8; 4];
    r.read_exact(&mut header)?;
    let len = decode_len(header)?;
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    decode_body(&body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, Request, Response};

    #[test]
    fn roundtrip_request_and_error() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &Request::Status).unwrap();
        write_frame(
            &mut buf,
            &Response::Error {
                kind: ErrorKind::UnknownTurn,
                message: "no turn 9".into(),
            },
        )
        .unwrap();
        let mut r = buf.as_slice();
        assert!(matches!(
            read_frame::<_, Request>(&mut r).unwrap(),
            Request::Status
        ));
        match read_frame::<_, Response>(&mut r).unwrap() {
            Response::Error { kind, message } => {
                assert_eq!(kind, ErrorKind::UnknownTurn);
                assert_eq!(message, "no turn 9");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn oversized_header_is_refused_before_reading_the_body() {
        let header = ((MAX_FRAME + 1) as u32).to_be_bytes();
        assert!(matches!(decode_len(header), Err(FrameError::TooLarge(_))));
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_frame::<_, Request>(&mut r),
            Err(FrameError::TooLarge(_))
        ));
    }

    #[test]
    fn truncated_and_garbage_frames_are_errors() {
        let mut r: &[u8] = &[0, 0, 0, 10, b'{'];
        assert!(matches!(
            read_frame::<_, Request>(&mut r),
            Err(FrameError::Io(_))
        ));
        let mut r: &[u8] = &[0, 0, 0, 3, b'x', b'y', b'z'];
        assert!(matches!(
            read_frame::<_, Request>(&mut r),
            Err(FrameError::Json(_))
        ));
    }

    #[test]
    fn unknown_error_kinds_from_a_newer_daemon_still_decode() {
        let r: Response =
            serde_json::from_str(r#"{"Error":{"kind":"something_new","message":"m"}}"#).unwrap();
        assert!(matches!(
            r,
            Response::Error {
                kind: ErrorKind::Other,
                ..
            }
        ));
    }
}
