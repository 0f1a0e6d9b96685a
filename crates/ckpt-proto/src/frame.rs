//! Length-prefixed JSON frames over blocking std IO, read and written the
//! same way by the client and the daemon: a `u32` big-endian length capped
//! per direction ([`Message::MAX`]), then that many bytes of JSON.

use std::io::{Read, Write};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Request, Response};

/// The largest request body the daemon reads: 16 MiB, far above any real
/// request, so a garbage length is refused before anything is read.
pub const MAX_REQUEST: usize = 16 << 20;

/// The largest reply body: 1 GiB. Turn-end, show and rewind list every path
/// they touched (~270 bytes each plus the path), so a formatter run over
/// ~53,000 files already outgrows [`MAX_REQUEST`]; the client trusts its
/// own user's daemon with more.
pub const MAX_REPLY: usize = 1 << 30;

/// Why a frame could not be read or written.
#[derive(Debug)]
pub enum FrameError {
    /// The transport failed (including EOF in the middle of a frame).
    Io(std::io::Error),
    /// The frame is longer than the limit for its direction.
    TooLarge { len: usize, max: usize },
    /// The body is not the JSON of the expected type.
    Json(serde_json::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "connection error: {e}"),
            FrameError::TooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the limit of {max} bytes")
            }
            FrameError::Json(e) => write!(f, "malformed message: {e}"),
        }
    }
}

impl std::error::Error for FrameError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FrameError::Io(e) => Some(e),
            FrameError::TooLarge { .. } => None,
            FrameError::Json(e) => Some(e),
        }
    }
}

impl From<std::io::Error> for FrameError {
    fn from(e: std::io::Error) -> Self {
        FrameError::Io(e)
    }
}

/// A message that travels in frames, and the largest body it may have.
pub trait Message: Serialize + DeserializeOwned {
    const MAX: usize;
}

impl Message for Request {
    const MAX: usize = MAX_REQUEST;
}

impl Message for Response {
    const MAX: usize = MAX_REPLY;
}

/// Encodes `msg` as one complete frame: header and body.
pub fn encode<T: Message>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let max = T::MAX;
    let mut out = vec![0u8; 4];
    serde_json::to_writer(&mut out, msg).map_err(FrameError::Json)?;
    let len = out.len() - 4;
    let len = u32::try_from(len)
        .ok()
        .filter(|&n| n as usize <= max)
        .ok_or(FrameError::TooLarge { len, max })?;
    out[..4].copy_from_slice(&len.to_be_bytes());
    Ok(out)
}

/// The body length announced by a frame header for a `T`, checked against
/// its limit.
fn decode_len<T: Message>(header: [u8; 4]) -> Result<usize, FrameError> {
    let (len, max) = (u32::from_be_bytes(header) as usize, T::MAX);
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    Ok(len)
}

/// Decodes a frame body.
pub fn decode_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    serde_json::from_slice(body).map_err(FrameError::Json)
}

/// How much of a frame [`write_frame`] holds at once.
const WRITE_BUFFER: usize = 64 << 10;

/// The body length of `msg`'s frame, checked against its limit: counted
/// by serializing into nothing.
pub fn body_len<T: Message>(msg: &T) -> Result<u32, FrameError> {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, msg).map_err(FrameError::Json)?;
    let (len, max) = (count.0, T::MAX);
    u32::try_from(len)
        .ok()
        .filter(|&n| n as usize <= max)
        .ok_or(FrameError::TooLarge { len, max })
}

/// Writes one frame to a blocking writer and flushes it. The body is
/// serialized twice, counted for the header and then written through a
/// small buffer, so a reply that lists every path of a huge turn (~15 MB
/// of JSON at 50,000 files) is never held whole. Any error but
/// [`FrameError::Io`] comes before the first byte is written.
pub fn write_frame<W: Write, T: Message>(w: &mut W, msg: &T) -> Result<(), FrameError> {
    let len = body_len(msg)?;
    let mut out = std::io::BufWriter::with_capacity(WRITE_BUFFER, w);
    out.write_all(&len.to_be_bytes())?;
    serde_json::to_writer(&mut out, msg).map_err(|e| match e.io_error_kind() {
        Some(_) => FrameError::Io(e.into()),
        None => FrameError::Json(e),
    })?;
    out.flush()?;
    Ok(())
}

/// The most a body buffer holds before bytes arrive to fill it: a header
/// is only a claim, so a peer that announces 16 MiB and sends nothing costs
/// this much, not what it announced.
pub const READ_AHEAD: usize = 64 << 10;

/// Reads a body of `len` bytes (already checked by [`decode_len`]). The
/// buffer grows as bytes arrive, never to `len` on the header's word alone;
/// a stream that ends early is an `UnexpectedEof` error.
fn read_body<R: Read>(r: &mut R, len: usize) -> Result<Vec<u8>, FrameError> {
    let mut body = Vec::with_capacity(len.min(READ_AHEAD));
    r.take(len as u64).read_to_end(&mut body)?;
    if body.len() < len {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
    }
    Ok(body)
}

/// Reads one frame from a blocking reader; a stream that ends anywhere,
/// even before the header, is an `UnexpectedEof` error.
pub fn read_frame<R: Read, T: Message>(r: &mut R) -> Result<T, FrameError> {
    read_frame_or_end(r)?
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into())
}

/// Reads one frame, or `None` when the stream ends cleanly before its
/// first byte: how a server tells a client that hung up between requests
/// from one that broke off in the middle of a frame.
pub fn read_frame_or_end<R: Read, T: Message>(r: &mut R) -> Result<Option<T>, FrameError> {
    let mut header = [0u8; 4];
    let mut got = 0;
    while got < header.len() {
        match r.read(&mut header[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let len = decode_len::<T>(header)?;
    decode_body(&read_body(r, len)?).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

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

    /// The streamed frame is the encoded one, byte for byte, and one over
    /// the limit writes nothing.
    #[test]
    fn a_written_frame_is_its_encoding_and_an_oversized_one_writes_nothing() {
        let reply = Response::Error {
            kind: ErrorKind::Other,
            message: "x".repeat(3 * WRITE_BUFFER),
        };
        let mut buf = Vec::new();
        write_frame(&mut buf, &reply).unwrap();
        assert_eq!(buf, encode(&reply).unwrap());
        let request = Request::Hello {
            version: 1,
            client: "x".repeat(MAX_REQUEST),
            progress: false,
        };
        let mut buf = Vec::new();
        assert!(matches!(
            write_frame(&mut buf, &request),
            Err(FrameError::TooLarge { .. })
        ));
        assert!(buf.is_empty());
    }

    #[test]
    fn oversized_header_is_refused_before_reading_the_body() {
        let header = ((MAX_REQUEST + 1) as u32).to_be_bytes();
        assert!(matches!(
            decode_len::<Request>(header),
            Err(FrameError::TooLarge { .. })
        ));
        assert_eq!(decode_len::<Response>(header).unwrap(), MAX_REQUEST + 1);
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_frame::<_, Request>(&mut r),
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_reply_may_outgrow_a_request() {
        let request = Request::Hello {
            version: 1,
            client: "x".repeat(MAX_REQUEST),
            progress: false,
        };
        assert!(matches!(encode(&request), Err(FrameError::TooLarge { .. })));
        let big = Response::Error {
            kind: ErrorKind::Other,
            message: "x".repeat(MAX_REQUEST),
        };
        let mut buf = Vec::new();
        write_frame(&mut buf, &big).unwrap();
        match read_frame::<_, Response>(&mut buf.as_slice()).unwrap() {
            Response::Error { message, .. } => assert_eq!(message.len(), MAX_REQUEST),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_clean_end_between_frames_is_not_an_error_but_a_cut_header_is() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &Request::Status).unwrap();
        let mut r = buf.as_slice();
        assert!(matches!(
            read_frame_or_end::<_, Request>(&mut r),
            Ok(Some(Request::Status))
        ));
        assert!(matches!(read_frame_or_end::<_, Request>(&mut r), Ok(None)));
        assert!(matches!(
            read_frame::<_, Request>(&mut [].as_slice()),
            Err(FrameError::Io(_))
        ));
        let mut r: &[u8] = &[0, 0];
        assert!(matches!(
            read_frame_or_end::<_, Request>(&mut r),
            Err(FrameError::Io(_))
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
