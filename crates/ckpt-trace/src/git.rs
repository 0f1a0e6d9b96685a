//! The user's git, run as a process: ckpt reads commits and notes only
//! through it and never opens `.git` itself. The one write is `git notes
//! add`, on `ckptctl trace notes write` alone.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

/// The notes ref git-ai's standard names (authorship/3.0.0, section 1.1).
pub const NOTES_REF: &str = "ai";

/// A repository: git runs in `top`, its top-level directory.
pub struct Repo {
    pub top: PathBuf,
}

impl Repo {
    /// The repository holding `dir`.
    pub fn containing(dir: &Path) -> anyhow::Result<Repo> {
        let out = run(dir, &["rev-parse", "--show-toplevel"], None)
            .with_context(|| format!("{} is not in a git repository", dir.display()))?;
        let top = PathBuf::from(text(out)?.trim_end_matches('\n'));
        Ok(Repo { top })
    }

    fn git(&self, args: &[&str]) -> anyhow::Result<Vec<u8>> {
        run(&self.top, args, None)
    }

    /// `path` (absolute) relative to the top, as git names it in a tree.
    pub fn relative(&self, path: &Path) -> anyhow::Result<String> {
        let canon = |p: &Path| {
            p.canonicalize()
                .with_context(|| format!("resolving {}", p.display()))
        };
        let top = canon(&self.top)?;
        // The file may be gone from the work tree: resolve its directory.
        let (dir, name) = match (path.parent(), path.file_name()) {
            (Some(d), Some(n)) => (canon(d)?, n),
            _ => bail!("{} names no file", path.display()),
        };
        let rel = dir.join(name);
        let rel = rel
            .strip_prefix(&top)
            .with_context(|| format!("{} is outside {}", path.display(), top.display()))?;
        rel.to_str()
            .map(str::to_owned)
            .with_context(|| format!("{} is not UTF-8", rel.display()))
    }

    /// The full commit id `rev` names.
    pub fn commit(&self, rev: &str) -> anyhow::Result<String> {
        let spec = format!("{rev}^{{commit}}");
        let out = self
            .git(&["rev-parse", "--verify", "--quiet", &spec])
            .with_context(|| format!("{rev} names no commit"))?;
        Ok(text(out)?.trim().to_owned())
    }

    /// The end of the second `commit` was made in (git keeps whole
    /// seconds of its committer time), in ns: a turn started later cannot
    /// have written it.
    pub fn made_by_ns(&self, commit: &str) -> anyhow::Result<i64> {
        let out = text(self.git(&["show", "-s", "--format=%ct", commit])?)?;
        let secs: i64 = out
            .trim()
            .parse()
            .with_context(|| format!("git gave {out:?} as the time of {commit}"))?;
        Ok(secs.saturating_add(1).saturating_mul(1_000_000_000) - 1)
    }

    /// The text of `path` (relative to the top) at `commit`; `None` when it
    /// has none there or is not UTF-8 text.
    pub fn show(&self, commit: &str, path: &str) -> anyhow::Result<Option<String>> {
        let spec = format!("{commit}:{path}");
        match run(&self.top, &["show", &spec], None) {
            Ok(bytes) if !bytes.contains(&0) => Ok(String::from_utf8(bytes).ok()),
            Ok(_) => Ok(None),
            Err(e) => Err(e.context(format!("{path} is not in {commit}"))),
        }
    }

    /// The commits of `range` (`A..B`, or one revision and its ancestors),
    /// oldest first.
    pub fn rev_list(&self, range: &str) -> anyhow::Result<Vec<String>> {
        let out = text(self.git(&["rev-list", "--reverse", range, "--"])?)?;
        Ok(out.lines().map(str::to_owned).collect())
    }

    /// The files `commit` added or modified, relative to the top.
    pub fn changed_files(&self, commit: &str) -> anyhow::Result<Vec<String>> {
        let out = self.git(&[
            "diff-tree",
            "--no-commit-id",
            "--name-only",
            "--diff-filter=AMRC",
            "-r",
            "--root",
            "-z",
            commit,
        ])?;
        out.split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8(p.to_vec()).context("a path git gave is not UTF-8"))
            .collect()
    }

    /// Attaches `note` to `commit` under refs/notes/ai, replacing one there.
    pub fn add_note(&self, commit: &str, note: &str) -> anyhow::Result<()> {
        let ref_arg = format!("--ref={NOTES_REF}");
        run(
            &self.top,
            &["notes", &ref_arg, "add", "-f", "-F", "-", commit],
            Some(note.as_bytes()),
        )
        .map(drop)
        .with_context(|| format!("writing the note of {commit}"))
    }

    /// The note of `commit` under refs/notes/ai, if it has one.
    pub fn note(&self, commit: &str) -> anyhow::Result<Option<String>> {
        let ref_arg = format!("--ref={NOTES_REF}");
        // `git notes list C` exits 1 with nothing when C has no note.
        if run(&self.top, &["notes", &ref_arg, "list", commit], None).is_err() {
            return Ok(None);
        }
        let out = self.git(&["notes", &ref_arg, "show", commit])?;
        Ok(Some(text(out)?))
    }

    /// For each line of `path` at `rev`: the commit that last changed it
    /// and the line's number and path there (`git blame`).
    pub fn blame(&self, rev: &str, path: &str) -> anyhow::Result<Vec<BlamedLine>> {
        let out = text(self.git(&["blame", "--line-porcelain", rev, "--", path])?)?;
        parse_line_porcelain(&out)
    }
}

/// One line as `git blame --line-porcelain` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlamedLine {
    pub commit: String,
    /// 1-based, in `commit`'s version of `path`.
    pub orig_line: u64,
    pub path: String,
    pub text: String,
}

fn parse_line_porcelain(out: &str) -> anyhow::Result<Vec<BlamedLine>> {
    let mut lines = Vec::new();
    let mut head: Option<(String, u64)> = None;
    let mut path = String::new();
    for l in out.lines() {
        if let Some(content) = l.strip_prefix('\t') {
            let (commit, orig_line) = head.take().context("git blame: a line without a header")?;
            lines.push(BlamedLine {
                commit,
                orig_line,
                path: std::mem::take(&mut path),
                text: content.to_owned(),
            });
        } else if head.is_none() {
            let mut it = l.split(' ');
            let (Some(commit), Some(orig)) = (it.next(), it.next()) else {
                bail!("git blame: unexpected header {l:?}");
            };
            head = Some((commit.to_owned(), orig.parse()?));
        } else if let Some(p) = l.strip_prefix("filename ") {
            path = p.to_owned();
        }
    }
    Ok(lines)
}

fn text(out: Vec<u8>) -> anyhow::Result<String> {
    String::from_utf8(out).context("git printed what is not UTF-8")
}

/// Runs git in `dir`; its stdout, or an error with its stderr.
fn run(dir: &Path, args: &[&str], input: Option<&[u8]>) -> anyhow::Result<Vec<u8>> {
    let mut cmd = Command::new("git");
    cmd.args(args)
        .current_dir(dir)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().context("running git (is it installed?)")?;
    if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(data).context("writing to git")?;
    }
    let out = child.wait_with_output().context("waiting for git")?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_porcelain_gives_each_lines_commit_and_place() {
        let out = "\
aaaa 3 1 2
author A
filename old.txt
\tfirst
aaaa 4 2
author A
filename old.txt
\tsecond
bbbb 1 3 1
author B
boundary
filename f.txt
\t
";
        let got = parse_line_porcelain(out).unwrap();
        let short: Vec<(&str, u64, &str, &str)> = got
            .iter()
            .map(|l| {
                (
                    l.commit.as_str(),
                    l.orig_line,
                    l.path.as_str(),
                    l.text.as_str(),
                )
            })
            .collect();
        assert_eq!(
            short,
            [
                ("aaaa", 3, "old.txt", "first"),
                ("aaaa", 4, "old.txt", "second"),
                ("bbbb", 1, "f.txt", "")
            ]
        );
    }
}
