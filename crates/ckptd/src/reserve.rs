//! A reserve file in the data dir: space set aside while there is plenty,
//! given back when the data disk is full so the database can still commit
//! a turn boundary or a rewind that needs no new content, made again when
//! space returns. Without it a full disk allows no rewind at all (even the
//! barrier's scan writes to the database), so the user could not rewind to
//! free space.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::mutex::lock;

/// The reserves' names in the data dir: one any turn boundary or rewind
/// may spend, one only a rewind or redo may, so an agent's turn-end that
/// spends the first on new content still leaves the user a rewind.
const FILES: [&str; 2] = ["space-reserve", "space-reserve-rewind"];

/// How much each reserve sets aside. Measured on a 12 MiB tmpfs
/// (tests/tests/e2e/full_disk.rs,
/// `a_rewind_needing_no_new_content_and_turn_boundaries_work_on_a_full_data_disk`).
pub const SIZE: u64 = 1 << 20;

/// Who asks for space.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum For {
    TurnBoundary,
    Rewind,
}

pub struct Reserve {
    dir: PathBuf,
    /// Serializes making and releasing them.
    busy: std::sync::Mutex<()>,
}

impl Reserve {
    pub fn new(data_dir: &Path) -> Reserve {
        Reserve {
            dir: data_dir.to_path_buf(),
            busy: std::sync::Mutex::new(()),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Gives one reserve's space back; true if there was one to give.
    pub fn release(&self, who: For) -> bool {
        let _one = lock(&self.busy);
        let allowed = if who == For::Rewind { 2 } else { 1 };
        for name in &FILES[..allowed] {
            if std::fs::remove_file(self.path(name)).is_ok() {
                tracing::warn!(reserve = %self.path(name).display(), bytes = SIZE,
                    "the data disk is full: released a space reserve");
                return true;
            }
        }
        false
    }

    /// Makes each missing reserve while the disk has room for it and as
    /// much again (so it is not taken back right after a release).
    pub fn refill(&self) {
        if FILES.iter().all(|n| self.path(n).exists()) {
            return;
        }
        let _one = lock(&self.busy);
        for name in FILES.iter().rev() {
            if self.path(name).exists() {
                continue;
            }
            if free_bytes(&self.dir).is_none_or(|f| f < 2 * SIZE) {
                return;
            }
            if let Err(e) = self.write(name) {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot make a space reserve");
                return;
            }
        }
    }

    /// Writes real bytes (a sparse file would reserve nothing), then renames
    /// into place, so a half-made reserve is never taken for one.
    fn write(&self, name: &str) -> std::io::Result<()> {
        let tmp = self.dir.join(format!("{name}.tmp"));
        let made = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            let chunk = vec![0u8; 64 << 10];
            for _ in 0..SIZE / chunk.len() as u64 {
                f.write_all(&chunk)?;
            }
            f.sync_all()?;
            std::fs::rename(&tmp, self.path(name))
        })();
        if made.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        made
    }
}

/// Bytes an unprivileged process may still write on `dir`'s filesystem.
fn free_bytes(dir: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(dir).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}
