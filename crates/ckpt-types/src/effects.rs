//! What a turn did that a rewind cannot undo (commands with effects
//! outside the tree), and how complete its capture is: both as `show`,
//! `log` and a rewind's plan carry them.

use serde::{Deserialize, Serialize};

use crate::RelPath;

/// The kinds of effect outside the tree (the rules: `ckpt-core`'s
/// `effects.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectCategory {
    /// `git push`, force or not: the remote's refs.
    Push,
    /// A package registry (npm, crates.io, PyPI, RubyGems…).
    Publish,
    /// An HTTP write (POST, PUT, an upload), a forge's API.
    Network,
    /// Another machine: `ssh HOST CMD`, `scp`/`rsync` to a remote.
    Remote,
    /// A database server or a database file outside the project.
    Database,
    /// Containers and images (`docker run`, `docker push`…).
    Container,
    /// A cluster (`kubectl apply`, `helm upgrade`…).
    Cluster,
    /// Cloud infrastructure (`terraform apply`, `aws s3 cp`…).
    Infra,
    /// The machine's own state: system packages, services, global installs.
    System,
    /// A write to a path outside the project root.
    OutsideWrite,
    /// The user's git repository (HEAD, index, stash, refs), which ckpt
    /// never reads or writes.
    GitState,
}

impl EffectCategory {
    /// As the wire spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            EffectCategory::Push => "push",
            EffectCategory::Publish => "publish",
            EffectCategory::Network => "network",
            EffectCategory::Remote => "remote",
            EffectCategory::Database => "database",
            EffectCategory::Container => "container",
            EffectCategory::Cluster => "cluster",
            EffectCategory::Infra => "infra",
            EffectCategory::System => "system",
            EffectCategory::OutsideWrite => "outside_write",
            EffectCategory::GitState => "git_state",
        }
    }
}

/// A command a turn's tool call ran whose effect a rewind does not undo.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effect {
    pub turn: i64,
    /// The command as the agent's hook gave it.
    pub command: String,
    pub category: EffectCategory,
    /// The rule that matched (its name in the rules table).
    pub rule: String,
    /// Why a rewind does not undo it, in a line.
    pub reason: String,
}

/// How complete a turn's capture is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capture {
    /// Every change the turn made is captured, as events told them.
    #[default]
    Complete,
    /// Every change is captured, but events were lost (a queue overflow)
    /// and a full rescan found them.
    Rescanned,
    /// Some content could not be captured: `gaps` says what and why.
    Partial,
}

/// Why part of a turn's capture is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GapKind {
    /// The watch limit: the tree is watched in part, changes are found by
    /// full scans at turn boundaries.
    WatchLimit,
    /// A file over the size cap (`capture.max_file_mib`).
    SizeCap,
    /// A file ckpt could not read.
    Unreadable,
    /// Capturing changes failed.
    CaptureFailed,
    /// The disk was full.
    DiskFull,
}

impl GapKind {
    pub const ALL: [GapKind; 5] = [
        GapKind::WatchLimit,
        GapKind::SizeCap,
        GapKind::Unreadable,
        GapKind::CaptureFailed,
        GapKind::DiskFull,
    ];

    /// As the wire and the store (`turn_capture.kind`) spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            GapKind::WatchLimit => "watch_limit",
            GapKind::SizeCap => "size_cap",
            GapKind::Unreadable => "unreadable",
            GapKind::CaptureFailed => "capture_failed",
            GapKind::DiskFull => "disk_full",
        }
    }

    pub fn parse(s: &str) -> Option<GapKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One gap in a turn's capture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    pub kind: GapKind,
    /// The path, for a gap of one file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<RelPath>,
    pub detail: String,
}

/// A turn's capture: complete, complete after a rescan, or partial and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Integrity {
    pub capture: Capture,
    /// Full rescans after lost events while the turn was open.
    #[serde(default)]
    pub rescans: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<Gap>,
}

impl Integrity {
    /// From the rescans and gaps found: partial if any gap.
    pub fn of(rescans: u32, mut gaps: Vec<Gap>) -> Integrity {
        gaps.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
        let capture = if !gaps.is_empty() {
            Capture::Partial
        } else if rescans > 0 {
            Capture::Rescanned
        } else {
            Capture::Complete
        };
        Integrity {
            capture,
            rescans,
            gaps,
        }
    }

    pub fn is_partial(&self) -> bool {
        self.capture == Capture::Partial
    }
}

/// A turn whose capture is partial, with what is missing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialCapture {
    pub turn: i64,
    pub gaps: Vec<Gap>,
}

/// What a rewind of some turns cannot do, said before it starts: the
/// effects outside the tree it leaves, and the turns whose capture is
/// partial (what it cannot restore).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caveats {
    #[serde(default)]
    pub effects: Vec<Effect>,
    #[serde(default)]
    pub partial_capture: Vec<PartialCapture>,
}

impl Caveats {
    pub fn is_empty(&self) -> bool {
        self.effects.is_empty() && self.partial_capture.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrity_is_partial_with_a_gap_and_rescanned_without() {
        assert_eq!(Integrity::of(0, vec![]).capture, Capture::Complete);
        assert_eq!(Integrity::of(2, vec![]).capture, Capture::Rescanned);
        let gap = Gap {
            kind: GapKind::SizeCap,
            path: Some(RelPath::new("big").unwrap()),
            detail: "larger than the cap".into(),
        };
        let i = Integrity::of(1, vec![gap]);
        assert!(i.is_partial());
        assert_eq!(
            serde_json::to_string(&i).unwrap(),
            r#"{"capture":"partial","rescans":1,"gaps":[{"kind":"size_cap","path":"big","detail":"larger than the cap"}]}"#
        );
        for k in GapKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
            assert_eq!(GapKind::parse(k.as_str()), Some(k));
        }
        let old: Integrity = serde_json::from_str(r#"{"capture":"complete"}"#).unwrap();
        assert_eq!(old, Integrity::default());
    }
}
