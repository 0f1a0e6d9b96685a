//! Fingerprints of a set of path states, recomputable by anyone from the
//! files themselves (`docs/export.md` states the same definition).
//!
//! The SHA-256 (lower-case hex) of, for each path in byte order: the path's
//! bytes, a NUL, then `DELETED` for an absent path, `SKIPPED` for one whose
//! content ckpt did not capture, or else the kind (`file`, `dir`,
//! `symlink`), a NUL, the mode in octal (the permission bits, `st_mode &
//! 0o7777`; always `777` for a symlink), a NUL and the SHA-256 hex of the
//! content (of the target for a symlink, empty for a directory); then a
//! newline.

use crate::state::HashOf;

use crate::relpath::RelPath;
use crate::state::{Entry, EntryKind, Hash, State};

/// The entry of a captured state; `None` for an absent path and for one
/// whose content was not captured.
pub fn entry_of(s: &State) -> Option<Entry> {
    let kind = match s {
        State::File { .. } => EntryKind::File,
        State::Dir { .. } => EntryKind::Dir,
        State::Symlink { .. } => EntryKind::Symlink,
        State::Absent | State::Skipped { .. } => return None,
    };
    Some(Entry {
        kind,
        mode: mode_of(s)?,
        sha256: content_sha256(s)?,
    })
}

/// Whether `s` is exactly `want` (`None`: absent). Content that was not
/// captured matches nothing: it cannot be shown to be as wanted.
pub fn state_holds(s: &State, want: Option<&Entry>) -> bool {
    match s {
        State::Skipped { .. } => false,
        _ => entry_of(s).as_ref() == want,
    }
}

/// The octal mode a fingerprint and a manifest give a state, if it has one.
pub(crate) fn mode_of(s: &State) -> Option<u32> {
    match s {
        State::File { mode, .. } | State::Dir { mode } => Some(mode & 0o7777),
        State::Symlink { .. } => Some(0o777),
        State::Absent | State::Skipped { .. } => None,
    }
}

/// SHA-256 hex of the content: the file's bytes (the blob's name), the
/// link's target, empty for a directory.
pub(crate) fn content_sha256(s: &State) -> Option<String> {
    match s {
        State::File { hash, .. } => Some(hash.to_hex()),
        State::Symlink { target } => Some(Hash::of(target).to_hex()),
        State::Dir { .. } => Some(String::new()),
        State::Absent | State::Skipped { .. } => None,
    }
}

/// The kind's name in fingerprints and manifests.
pub(crate) fn kind_name(s: &State) -> &'static str {
    match s {
        State::Absent => "absent",
        State::File { .. } => "file",
        State::Dir { .. } => "dir",
        State::Symlink { .. } => "symlink",
        State::Skipped { .. } => "skipped",
    }
}

/// One path's line of a fingerprint.
pub enum FingerprintLine<'a> {
    Deleted,
    Skipped,
    Present {
        /// `file`, `dir` or `symlink`.
        kind: &'a str,
        mode: u32,
        /// Hex; empty for a directory.
        sha256: &'a str,
    },
}

/// The fingerprint of `lines`, which must be sorted by path bytes: the one
/// place its text is written (export and work copies both use it).
pub fn fingerprint_lines<'a>(
    lines: impl IntoIterator<Item = (&'a [u8], FingerprintLine<'a>)>,
) -> String {
    let mut text = Vec::new();
    for (path, line) in lines {
        text.extend_from_slice(path);
        text.push(0);
        match line {
            FingerprintLine::Deleted => text.extend_from_slice(b"DELETED"),
            FingerprintLine::Skipped => text.extend_from_slice(b"SKIPPED"),
            FingerprintLine::Present { kind, mode, sha256 } => {
                text.extend_from_slice(kind.as_bytes());
                text.push(0);
                text.extend_from_slice(format!("{mode:o}").as_bytes());
                text.push(0);
                text.extend_from_slice(sha256.as_bytes());
            }
        }
        text.push(b'\n');
    }
    Hash::of(&text).to_hex()
}

/// The fingerprint of `states`, which must be sorted by path bytes (the
/// order `RelPath` compares in).
pub fn fingerprint<'a>(states: impl IntoIterator<Item = (&'a RelPath, &'a State)>) -> String {
    let shas: Vec<(&RelPath, &State, String)> = states
        .into_iter()
        .map(|(p, s)| (p, s, content_sha256(s).unwrap_or_default()))
        .collect();
    fingerprint_lines(shas.iter().map(|(p, s, sha)| {
        let line = match (s, mode_of(s)) {
            (State::Absent, _) => FingerprintLine::Deleted,
            (_, Some(mode)) => FingerprintLine::Present {
                kind: kind_name(s),
                mode,
                sha256: sha,
            },
            (_, None) => FingerprintLine::Skipped,
        };
        (p.as_bytes(), line)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> RelPath {
        RelPath::new(s).expect("a valid relative path")
    }

    #[test]
    fn fingerprint_hashes_the_documented_text() {
        let (a, b, c, d) = (rel("a.txt"), rel("b"), rel("d"), rel("gone"));
        let file = State::File {
            hash: Hash::of(b"hi\n"),
            size: 3,
            mode: 0o100644 & 0o7777,
        };
        let link = State::Symlink {
            target: b"a.txt".to_vec(),
        };
        let dir = State::Dir { mode: 0o755 };
        let states = [(&a, &file), (&b, &link), (&c, &dir), (&d, &State::Absent)];
        let text = format!(
            "a.txt\0file\0644\0{}\nb\0symlink\0777\0{}\nd\0dir\0755\0\ngone\0DELETED\n",
            Hash::of(b"hi\n").to_hex(),
            Hash::of(b"a.txt").to_hex(),
        );
        assert_eq!(fingerprint(states), Hash::of(text.as_bytes()).to_hex());
    }

    #[test]
    fn fingerprint_of_nothing_is_the_empty_hash() {
        assert_eq!(
            fingerprint([]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn fingerprint_changes_with_the_mode_alone() {
        let a = rel("x");
        let s = |mode| State::File {
            hash: Hash::of(b""),
            size: 0,
            mode,
        };
        assert_ne!(
            fingerprint([(&a, &s(0o644))]),
            fingerprint([(&a, &s(0o755))])
        );
    }
}
