//! A whole file written so that a crash leaves either no file (or the old
//! one) or the new one, never a part: a temp file beside it, synced, moved
//! into place, the directory synced. The client's one recipe (work copy
//! state, agents' configs, forked conversations); plain `std::fs`, for
//! paths outside any project's confinement.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::model::WRITE_TEMP_PREFIX;

/// How the file is written.
#[derive(Clone, Copy, Debug)]
pub struct WriteFile {
    /// Its permission bits.
    pub mode: u32,
    /// Replace a file already there; else one there is an error
    /// (`AlreadyExists`) and is left as it is.
    pub replace: bool,
}

impl Default for WriteFile {
    /// Owner-only, replacing.
    fn default() -> WriteFile {
        WriteFile {
            mode: 0o600,
            replace: true,
        }
    }
}

/// Writes `bytes` to `path` as one step (above); creates its directory if
/// missing. Each error names the step and the path it failed on.
pub fn write_file(path: &Path, bytes: &[u8], how: WriteFile) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| step(e, "creating", dir))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(WRITE_TEMP_PREFIX)
        .tempfile_in(dir)
        .map_err(|e| step(e, "creating a temp file in", dir))?;
    tmp.write_all(bytes)
        .and_then(|()| {
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(how.mode))
        })
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| step(e, "writing", tmp.path()))?;
    let placed = if how.replace {
        tmp.persist(path).map(drop)
    } else {
        tmp.persist_noclobber(path).map(drop)
    };
    placed.map_err(|e| step(e.error, "moving into place", path))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| step(e, "syncing", dir))
}

/// `e`, its message prefixed with what was being done to which path.
fn step(e: std::io::Error, doing: &str, path: &Path) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{doing} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temp_file_is_never_captured_and_never_taken_for_a_rewind_leftover() {
        let name = format!("{WRITE_TEMP_PREFIX}a1b2c3");
        assert!(crate::model::is_internal_name(name.as_bytes()));
        assert!(!name.starts_with(crate::model::TEMP_PREFIX));
    }

    #[test]
    fn write_file_replaces_with_the_mode_and_leaves_no_temp_file() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("sub/f.json");
        write_file(&p, b"one", WriteFile::default()).unwrap();
        let exe = WriteFile {
            mode: 0o755,
            replace: true,
        };
        write_file(&p, b"two", exe).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o755);
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["f.json"]);
    }

    #[test]
    fn write_file_without_replace_keeps_the_file_there() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        std::fs::write(&p, b"theirs").unwrap();
        let new_only = WriteFile {
            replace: false,
            ..WriteFile::default()
        };
        let e = write_file(&p, b"ours", new_only).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"theirs");
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1);
    }
}
