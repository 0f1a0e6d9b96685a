//! The original's branch and remote, as a preview records them and a push
//! uses them. A remote URL is never printed as it is: one that holds
//! credentials is refused, and what is shown or stored has any user info
//! taken out ([`shown`]); a stored URL is compared by its SHA-256.

use std::path::Path;

use ckpt_core::{Hash, HashOf};
use serde::{Deserialize, Serialize};

use super::git;

/// A remote, as recorded: its name, its URL without user info, and the
/// SHA-256 of the URL as git has it (fetch and push URLs).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct RemoteId {
    pub name: String,
    pub url: String,
    pub url_sha256: String,
}

/// The branch HEAD is on (`None`: detached, or no repository).
pub fn branch(original: &Path) -> Option<String> {
    git::text(original, &["symbolic-ref", "-q", "--short", "HEAD"])
        .ok()
        .filter(|b| !b.is_empty())
}

/// The remote a push of `branch` goes to: its upstream's, else `origin`,
/// else the only one.
pub fn default_remote(original: &Path, branch: Option<&str>) -> Option<String> {
    if let Some(b) = branch {
        if let Ok(r) = git::text(
            original,
            &["config", "--get", &format!("branch.{b}.remote")],
        ) {
            if !r.is_empty() && r != "." {
                return Some(r);
            }
        }
    }
    let all = git::text(original, &["remote"]).ok()?;
    let names: Vec<&str> = all.lines().collect();
    if names.contains(&"origin") {
        return Some("origin".into());
    }
    match names.as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    }
}

/// The fetch and push URLs of `name` (git's `insteadOf` rules applied), or
/// an error naming the remote (never its URL).
pub fn urls(original: &Path, name: &str) -> anyhow::Result<Vec<String>> {
    let fetch = git::text(original, &["remote", "get-url", "--", name])
        .map_err(|_| anyhow::anyhow!("{} has no remote named '{name}'", original.display()))?;
    let push =
        git::text(original, &["remote", "get-url", "--push", "--", name]).unwrap_or_default();
    let mut all: Vec<String> = fetch
        .lines()
        .chain(push.lines())
        .map(str::to_string)
        .collect();
    all.dedup();
    Ok(all)
}

/// The recorded identity of remote `name`.
pub fn id(original: &Path, name: &str) -> anyhow::Result<RemoteId> {
    let urls = urls(original, name)?;
    Ok(RemoteId {
        name: name.to_string(),
        url: urls.first().map(|u| shown(u)).unwrap_or_default(),
        url_sha256: Hash::of(urls.join("\n").as_bytes()).to_hex(),
    })
}

/// A URL that carries a password or token: `scheme://user:secret@host`,
/// or any user info in an http(s) URL (`https://TOKEN@github.com/…`).
pub fn has_credentials(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        // scp-like `user@host:path`: a user name, never a secret.
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let Some((userinfo, _)) = authority.rsplit_once('@') else {
        return false;
    };
    userinfo.contains(':')
        || scheme.eq_ignore_ascii_case("http")
        || scheme.eq_ignore_ascii_case("https")
}

/// `url` with any user info of a `scheme://` URL replaced by `***`.
pub fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}{}", &rest[end..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_found_and_never_shown() {
        for (url, creds) in [
            ("https://user:tok3n@example.com/r.git", true),
            ("https://ghp_abc@github.com/o/r", true),
            ("ssh://git:pw@host/r", true),
            ("https://example.com/r.git", false),
            ("ssh://git@host/r.git", false),
            ("git@github.com:o/r.git", false),
            ("/srv/git/r.git", false),
            ("file:///srv/r.git", false),
        ] {
            assert_eq!(has_credentials(url), creds, "{url}");
            assert!(
                !shown(url).contains("tok3n") && !shown(url).contains("ghp_abc"),
                "{url}"
            );
        }
        assert_eq!(
            shown("https://user:tok3n@example.com/r.git"),
            "https://***@example.com/r.git"
        );
        assert_eq!(shown("/srv/r.git"), "/srv/r.git");
    }
}
