//! A preview is a contract: it records what was shown (the patch's
//! SHA-256, the expected tree) and where it would go (the original's branch
//! and remote), and issues a one-time token that lets one `apply` go ahead
//! within [`PREVIEW_LIFETIME`]. An apply with a changed patch, branch or
//! remote, or an expired or used token, is refused: preview again.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::limits::PREVIEW_LIFETIME;
use super::remote::{self, RemoteId};

/// The last preview of a work copy, kept in its state file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PreviewRecord {
    pub token: String,
    /// Seconds since the epoch.
    pub issued: u64,
    pub patch_sha256: String,
    /// The git tree the apply gives (`None` outside git).
    pub tree: Option<String>,
    #[serde(flatten)]
    pub target: Target,
    /// An apply took it.
    pub used: bool,
}

/// Where an apply goes: the original's branch and its remote.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub branch: Option<String>,
    pub remote: Option<RemoteId>,
}

/// The original's branch and remote now.
pub fn target(original: &Path) -> Target {
    let branch = remote::branch(original);
    let remote = remote::default_remote(original, branch.as_deref())
        .and_then(|name| remote::id(original, &name).ok());
    Target { branch, remote }
}

/// 128 random bits, in hex.
pub fn new_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom for a preview token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// What an apply found, checked against the preview.
pub struct Found<'a> {
    pub patch_sha256: &'a str,
    pub target: &'a Target,
    /// Seconds since the epoch.
    pub now: u64,
}

/// Whether `rec` lets an apply of work copy `name` go ahead with `token`
/// (`None`: the last preview's); the refusal says what changed.
pub fn check(
    name: &str,
    rec: Option<&PreviewRecord>,
    token: Option<&str>,
    found: &Found,
) -> anyhow::Result<()> {
    let again = format!("`ckptctl workcopy preview {name}` again");
    let Some(rec) = rec else {
        anyhow::bail!(
            "work copy '{name}' has not been previewed: `ckptctl workcopy preview {name}` shows \
             what applying changes and gives a token valid {} minutes (or apply with \
             --no-preview to skip that check)",
            PREVIEW_LIFETIME.as_secs() / 60
        );
    };
    if let Some(t) = token {
        anyhow::ensure!(
            t == rec.token,
            "token {t} is not the last preview's of '{name}'; preview with {again}"
        );
    }
    anyhow::ensure!(
        !rec.used,
        "the preview's token was used by an apply already; preview with {again}"
    );
    let age = found.now.saturating_sub(rec.issued);
    anyhow::ensure!(
        age <= PREVIEW_LIFETIME.as_secs(),
        "the preview's token expired ({} minutes old; valid {}); preview with {again}",
        age / 60,
        PREVIEW_LIFETIME.as_secs() / 60
    );
    anyhow::ensure!(
        found.patch_sha256 == rec.patch_sha256,
        "the copy's changes differ from the preview (patch SHA-256 {} then, {} now); preview with {again}",
        &rec.patch_sha256[..12.min(rec.patch_sha256.len())],
        &found.patch_sha256[..12.min(found.patch_sha256.len())]
    );
    let (then, now) = (&rec.target, found.target);
    anyhow::ensure!(
        then.branch == now.branch,
        "the original's branch changed since the preview ({} then, {} now); preview with {again}",
        then.branch.as_deref().unwrap_or("detached HEAD"),
        now.branch.as_deref().unwrap_or("detached HEAD")
    );
    let remote = |r: &Option<RemoteId>| {
        r.as_ref()
            .map_or("none".to_string(), |r| format!("{} ({})", r.name, r.url))
    };
    anyhow::ensure!(
        then.remote == now.remote,
        "the original's remote changed since the preview ({} then, {} now); preview with {again}",
        remote(&then.remote),
        remote(&now.remote)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> PreviewRecord {
        PreviewRecord {
            token: "t1".into(),
            issued: 1000,
            patch_sha256: "aa".repeat(32),
            tree: None,
            target: Target {
                branch: Some("main".into()),
                remote: None,
            },
            used: false,
        }
    }

    #[test]
    fn each_change_since_the_preview_is_refused_and_named() {
        let r = rec();
        let sha = "aa".repeat(32);
        let target = r.target.clone();
        let ok = Found {
            patch_sha256: &sha,
            target: &target,
            now: 1000 + 599,
        };
        check("w", Some(&r), None, &ok).unwrap();
        check("w", Some(&r), Some("t1"), &ok).unwrap();
        let err = |rec: Option<&PreviewRecord>, token: Option<&str>, f: &Found| {
            check("w", rec, token, f).unwrap_err().to_string()
        };
        assert!(err(None, None, &ok).contains("has not been previewed"));
        assert!(err(Some(&r), Some("t2"), &ok).contains("token t2 is not"));
        let used = PreviewRecord {
            used: true,
            ..rec()
        };
        assert!(err(Some(&used), None, &ok).contains("used by an apply"));
        let late = Found {
            now: 1000 + 601,
            ..ok
        };
        assert!(err(Some(&r), None, &late).contains("expired"));
        let other = "bb".repeat(32);
        let changed = Found {
            patch_sha256: &other,
            ..ok
        };
        assert!(err(Some(&r), None, &changed).contains("differ from the preview"));
        let dev = Target {
            branch: Some("dev".into()),
            remote: None,
        };
        let moved = Found { target: &dev, ..ok };
        assert!(err(Some(&r), None, &moved).contains("branch changed"));
    }
}
