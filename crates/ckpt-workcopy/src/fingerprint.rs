//! The entries of a tree on disk (kind, mode, SHA-256 of the content) and
//! their fingerprint, whose text `ckpt_core::fingerprint_lines` writes: the
//! definition the export uses (docs/export.md).

use ckpt_core::HashOf;
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::Context;
use ckpt_core::{FingerprintLine, Hash};

pub use ckpt_core::{Entry, EntryKind as Kind};

/// Relative path (UTF-8, `/`-separated) → entry; `String` orders by bytes.
pub type Manifest = BTreeMap<String, Entry>;

/// The entry of the path at `abs` (not following a symlink), `None` if it is
/// absent, or an error for a special file (fifo, socket, device).
pub fn entry_of(abs: &Path) -> anyhow::Result<Option<Entry>> {
    let md = match std::fs::symlink_metadata(abs) {
        Ok(md) => md,
        Err(e) if absent(&e) => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", abs.display())),
    };
    let mode = md.mode() & 0o7777;
    let ft = md.file_type();
    let (kind, sha256) = if ft.is_symlink() {
        let target =
            std::fs::read_link(abs).with_context(|| format!("reading {}", abs.display()))?;
        (
            Kind::Symlink,
            Hash::of(target.as_os_str().as_bytes()).to_hex(),
        )
    } else if ft.is_dir() {
        (Kind::Dir, String::new())
    } else if ft.is_file() {
        let bytes = std::fs::read(abs).with_context(|| format!("reading {}", abs.display()))?;
        (Kind::File, Hash::of(&bytes).to_hex())
    } else {
        anyhow::bail!(
            "{} is neither a file, a directory nor a symlink",
            abs.display()
        );
    };
    Ok(Some(Entry { kind, mode, sha256 }))
}

/// Whether a failed lstat says the path is not there: missing, or below a
/// file (a copy that made a file a directory names paths below it).
pub fn absent(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
}

/// The fingerprint of `items`, which must come in byte order of their paths.
pub fn fingerprint<'a>(items: impl IntoIterator<Item = (&'a str, Option<&'a Entry>)>) -> String {
    ckpt_core::fingerprint_lines(items.into_iter().map(|(path, entry)| {
        let line = match entry {
            None => FingerprintLine::Deleted,
            Some(e) => FingerprintLine::Present {
                kind: e.kind.as_str(),
                mode: e.mode,
                sha256: &e.sha256,
            },
        };
        (path.as_bytes(), line)
    }))
}

pub fn of_manifest(m: &Manifest) -> String {
    fingerprint(m.iter().map(|(p, e)| (p.as_str(), Some(e))))
}

/// Every path ckpt captures below `root`, with its entry.
pub fn manifest(root: &Path) -> anyhow::Result<Manifest> {
    let (paths, unreadable) = ckpt_core::captured_paths(root, &[]);
    if let Some(ckpt_core::Skipped {
        path: p,
        reason: why,
    }) = unreadable.first()
    {
        anyhow::bail!("cannot read {}: {why}", root.join(p.as_path()).display());
    }
    let mut m = Manifest::new();
    for rel in paths {
        let Ok(name) = std::str::from_utf8(rel.as_bytes()) else {
            anyhow::bail!(
                "{}: a work copy records UTF-8 paths only",
                root.join(rel.as_path()).display()
            );
        };
        // Fifos and sockets are not copied and not recorded.
        if let Ok(Some(e)) = entry_of(&root.join(rel.as_path())) {
            m.insert(name.to_string(), e);
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(mode: u32, content: &[u8]) -> Entry {
        Entry {
            kind: Kind::File,
            mode,
            sha256: Hash::of(content).to_hex(),
        }
    }

    #[test]
    fn fingerprint_is_sha256_of_the_documented_lines() {
        let a = file(0o644, b"hi\n");
        let d = Entry {
            kind: Kind::Dir,
            mode: 0o755,
            sha256: String::new(),
        };
        let got = fingerprint([("a", Some(&a)), ("b", None), ("d", Some(&d))]);
        let text = format!(
            "a\0file\0644\0{}\nb\0DELETED\nd\0dir\0755\0\n",
            Hash::of(b"hi\n").to_hex()
        );
        assert_eq!(got, Hash::of(text.as_bytes()).to_hex());
        // Mode, content and presence each change it.
        assert_ne!(
            got,
            fingerprint([
                ("a", Some(&file(0o755, b"hi\n"))),
                ("b", None),
                ("d", Some(&d))
            ])
        );
        assert_ne!(
            got,
            fingerprint([
                ("a", Some(&file(0o644, b"ho\n"))),
                ("b", None),
                ("d", Some(&d))
            ])
        );
        assert_ne!(got, fingerprint([("a", Some(&a)), ("d", Some(&d))]));
    }

    #[test]
    fn manifest_reads_files_dirs_and_symlinks_and_skips_git() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/x"), b"x").unwrap();
        std::fs::set_permissions(root.join("src/x"), std::fs::Permissions::from_mode(0o751))
            .unwrap();
        std::os::unix::fs::symlink("src/x", root.join("l")).unwrap();
        let m = manifest(root).unwrap();
        let paths: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(paths, ["l", "src", "src/x"]);
        assert_eq!(m["src/x"], file(0o751, b"x"));
        assert_eq!(m["l"].kind, Kind::Symlink);
        assert_eq!(m["l"].sha256, Hash::of(b"src/x").to_hex());
        assert_eq!(m["src"].sha256, "");
        assert_eq!(of_manifest(&m), of_manifest(&manifest(root).unwrap()));
    }
}
