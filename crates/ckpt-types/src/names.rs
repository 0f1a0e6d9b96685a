//! Which names ckpt never captures or restores, and every name ckpt itself
//! writes into a project, in one place.

/// Never captured, never read, never configurable back in: a path with a
/// component named so is refused as a [`crate::RelPath`].
pub const GIT_DIR: &[u8] = b".git";

/// Barrier cookies left at a project's root by older daemons start with
/// this: never captured, never restored.
pub const COOKIE_PREFIX: &str = ".ckpt-cookie-";

/// Temp files ckpt writes while restoring start with this; never captured.
pub const TEMP_PREFIX: &str = ".ckpt-tmp-";

/// Temp files of the client's atomic writes (`ckpt_core::atomic`: hook
/// installs, work copies, transcripts) start with this: never captured,
/// and apart from [`TEMP_PREFIX`], whose leftovers a recovering rewind
/// removes, so a write in flight is never taken away.
pub const WRITE_TEMP_PREFIX: &str = ".ckpt-write-";

/// The backup `ckptctl hooks` keeps beside an agent's config file ends
/// with this. Unlike the prefixes above it is captured: it is the user's
/// own file, kept for them.
pub const BACKUP_SUFFIX: &str = ".ckpt-backup";

/// The project's ignore file (gitignore syntax), read from the root only.
pub const IGNORE_FILE: &str = ".ckptignore";

/// A directory holding this file is a cache or build output
/// (<https://bford.info/cachedir/>; Cargo tags `target/` with it): excluded.
pub const CACHE_TAG: &str = "CACHEDIR.TAG";

/// Whether a file name is one of ckpt's own (cookie or temp file), which are
/// never captured or restored. Cheap enough for the event path.
pub fn is_internal_name(name: &[u8]) -> bool {
    [COOKIE_PREFIX, TEMP_PREFIX, WRITE_TEMP_PREFIX]
        .iter()
        .any(|p| name.starts_with(p.as_bytes()))
}

/// Directory names never descended into, wherever they are: dependency and
/// build output that tools regenerate. `.git` is handled separately and can
/// never be configured back in. Build directories with a common name (Cargo's
/// `target`) are recognized by their [`CACHE_TAG`] instead, so a source
/// folder that happens to be called `target` is still captured.
pub const DEFAULT_EXCLUDES: &[&str] = &[
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".gradle",
    ".next",
    ".nuxt",
    ".turbo",
    ".parcel-cache",
    ".cache",
    ".hg",
    ".svn",
    ".jj",
];

/// Whether the rules every project shares exclude `path` (relative, as
/// bytes): `.git` at any depth, and anything below a [`DEFAULT_EXCLUDES`]
/// directory. It needs no project, so the daemon can drop events with it
/// without taking a project's lock; a path *named* like an excluded
/// directory, and everything else, is left to the project's own rules.
pub fn is_excluded_by_default(path: &[u8]) -> bool {
    let mut names = path.split(|&b| b == b'/').peekable();
    while let Some(name) = names.next() {
        if name == GIT_DIR {
            return true;
        }
        if names.peek().is_some() && DEFAULT_EXCLUDES.iter().any(|e| e.as_bytes() == name) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ckpt_s_own_files_are_internal_and_its_backups_are_not() {
        for name in [".ckpt-cookie-7", ".ckpt-tmp-1-2", ".ckpt-write-a1b2"] {
            assert!(is_internal_name(name.as_bytes()), "{name}");
        }
        for name in [
            "settings.json.ckpt-backup",
            ".ckptignore",
            ".ckpt",
            "a.ckpt-tmp-1",
        ] {
            assert!(!is_internal_name(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn default_rules_exclude_git_anywhere_and_what_is_below_excluded_dirs() {
        for excluded in [
            ".git",
            ".git/HEAD",
            "sub/.git",
            "node_modules/x.js",
            "a/.venv/b",
        ] {
            assert!(is_excluded_by_default(excluded.as_bytes()), "{excluded}");
        }
        for kept in [
            "src/a.rs",
            "node_modules",
            "a/.venv",
            ".gitignore",
            "node_modules2/x",
        ] {
            assert!(!is_excluded_by_default(kept.as_bytes()), "{kept}");
        }
    }
}
