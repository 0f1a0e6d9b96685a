//! Git's three-way file merge, through libgit2's `git_merge_file`, whose
//! `xdiff` is git's own: the merge `git merge-file --diff3` makes, byte for
//! byte. The Rust merges tried differ from git on random small files
//! (diffy in 11% of 20,000, gix-merge in 36%; docs/measurements.md), and
//! a user judges a merge by what git would do.

use std::ffi::{c_char, CString};
use std::sync::Once;

use libgit2_sys as raw;

/// `GIT_MERGE_FILE_INPUT_VERSION` and `GIT_MERGE_FILE_OPTIONS_VERSION` of
/// `git2/merge.h` (libgit2-sys does not export them).
const STRUCT_VERSION: u32 = 1;

/// The sides' names, as the conflict markers carry them.
pub struct Labels<'a> {
    pub ours: &'a str,
    pub base: &'a str,
    pub theirs: &'a str,
}

/// The merge of `ours` and `theirs` from `base`, conflicts in diff3 style
/// (`Err`: the text with markers); `None` if libgit2 fails (out of memory,
/// or a side over 2 GiB).
pub fn merge(
    base: &str,
    ours: &str,
    theirs: &str,
    labels: &Labels,
) -> Option<Result<String, String>> {
    static INIT: Once = Once::new();
    // SAFETY: libgit2's allocator and globals are set up once, before any
    // call; it is never shut down.
    INIT.call_once(|| unsafe {
        raw::git_libgit2_init();
    });
    let names = [labels.base, labels.ours, labels.theirs]
        .map(|l| CString::new(l.replace('\0', " ")).expect("no NUL is left in a label"));
    let opts = raw::git_merge_file_options {
        version: STRUCT_VERSION,
        ancestor_label: names[0].as_ptr(),
        our_label: names[1].as_ptr(),
        their_label: names[2].as_ptr(),
        favor: raw::GIT_MERGE_FILE_FAVOR_NORMAL,
        flags: raw::GIT_MERGE_FILE_STYLE_DIFF3,
        marker_size: 0,
    };
    let input = |s: &str| raw::git_merge_file_input {
        version: STRUCT_VERSION,
        ptr: s.as_ptr().cast::<c_char>(),
        size: s.len(),
        path: std::ptr::null(),
        mode: 0,
    };
    let (b, o, t) = (input(base), input(ours), input(theirs));
    // SAFETY: every pointer outlives the call; the result is copied out and
    // freed before it goes out of scope.
    let (text, clean) = unsafe {
        let mut out: raw::git_merge_file_result = std::mem::zeroed();
        if raw::git_merge_file(&mut out, &b, &o, &t, &opts) != 0 {
            return None;
        }
        let bytes = if out.ptr.is_null() {
            Vec::new()
        } else {
            std::slice::from_raw_parts(out.ptr.cast::<u8>(), out.len).to_vec()
        };
        let clean = out.automergeable != 0;
        raw::git_merge_file_result_free(&mut out);
        (bytes, clean)
    };
    // Lines of the three texts, so valid UTF-8.
    let text = String::from_utf8(text).ok()?;
    if clean {
        return Some(Ok(text));
    }
    Some(Err(label_empty_sides(text, [base, ours, theirs], labels)))
}

/// libgit2 names no empty side (it passes git's `xdl_merge` no label for
/// a 0-byte file, where `git merge-file` passes one): its marker lines are
/// bare. They get their label, unless a side holds such a bare line
/// itself (then a marker could not be told from it).
fn label_empty_sides(text: String, [base, ours, theirs]: [&str; 3], labels: &Labels) -> String {
    let bare = [
        ("<<<<<<<", ours, labels.ours),
        ("|||||||", base, labels.base),
        (">>>>>>>", theirs, labels.theirs),
    ];
    let fix: Vec<(&str, &str)> = bare
        .iter()
        .filter(|(_, side, _)| side.is_empty())
        .map(|&(marker, _, label)| (marker, label))
        .collect();
    let held = |marker: &str| {
        [base, ours, theirs]
            .iter()
            .any(|s| s.lines().any(|l| l == marker))
    };
    if fix.is_empty() || fix.iter().any(|(m, _)| held(m)) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        match fix.iter().find(|(m, _)| *m == body) {
            Some((m, label)) => {
                out.push_str(m);
                out.push(' ');
                out.push_str(label);
                out.push_str(&line[body.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use proptest::prelude::*;

    use super::{merge, Labels};

    const L: Labels = Labels {
        ours: "ours",
        base: "original",
        theirs: "theirs",
    };

    fn m(b: &str, o: &str, t: &str) -> Result<String, String> {
        merge(b, o, t, &L).expect("merged")
    }

    /// Repeated lines aligned as git aligns them: the first `a` of ours
    /// replaces `x`, so theirs' `y` after `a` does not touch it.
    #[test]
    fn repeated_lines_merge_as_git_merges_them() {
        assert_eq!(
            m("x\na\nb\n", "a\na\nb\n", "x\na\ny\nb\n"),
            Ok("a\na\ny\nb\n".into())
        );
    }

    /// Each marker is a line of its own, as `git merge-file` writes it,
    /// also after a side's last line without a newline.
    #[test]
    fn conflict_markers_are_lines_of_their_own_when_a_side_has_no_final_newline() {
        assert_eq!(
            m("a\nagent\n", "a\nuser\n", "a\nlast"),
            Err(
                "a\n<<<<<<< ours\nuser\n||||||| original\nagent\n=======\nlast\n>>>>>>> theirs\n"
                    .into()
            )
        );
        assert_eq!(
            m("a\nagent", "a\nuser", "a\nlast"),
            Err(
                "a\n<<<<<<< ours\nuser\n||||||| original\nagent\n=======\nlast\n>>>>>>> theirs\n"
                    .into()
            )
        );
        assert_eq!(
            m("x\nmid\nz", "x\nOURS\nz", "x\nTHEIRS\nz"),
            Err(
                "x\n<<<<<<< ours\nOURS\n||||||| original\nmid\n=======\nTHEIRS\n>>>>>>> theirs\nz"
                    .into()
            )
        );
        assert_eq!(m("a\nb\nc", "A\nb\nc", "a\nb\nC"), Ok("A\nb\nC".into()));
    }

    /// An empty side is named like any other (libgit2 leaves it bare);
    /// a side that holds the bare marker line keeps libgit2's text.
    #[test]
    fn an_empty_side_is_named_in_its_markers() {
        assert_eq!(
            m("b\n", "a\n", ""),
            Err("<<<<<<< ours\na\n||||||| original\nb\n=======\n>>>>>>> theirs\n".into())
        );
        assert_eq!(
            m("x\n", "", "a\nx\n"),
            Err("<<<<<<< ours\n||||||| original\nx\n=======\na\nx\n>>>>>>> theirs\n".into())
        );
        assert_eq!(
            m("b\n", ">>>>>>>\n", ""),
            Err("<<<<<<< ours\n>>>>>>>\n||||||| original\nb\n=======\n>>>>>>>\n".into())
        );
    }

    /// A text of lines from a small alphabet (so sides share and repeat
    /// lines), its last newline sometimes missing.
    fn text() -> impl Strategy<Value = String> {
        (
            prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "x", "y"]), 0..7),
            any::<bool>(),
        )
            .prop_map(|(lines, eol)| {
                let mut s = lines.join("\n");
                if eol && !s.is_empty() {
                    s.push('\n');
                }
                s
            })
    }

    /// `git merge-file -p --diff3`: its text, and whether it merged cleanly.
    fn git_merge_file(base: &str, ours: &str, theirs: &str) -> (String, bool) {
        let dir = tempfile::tempdir().expect("temp dir");
        let write = |name: &str, s: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, s).expect("write side");
            p
        };
        let (b, o, t) = (write("b", base), write("o", ours), write("t", theirs));
        let out = Command::new("git")
            .args([
                "merge-file",
                "-p",
                "--diff3",
                "-L",
                L.ours,
                "-L",
                L.base,
                "-L",
                L.theirs,
            ])
            .args([&o, &b, &t])
            .output()
            .expect("git runs");
        // Exit 0: clean; 1..=127: that many conflicts; above: an error.
        let code = out.status.code().expect("git exits");
        assert!((0..128).contains(&code), "git merge-file failed: {out:?}");
        (String::from_utf8(out.stdout).expect("UTF-8"), code == 0)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The merge is git's: the same text, clean exactly when git's is.
        #[test]
        fn merges_as_git_merge_file_does(base in text(), ours in text(), theirs in text()) {
            let got = m(&base, &ours, &theirs);
            let (want, clean) = git_merge_file(&base, &ours, &theirs);
            prop_assert_eq!(got.is_ok(), clean);
            prop_assert_eq!(got.unwrap_or_else(|e| e), want);
        }
    }
}
