//! Reading and replacing an agent's config file: atomically, with a backup
//! of what was there, through a symlink to its target (dotfile managers
//! link these files).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use ckpt_core::atomic::{self, WriteFile};

/// The file's text; None if there is none.
pub fn read(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text; left unchanged", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow::Error::new(e).context(format!("reading {}", path.display()))),
    }
}

/// Where a backup of `path` goes.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(ckpt_core::names::BACKUP_SUFFIX);
    path.with_file_name(name)
}

/// What happens to a file's backup ([`backup_path`]) when it is replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backup {
    /// None written, none removed.
    Untouched,
    /// Install: the file as the user had it, before any of ckpt's pieces,
    /// is kept beside it.
    Write,
    /// Uninstall: the backup went back byte for byte (ckpt's install was
    /// the only change since) and is removed.
    Restored,
    /// Uninstall: the file changed since install, so ckpt's pieces were
    /// taken out of it and the backup of the original stays.
    Kept,
    /// Uninstall: the backup holds ckpt's pieces itself (an older ckpt
    /// backed up on uninstall too): no original, so it is removed.
    Stale,
}

/// Replaces `path`'s content `old` by `new` (None: remove the file),
/// writing `old` to the backup file first, or removing the backup after,
/// as `backup` says.
pub fn replace(
    path: &Path,
    old: Option<&str>,
    new: Option<&str>,
    executable: bool,
    backup: Backup,
) -> anyhow::Result<()> {
    let path = &resolve(path);
    // A file is removed only when nothing but ckpt's own entries was left
    // in it: there is nothing of the user's to back up.
    let Some(new) = new else {
        std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
        if backup == Backup::Stale {
            std::fs::remove_file(backup_path(path))
                .with_context(|| format!("removing the backup of {}", path.display()))?;
        }
        return Ok(());
    };
    if let (Backup::Write, Some(old)) = (backup, old) {
        std::fs::write(backup_path(path), old)
            .with_context(|| format!("backing up {}", path.display()))?;
    }
    let mode = match std::fs::metadata(path) {
        Ok(m) => m.permissions().mode() & 0o7777,
        Err(_) if executable => 0o755,
        Err(_) => 0o644,
    };
    let how = WriteFile {
        mode,
        replace: true,
    };
    atomic::write_file(path, new.as_bytes(), how)
        .with_context(|| format!("replacing {}", path.display()))?;
    if matches!(backup, Backup::Restored | Backup::Stale) {
        // It is back in place: a leftover would only mislead.
        std::fs::remove_file(backup_path(path))
            .with_context(|| format!("removing the backup of {}", path.display()))?;
    }
    Ok(())
}

/// Removes the folders above `path`, up to `root` (excluded), that are
/// left empty; the first one that is not empty (or not ours to remove)
/// stops it.
pub fn remove_empty_parents(path: &Path, root: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if !d.starts_with(root) || d == root || std::fs::remove_dir(d).is_err() {
            return;
        }
        dir = d.parent();
    }
}

/// The file a symlink at `path` points to, so the link stays a link.
pub fn resolve(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_keeps_a_backup_the_mode_and_the_link() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("dotfiles/settings.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "{}").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = t.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();

        replace(
            &link,
            Some("{}"),
            Some("{\"a\": 1}\n"),
            false,
            Backup::Write,
        )
        .unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "{\"a\": 1}\n");
        assert_eq!(std::fs::read_to_string(backup_path(&real)).unwrap(), "{}");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);

        let script = t.path().join("hooks/Start");
        replace(&script, None, Some("#!/bin/sh\n"), true, Backup::Untouched).unwrap();
        let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        replace(&script, Some("#!/bin/sh\n"), None, true, Backup::Untouched).unwrap();
        assert!(
            !backup_path(&script).exists(),
            "a removed file of ours has no backup"
        );
        assert!(!script.exists());
    }

    #[test]
    fn read_tells_absent_from_unreadable() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(read(&t.path().join("none")).unwrap(), None);
        std::fs::write(t.path().join("bin"), [0xff, 0xfe]).unwrap();
        let e = read(&t.path().join("bin")).unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
    }
}
