//! A git-compatible patch of one path, from its pre-image to its post-image:
//! what `git diff --binary --full-index` would print, so `git apply` takes it.
//!
//! Git knows regular files (mode 100644 or 100755) and symlinks (120000, the
//! target as content); directories exist only through their files. A change
//! of type is a deletion followed by a creation, as git writes it.

use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp};

use super::binary;
use crate::diff::is_binary;

/// One side of a path as git sees it.
pub(crate) struct Blob<'a> {
    /// 0o100644, 0o100755 or 0o120000.
    pub mode: u32,
    pub data: &'a [u8],
}

/// The git mode of a regular file with these permission bits.
pub(crate) fn file_mode(perm: u32) -> u32 {
    if perm & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    }
}

pub(crate) const SYMLINK_MODE: u32 = 0o120000;

/// A diff slower than this gives a correct but longer answer.
const DIFF_DEADLINE: Duration = Duration::from_secs(10);

/// Lines of context around each change, as git.
const CONTEXT: usize = 3;

/// Git's object name of a blob: SHA-1 of `blob <len>\0` and the content.
pub(crate) fn git_oid(data: Option<&[u8]>) -> String {
    let Some(data) = data else {
        return "0".repeat(40);
    };
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(format!("blob {}\0", data.len()).as_bytes());
    ctx.update(data);
    hex::encode(ctx.finish())
}

/// `prefix` and `path` as git prints a name: in double quotes with C escapes
/// when it holds a control character, a quote, a backslash or a non-ASCII
/// byte (git's `quote_c_style` with `core.quotePath` on).
pub(crate) fn quoted(prefix: &str, path: &[u8]) -> String {
    let mut name = prefix.as_bytes().to_vec();
    name.extend_from_slice(path);
    let needs = name
        .iter()
        .any(|&b| !(0x20..0x7f).contains(&b) || b == b'"' || b == b'\\');
    if !needs {
        return String::from_utf8(name).expect("checked to be printable ASCII");
    }
    let mut s = String::from("\"");
    for &b in &name {
        match b {
            b'\x07' => s.push_str("\\a"),
            b'\x08' => s.push_str("\\b"),
            b'\t' => s.push_str("\\t"),
            b'\n' => s.push_str("\\n"),
            b'\x0b' => s.push_str("\\v"),
            b'\x0c' => s.push_str("\\f"),
            b'\r' => s.push_str("\\r"),
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b if !(0x20..0x7f).contains(&b) => s.push_str(&format!("\\{b:03o}")),
            b => s.push(b as char),
        }
    }
    s.push('"');
    s
}

/// Appends the patch of `path` from `pre` to `post` (`None`: absent);
/// nothing when git would see no change.
pub(crate) fn write(out: &mut Vec<u8>, path: &[u8], pre: Option<Blob>, post: Option<Blob>) {
    match (pre, post) {
        (None, None) => {}
        (Some(a), Some(b)) if (a.mode == SYMLINK_MODE) != (b.mode == SYMLINK_MODE) => {
            section(out, path, Some(a), None);
            section(out, path, None, Some(b));
        }
        (Some(a), Some(b)) if a.mode == b.mode && a.data == b.data => {}
        (a, b) => section(out, path, a, b),
    }
}

fn section(out: &mut Vec<u8>, path: &[u8], pre: Option<Blob>, post: Option<Blob>) {
    let (a, b) = (quoted("a/", path), quoted("b/", path));
    out.extend_from_slice(format!("diff --git {a} {b}\n").as_bytes());
    match (&pre, &post) {
        (None, Some(n)) => {
            out.extend_from_slice(format!("new file mode {:06o}\n", n.mode).as_bytes())
        }
        (Some(o), None) => {
            out.extend_from_slice(format!("deleted file mode {:06o}\n", o.mode).as_bytes())
        }
        (Some(o), Some(n)) if o.mode != n.mode => out.extend_from_slice(
            format!("old mode {:06o}\nnew mode {:06o}\n", o.mode, n.mode).as_bytes(),
        ),
        _ => {}
    }
    let old = pre.as_ref().map(|b| b.data);
    let new = post.as_ref().map(|b| b.data);
    if pre.is_some() && post.is_some() && old == new {
        return; // a mode change alone
    }
    out.extend_from_slice(format!("index {}..{}", git_oid(old), git_oid(new)).as_bytes());
    match (&pre, &post) {
        (Some(o), Some(n)) if o.mode == n.mode => {
            out.extend_from_slice(format!(" {:06o}", o.mode).as_bytes())
        }
        _ => {}
    }
    out.push(b'\n');
    let (old, new) = (old.unwrap_or_default(), new.unwrap_or_default());
    if old.is_empty() && new.is_empty() {
        return; // a new or deleted empty file: no hunk
    }
    if is_binary(old) || is_binary(new) {
        binary::binary_patch(out, old, new);
        return;
    }
    let name_line = |prefix: &str, name: &str, present: bool| -> String {
        if !present {
            return format!("{prefix} /dev/null\n");
        }
        // git marks a name holding a space with a tab after it.
        let tab = if path.contains(&b' ') { "\t" } else { "" };
        format!("{prefix} {name}{tab}\n")
    };
    out.extend_from_slice(name_line("---", &a, pre.is_some()).as_bytes());
    out.extend_from_slice(name_line("+++", &b, post.is_some()).as_bytes());
    hunks(out, old, new);
}

/// Lines as git counts them: each ends after a `\n`, the last may not.
fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&b| b == b'\n').collect()
}

/// Unified hunks with three lines of context.
fn hunks(out: &mut Vec<u8>, old: &[u8], new: &[u8]) {
    let (old, new) = (lines(old), lines(new));
    let deadline = Instant::now() + DIFF_DEADLINE;
    let ops = similar::capture_diff_slices_deadline(Algorithm::Myers, &old, &new, Some(deadline));
    for group in similar::group_diff_ops(ops, CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (os, oe) = (first.old_range().start, last.old_range().end);
        let (ns, ne) = (first.new_range().start, last.new_range().end);
        let start = |s: usize, len: usize| if len == 0 { s } else { s + 1 };
        out.extend_from_slice(
            format!(
                "@@ -{},{} +{},{} @@\n",
                start(os, oe - os),
                oe - os,
                start(ns, ne - ns),
                ne - ns
            )
            .as_bytes(),
        );
        for op in &group {
            let (o, n) = (op.old_range(), op.new_range());
            match op {
                DiffOp::Equal { .. } => old[o].iter().for_each(|l| line(out, b' ', l)),
                DiffOp::Delete { .. } => old[o].iter().for_each(|l| line(out, b'-', l)),
                DiffOp::Insert { .. } => new[n].iter().for_each(|l| line(out, b'+', l)),
                DiffOp::Replace { .. } => {
                    old[o].iter().for_each(|l| line(out, b'-', l));
                    new[n].iter().for_each(|l| line(out, b'+', l));
                }
            }
        }
    }
}

fn line(out: &mut Vec<u8>, mark: u8, text: &[u8]) {
    out.push(mark);
    out.extend_from_slice(text);
    if !text.ends_with(b"\n") {
        out.extend_from_slice(b"\n\\ No newline at end of file\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(pre: Option<Blob>, post: Option<Blob>) -> String {
        let mut out = Vec::new();
        write(&mut out, b"f", pre, post);
        String::from_utf8(out).expect("a text patch")
    }

    fn file(data: &[u8]) -> Option<Blob<'_>> {
        Some(Blob {
            mode: 0o100644,
            data,
        })
    }

    #[test]
    fn blob_ids_are_gits() {
        assert_eq!(
            git_oid(Some(b"")),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            git_oid(Some(b"hello\n")),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }

    #[test]
    fn names_with_odd_bytes_are_quoted_as_git_does() {
        assert_eq!(quoted("a/", b"plain name"), "a/plain name");
        assert_eq!(quoted("a/", "é".as_bytes()), "\"a/\\303\\251\"");
        assert_eq!(quoted("b/", b"t\"ab\t"), "\"b/t\\\"ab\\t\"");
    }

    #[test]
    fn a_new_empty_file_has_no_hunk() {
        assert_eq!(
            text(None, file(b"")),
            "diff --git a/f b/f\nnew file mode 100644\n\
             index 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n"
        );
    }

    #[test]
    fn a_mode_change_alone_is_two_lines() {
        let post = Some(Blob {
            mode: 0o100755,
            data: b"x\n",
        });
        assert_eq!(
            text(file(b"x\n"), post),
            "diff --git a/f b/f\nold mode 100644\nnew mode 100755\n"
        );
    }

    #[test]
    fn a_missing_final_newline_is_marked() {
        let t = text(file(b"a\nb"), file(b"a\nc\n"));
        assert!(
            t.ends_with("@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"),
            "{t}"
        );
    }

    #[test]
    fn a_lone_carriage_return_does_not_split_a_line() {
        let t = text(file(b"a\rb\n"), file(b"a\rc\n"));
        assert!(t.ends_with("@@ -1,1 +1,1 @@\n-a\rb\n+a\rc\n"), "{t}");
    }

    #[test]
    fn a_type_change_is_a_deletion_then_a_creation() {
        let link = Some(Blob {
            mode: SYMLINK_MODE,
            data: b"target",
        });
        let t = text(file(b"x\n"), link);
        let deleted = t.find("deleted file mode 100644").expect("a deletion");
        let created = t.find("new file mode 120000").expect("a creation");
        assert!(deleted < created, "{t}");
    }
}
