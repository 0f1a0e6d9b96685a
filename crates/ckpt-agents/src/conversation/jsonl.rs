//! JSON Lines transcripts as bytes: complete lines as offsets into the
//! bytes read (a last line without its newline is still being written and
//! is not one), read whole, from the head or from a bounded tail, and a
//! new file written without ever replacing one.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::Context;
use ckpt_core::atomic::{self, WriteFile};
use serde_json::Value;

/// One complete line: bytes `start..end` of the file, `end` past its `\n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    pub start: u64,
    pub end: u64,
}

/// Some bytes of a file, from offset `base`, and the complete lines in them.
pub struct Chunk {
    pub data: Vec<u8>,
    pub base: u64,
    pub lines: Vec<Line>,
    /// Where the file's complete lines end, as far as this chunk tells.
    pub complete_end: u64,
}

impl Chunk {
    /// The line as in the file, its newline included.
    pub fn bytes(&self, l: &Line) -> &[u8] {
        &self.data[(l.start - self.base) as usize..(l.end - self.base) as usize]
    }

    pub fn parse(&self, l: &Line) -> anyhow::Result<Value> {
        let text = self.bytes(l);
        serde_json::from_slice(&text[..text.len() - 1]).with_context(|| {
            format!(
                "the entry at bytes {}..{} is not JSON (a corrupted transcript)",
                l.start, l.end
            )
        })
    }

    pub fn values(&self, lines: &[Line]) -> anyhow::Result<Vec<Value>> {
        lines.iter().map(|l| self.parse(l)).collect()
    }
}

pub fn read_all(path: &Path) -> anyhow::Result<Chunk> {
    let data = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(chunk(data, 0, true))
}

/// The complete lines among the file's first `max` bytes.
pub fn read_head(path: &Path, max: u64) -> anyhow::Result<Chunk> {
    let f = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut data = Vec::new();
    f.take(max)
        .read_to_end(&mut data)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(chunk(data, 0, true))
}

/// The complete lines among the file's last `max` bytes: a stat and one
/// bounded read, however long the file is. Also says whether that was the
/// whole file.
pub fn read_tail(path: &Path, max: u64) -> anyhow::Result<(Chunk, bool)> {
    let mut f = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let len = f
        .metadata()
        .with_context(|| format!("stat {}", path.display()))?
        .len();
    let from = len.saturating_sub(max);
    f.seek(SeekFrom::Start(from))
        .with_context(|| format!("seeking in {}", path.display()))?;
    let mut data = Vec::with_capacity((len - from) as usize);
    f.take(len - from)
        .read_to_end(&mut data)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok((chunk(data, from, from == 0), from == 0))
}

/// The lines of `data` (which starts at file offset `base`); unless
/// `at_start`, the first piece is the end of a line begun before `data`
/// and is skipped.
fn chunk(data: Vec<u8>, base: u64, at_start: bool) -> Chunk {
    let mut lines = Vec::new();
    let first = if at_start {
        Some(0)
    } else {
        data.iter().position(|&b| b == b'\n').map(|i| i + 1)
    };
    let mut complete_end = base;
    if let Some(mut start) = first {
        complete_end = base + start as u64;
        while let Some(i) = data[start..].iter().position(|&b| b == b'\n') {
            let end = start + i + 1;
            // Blank lines are no entries (agents skip them when they read).
            if !data[start..end].iter().all(u8::is_ascii_whitespace) {
                lines.push(Line {
                    start: base + start as u64,
                    end: base + end as u64,
                });
            }
            complete_end = base + end as u64;
            start = end;
        }
    }
    Chunk {
        data,
        base,
        lines,
        complete_end,
    }
}

/// Writes `data` to `path`, which must not exist: a temp file in the same
/// directory, synced, then linked into place without replacing anything.
pub fn write_new(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    // The agents write their transcripts owner-only; so is the fork.
    let new_only = WriteFile {
        mode: 0o600,
        replace: false,
    };
    atomic::write_file(path, data, new_only).with_context(|| format!("creating {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_skips_the_line_it_starts_inside_and_the_unfinished_last_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        fs::write(&p, b"{\"a\":1}\n{\"b\":22}\n\n{\"c\":3}\n{\"d\"").unwrap();
        let all = read_all(&p).unwrap();
        assert_eq!(all.lines.len(), 3);
        assert_eq!(all.lines[2], Line { start: 18, end: 26 });
        assert_eq!(all.bytes(&all.lines[2]), b"{\"c\":3}\n");
        assert_eq!(all.complete_end, 26);
        let (tail, whole) = read_tail(&p, 15).unwrap();
        assert!(!whole);
        assert_eq!(tail.lines, [Line { start: 18, end: 26 }]);
        assert_eq!(tail.parse(&tail.lines[0]).unwrap()["c"], 3);
        assert_eq!(tail.complete_end, 26);
        let (tail, whole) = read_tail(&p, 1 << 20).unwrap();
        assert!(whole);
        assert_eq!(tail.lines.len(), 3);
        let (inside, _) = read_tail(&p, 3).unwrap();
        assert!(inside.lines.is_empty());
    }

    #[test]
    fn write_new_never_replaces_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.jsonl");
        write_new(&p, b"x\n").unwrap();
        assert!(write_new(&p, b"y\n").is_err());
        assert_eq!(fs::read(&p).unwrap(), b"x\n");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temp left");
    }
}
