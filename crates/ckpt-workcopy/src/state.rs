//! A work copy's state file, `<data_dir>/workcopies/<name>.json`, and the
//! files kept with it in `<data_dir>/workcopies/<name>/`.
//!
//! The invariant: the state file on disk always names the last action
//! decided. Every change is written durably (temp file, fsync, rename, fsync
//! of the directory) *before* the action it announces, so after a crash the
//! file says what may be half done (`applying`, `committing`) and the next
//! command inspects the original instead of repeating the action blindly.

use std::path::{Path, PathBuf};

use anyhow::Context;
use ckpt_core::atomic::{self, WriteFile};
use serde::{Deserialize, Serialize};

use super::fingerprint::{Entry, Manifest};

/// Version of the state file's layout.
pub const STATE_VERSION: u32 = 1;

/// `ready → applying → applied → committing → committed → pushing →
/// pushed`. `applying`, `committing` and `pushing` are intents: written
/// before the action, replaced by its outcome once known (after a crash,
/// by `workcopy status` inspecting the original, or the remote's ref).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Ready,
    Applying,
    Applied,
    Committing,
    Committed,
    Pushing,
    Pushed,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Ready => "ready",
            Phase::Applying => "applying",
            Phase::Applied => "applied",
            Phase::Committing => "committing",
            Phase::Committed => "committed",
            Phase::Pushing => "pushing",
            Phase::Pushed => "pushed",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BaseKind {
    /// The original's HEAD commit (a clean tree).
    #[value(name = "HEAD", alias = "head")]
    Head,
    /// The original's tree as it is now, uncommitted and ignored files too.
    Current,
}

impl BaseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BaseKind::Head => "HEAD",
            BaseKind::Current => "current",
        }
    }
}

/// One `workcopy run`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct RunRecord {
    pub command: Vec<String>,
    /// Seconds since the epoch.
    pub started: u64,
    pub duration_ms: u64,
    /// The exit code, when the program exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub interrupted: bool,
    pub log: PathBuf,
    /// The timeout it ran under (`None`: none).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl RunRecord {
    /// How it ended, in words.
    pub fn outcome(&self) -> String {
        if self.timed_out {
            format!(
                "timed out after {:.1}s, killed",
                self.duration_ms as f64 / 1000.0
            )
        } else if self.interrupted {
            "interrupted, killed".into()
        } else if let Some(c) = self.exit_code {
            format!("exit {c}")
        } else {
            format!("signal {}", self.signal.unwrap_or(0))
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct WorkCopy {
    pub version: u32,
    pub name: String,
    /// The project the copy was made from.
    pub original: PathBuf,
    /// The copy's root.
    pub copy: PathBuf,
    pub base: BaseKind,
    /// The original's HEAD when the copy was made (`None` outside git).
    pub base_commit: Option<String>,
    /// The fingerprint of every path of the copy as made.
    pub base_fingerprint: String,
    pub state: Phase,
    /// Seconds since the epoch.
    pub created: u64,
    #[serde(default)]
    pub runs: Vec<RunRecord>,
    /// The apply under way or done (`applying` and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<ApplyRecord>,
    /// The commit under way or done (`committing` and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<CommitRecord>,
    /// The last preview: what it showed, and its token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<crate::contract::PreviewRecord>,
    /// The push under way or done (`pushing` and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushRecord>,
    /// Files of a `--base current` original not copied, and why (ckpt does
    /// not capture them, so an apply could not be rewound).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<(String, String)>,
}

/// One path an apply writes into the original.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct AppliedPath {
    pub path: String,
    /// What the original held before the apply (`None`: nothing).
    pub before: Option<Entry>,
    /// What the apply writes: the copy's entry.
    pub after: Option<Entry>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ApplyRecord {
    /// The session of the apply's turn in the original: how that turn is
    /// found again after a crash.
    pub session: String,
    pub paths: Vec<AppliedPath>,
    /// The copy's fingerprint when applied.
    pub copy_fingerprint: String,
    /// The original's HEAD when the apply was decided.
    pub head: Option<String>,
    /// The turn the apply made (`applied` and later).
    pub turn: Option<i64>,
    /// Seconds since the epoch.
    pub started: u64,
    /// The git tree the apply gives at the changed paths (`None` outside
    /// git): the preview's, or computed from the patch.
    #[serde(default)]
    pub tree: Option<String>,
    /// It had a preview's token (not `--no-preview`).
    #[serde(default)]
    pub previewed: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct CommitRecord {
    pub message: String,
    /// The original's HEAD the commit goes on.
    pub parent: String,
    /// Paths staged and committed.
    pub paths: Vec<String>,
    /// Applied paths left out, with why (ignored by git, a directory).
    pub left_out: Vec<(String, String)>,
    /// The commit made (`committed`).
    pub commit: Option<String>,
    /// Trailers the commit message ends with (`Assisted-by: AGENT:MODEL`,
    /// `Co-authored-by` when configured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trailers: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PushRecord {
    /// The remote's name (its URL is never kept: it may not be shown).
    pub remote: String,
    pub branch: String,
    /// The commit pushed: the work copy's.
    pub commit: String,
    /// The remote's branch before the push (`None`: it did not exist).
    pub before: Option<String>,
}

/// Where work copies are kept: their state under the data dir, the copies
/// themselves beside it (the daemon refuses to watch inside its data dir).
pub struct Store {
    pub data_dir: PathBuf,
    pub dir: PathBuf,
}

impl Store {
    pub fn new(data_dir: &Path) -> Store {
        Store {
            data_dir: data_dir.to_path_buf(),
            dir: data_dir.join("workcopies"),
        }
    }

    /// Where a copy goes without `--path`: `<data dir>-workcopies/<name>`
    /// (`~/.local/share/ckpt-workcopies/NAME` by default).
    pub fn default_copy(&self, name: &str) -> PathBuf {
        let mut dir = self.data_dir.clone().into_os_string();
        dir.push("-workcopies");
        PathBuf::from(dir).join(name)
    }

    pub fn state_file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    /// The directory of the files kept with a work copy (base manifest and
    /// objects, run logs).
    pub fn files(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn manifest_file(&self, name: &str) -> PathBuf {
        self.files(name).join("base.json")
    }

    /// Content of the base's files by SHA-256, for `--base current` (the
    /// base of a `--base HEAD` copy is in its own git objects).
    pub fn objects(&self, name: &str) -> PathBuf {
        self.files(name).join("base-objects")
    }

    pub fn load(&self, name: &str) -> anyhow::Result<WorkCopy> {
        let path = self.state_file(name);
        let text = std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                anyhow::anyhow!("no work copy named '{name}' (`ckptctl workcopy list`)")
            }
            _ => anyhow::Error::new(e).context(format!("reading {}", path.display())),
        })?;
        let wc: WorkCopy =
            serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))?;
        anyhow::ensure!(
            wc.version <= STATE_VERSION,
            "{} was written by a newer ckptctl (version {})",
            path.display(),
            wc.version
        );
        Ok(wc)
    }

    pub fn save(&self, wc: &WorkCopy) -> anyhow::Result<()> {
        let text = serde_json::to_vec_pretty(wc).context("encoding the work copy's state")?;
        write_file(&self.state_file(&wc.name), &text)
    }

    pub fn load_manifest(&self, name: &str) -> anyhow::Result<Manifest> {
        let path = self.manifest_file(name);
        let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))
    }

    pub fn save_manifest(&self, name: &str, m: &Manifest) -> anyhow::Result<()> {
        let text = serde_json::to_vec(m).context("encoding the base manifest")?;
        write_file(&self.manifest_file(name), &text)
    }

    /// Every work copy, by name.
    pub fn list(&self) -> anyhow::Result<Vec<WorkCopy>> {
        let listing = match std::fs::read_dir(&self.dir) {
            Ok(l) => l,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("listing {}", self.dir.display())),
        };
        let mut out = Vec::new();
        for entry in listing {
            let entry = entry.with_context(|| format!("listing {}", self.dir.display()))?;
            let name = entry.file_name();
            let Some(name) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if valid_name(name).is_ok() {
                out.push(self.load(name)?);
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

/// Names are file names: letters, digits, `.`, `_`, `-`, not starting with `.`.
pub fn valid_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    anyhow::ensure!(
        ok,
        "'{name}' is not a work copy name: use letters, digits, '.', '_' and '-', not a leading '.'"
    );
    Ok(())
}

/// Writes a state file so that a crash leaves the old one or the new one.
fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    atomic::write_file(path, bytes, WriteFile::default())
        .with_context(|| format!("writing {}", path.display()))
}

pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_file_round_trips_and_replaces_atomically() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::new(tmp.path());
        let mut wc = WorkCopy {
            version: STATE_VERSION,
            name: "fix-1".into(),
            original: "/src/app".into(),
            copy: tmp.path().join("workcopies/fix-1/tree"),
            base: BaseKind::Head,
            base_commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            base_fingerprint: "ab".repeat(32),
            state: Phase::Ready,
            created: 1_700_000_000,
            runs: vec![],
            apply: None,
            commit: None,
            preview: None,
            push: None,
            left_out: vec![("big.bin".into(), "over the cap".into())],
        };
        store.save(&wc).unwrap();
        assert_eq!(store.load("fix-1").unwrap(), wc);
        wc.state = Phase::Applying;
        wc.apply = Some(ApplyRecord {
            session: "workcopy:fix-1:1".into(),
            paths: vec![AppliedPath {
                path: "a.txt".into(),
                before: None,
                after: Some(Entry {
                    kind: crate::fingerprint::Kind::File,
                    mode: 0o644,
                    sha256: "cd".repeat(32),
                }),
            }],
            copy_fingerprint: "ef".repeat(32),
            head: None,
            turn: None,
            started: 1_700_000_002,
            tree: None,
            previewed: true,
        });
        wc.runs.push(RunRecord {
            command: vec!["cargo".into(), "test".into()],
            started: 1_700_000_001,
            duration_ms: 12,
            exit_code: Some(0),
            signal: None,
            timed_out: false,
            interrupted: false,
            log: "/tmp/run-1.log".into(),
            timeout_secs: Some(300),
        });
        store.save(&wc).unwrap();
        assert_eq!(store.load("fix-1").unwrap(), wc);
        let text = std::fs::read_to_string(store.state_file("fix-1")).unwrap();
        assert!(text.contains("\"state\": \"applying\""), "{text}");
        assert!(text.contains("\"base\": \"head\""), "{text}");
        // Nothing but the state file is left in the directory.
        let names: Vec<_> = std::fs::read_dir(&store.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["fix-1.json"]);
        assert_eq!(store.list().unwrap(), vec![wc]);
        assert!(store
            .load("nope")
            .unwrap_err()
            .to_string()
            .contains("no work copy"));
    }

    #[test]
    fn names_are_file_names() {
        for ok in ["a", "fix-1", "x.y_z"] {
            valid_name(ok).unwrap();
        }
        for bad in ["", ".x", "a/b", "..", "a b"] {
            assert!(valid_name(bad).is_err(), "{bad}");
        }
    }
}
