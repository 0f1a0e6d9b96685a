//! The socket server: accepts connections from our own user only, checks the
//! hello, then answers one response per request frame. A bad frame gets an
//! error reply (and, when the framing can no longer be trusted, a closed
//! connection); other clients never notice.

use std::sync::Arc;

use ckpt_proto::{
    decode_body, decode_len, encode, ErrorKind, FrameError, HelloReply, Request, Response,
    PROTOCOL_VERSION,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};

use crate::daemon::Daemon;
use crate::handlers;
use crate::socket::euid;

/// Accepts until `shutdown` resolves.
pub async fn accept_loop(
    listener: UnixListener,
    d: Arc<Daemon>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let d = Arc::clone(&d);
                    tokio::spawn(async move { serve_connection(stream, d).await });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    // Out of file descriptors and the like: do not spin.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
        }
    }
}

async fn serve_connection(stream: UnixStream, d: Arc<Daemon>) {
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == euid() => {}
        Ok(cred) => {
            tracing::warn!(uid = cred.uid(), "refusing a connection from another user");
            return;
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read peer credentials; refusing connection");
            return;
        }
    }
    let (mut rd, mut wr) = stream.into_split();
    let mut greeted = false;
    loop {
        let req = match read_request(&mut rd).await {
            Ok(Some(req)) => req,
            Ok(None) => return,
            Err(FrameError::Io(e)) => {
                tracing::debug!(error = %e, "connection closed mid-frame");
                return;
            }
            Err(e @ FrameError::TooLarge(_)) => {
                // The body was not read: the stream is out of step; close.
                let _ = send(&mut wr, &error(ErrorKind::BadFrame, e.to_string())).await;
                return;
            }
            Err(e @ FrameError::Json(_)) => {
                let msg = format!("{e} (expected a request; is the client the same version?)");
                if send(&mut wr, &error(ErrorKind::BadFrame, msg))
                    .await
                    .is_err()
                    || !greeted
                {
                    return;
                }
                continue;
            }
        };
        if !greeted {
            let reply = hello(&req);
            let ok = matches!(reply, Response::Hello(_));
            if send(&mut wr, &reply).await.is_err() || !ok {
                return;
            }
            greeted = true;
            continue;
        }
        let d2 = Arc::clone(&d);
        let reply = match tokio::task::spawn_blocking(move || handlers::handle(&d2, req)).await {
            Ok(r) => r,
            Err(e) => error(
                ErrorKind::Internal,
                format!("internal error handling the request: {e}"),
            ),
        };
        if send(&mut wr, &reply).await.is_err() {
            return;
        }
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

/// Reads one request; `None` on a clean end of stream between frames.
async fn read_request(rd: &mut OwnedReadHalf) -> Result<Option<Request>, FrameError> {
    let mut header = [0u8; 4];
    let mut got = 0;
    while got < header.len() {
        let n = rd.read(&mut header[got..]).await?;
        if n == 0 {
            if got == 0 {
                return Ok(None);
            }
            return Err(FrameError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        got += n;
    }
    let len = decode_len(header)?;
    let mut body = vec![0u8; len];
    rd.read_exact(&mut body).await?;
    decode_body(&body).map(Some)
}

async fn send(wr: &mut OwnedWriteHalf, reply: &Response) -> std::io::Result<()> {
    let bytes = match encode(reply) {
        Ok(b) => b,
        Err(e) => {
            let fallback = error(
                ErrorKind::Internal,
                format!(
                    "the reply could not be sent ({e}); narrow the request (e.g. diff one path)"
                ),
            );
            encode(&fallback).map_err(|e| std::io::Error::other(e.to_string()))?
        }
    };
    wr.write_all(&bytes).await?;
    wr.flush().await
}
