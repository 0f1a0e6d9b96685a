//! The hook call's floor (`ckpt-bench --sizes`): the least a hook's client
//! process can do. It connects to the Unix socket given, sends one
//! length-prefixed frame of the size given, reads one frame back and exits.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(socket), Some(size)) = (args.next(), args.next()) else {
        eprintln!("usage: ckpt-bench-hook-floor SOCKET REQUEST_BYTES");
        return ExitCode::from(2);
    };
    let Some(size) = size.to_str().and_then(|s| s.parse::<u32>().ok()) else {
        eprintln!("ckpt-bench-hook-floor: REQUEST_BYTES is a number");
        return ExitCode::from(2);
    };
    match round_trip(&socket, size) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ckpt-bench-hook-floor: {e}");
            ExitCode::FAILURE
        }
    }
}

fn round_trip(socket: &std::ffi::OsStr, size: u32) -> std::io::Result<()> {
    let mut s = UnixStream::connect(socket)?;
    let mut frame = size.to_be_bytes().to_vec();
    frame.resize(4 + size as usize, b' ');
    s.write_all(&frame)?;
    let mut header = [0u8; 4];
    s.read_exact(&mut header)?;
    let mut body = vec![0u8; u32::from_be_bytes(header) as usize];
    s.read_exact(&mut body)
}
