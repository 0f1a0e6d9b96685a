//! JSON Lines transcripts as bytes: complete lines with their offsets (a
//! last line without its newline is still being written and is not one),
//! read whole or from a bounded tail, and a new file written without ever
//! replacing one.

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::Context;
use serde_json::Value;

/// One complete line: bytes `start..end` of the file, `end` past its `\n`.
#[derive(Clone, Debug)]
pub struct Line {
    pub start: u64,
    pub end: u64,
    text: Vec<u8>,
}

impl Line {
    pub fn parse(&self) -> anyhow::Result<Value> {
        serde_json::from_slice(&self.text).with_context(|| {
            format!(
                "the entry at bytes {}..{} is not JSON (a corrupted transcript)",
                self.start, self.end
            )
        })
    }

    /// The line as in the file, its newline included.
    pub fn bytes<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        &data[self.start as usize..self.end as usize]
    }

    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }
}

pub struct File {
    pub data: Vec<u8>,
    pub lines: Vec<Line>,
}

pub struct Tail {
    /// Complete lines wholly inside the tail, in order.
    pub lines: Vec<Line>,
    /// Where the file's complete lines end.
    pub complete_end: u64,
}

pub fn read_all(path: &Path) -> anyhow::Result<File> {
    let data = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let lines = split(&data, 0, true);
    Ok(File { data, lines })
}

/// The complete lines among the file's first `max` bytes.
pub fn read_head(path: &Path, max: u64) -> anyhow::Result<Vec<Line>> {
    let f = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut buf = Vec::new();
    f.take(max)
        .read_to_end(&mut buf)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(split(&buf, 0, true))
}

/// The complete lines among the file's last `max` bytes: a stat and one
/// bounded read, however long the file is.
pub fn read_tail(path: &Path, max: u64) -> anyhow::Result<Tail> {
    let mut f = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let len = f
        .metadata()
        .with_context(|| format!("stat {}", path.display()))?
        .len();
    let from = len.saturating_sub(max);
    f.seek(SeekFrom::Start(from))
        .with_context(|| format!("seeking in {}", path.display()))?;
    let mut buf = Vec::with_capacity((len - from) as usize);
    f.take(len - from)
        .read_to_end(&mut buf)
        .with_context(|| format!("reading {}", path.display()))?;
    let lines = split(&buf, from, from == 0);
    let complete_end = match lines.last() {
        Some(l) => l.end,
        // No complete line in the window: either none at all, or one
        // longer than the window (its end is where the window's last
        // newline is).
        None => buf
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(if from == 0 { 0 } else { from }, |i| from + i as u64 + 1),
    };
    Ok(Tail {
        lines,
        complete_end,
    })
}

/// Lines of `buf` (which starts at file offset `base`); unless `at_start`,
/// the first piece is the end of a line begun before `buf` and is skipped.
fn split(buf: &[u8], base: u64, at_start: bool) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = if at_start {
        0
    } else {
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => i + 1,
            None => return lines,
        }
    };
    while let Some(i) = buf[start..].iter().position(|&b| b == b'\n') {
        let end = start + i + 1;
        let text = &buf[start..end - 1];
        // Blank lines are no entries (agents skip them when they read).
        if !text.iter().all(u8::is_ascii_whitespace) {
            lines.push(Line {
                start: base + start as u64,
                end: base + end as u64,
                text: text.to_vec(),
            });
        }
        start = end;
    }
    lines
}

/// Writes `data` to `path`, which must not exist: a temp file in the same
/// directory, synced, then linked into place without replacing anything.
pub fn write_new(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("{} has no directory", path.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".ckpt-fork-")
        .tempfile_in(dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    tmp.write_all(data)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", tmp.path().display()))?;
    // The agents write their transcripts owner-only; so is the fork.
    tmp.persist_noclobber(path)
        .map_err(|e| e.error)
        .with_context(|| format!("creating {}", path.display()))?;
    Ok(())
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
        assert_eq!((all.lines[2].start, all.lines[2].end), (18, 26));
        let tail = read_tail(&p, 15).unwrap();
        assert_eq!(tail.lines.len(), 1, "{:?}", tail.lines);
        assert_eq!(tail.lines[0].parse().unwrap()["c"], 3);
        assert_eq!(tail.complete_end, 26);
        let whole = read_tail(&p, 1 << 20).unwrap();
        assert_eq!(whole.lines.len(), 3);
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
