//! Capture: compare what is on disk with the hash cache, store new content,
//! update the cache, and record pre-images for the open turn.
//!
//! Two ways in, one way through: [`reconcile`] (a full scan: the walk merged
//! with the cache, `reconcile.rs`) and [`check_paths`] (event hints, walked
//! out to whatever they imply, `events.rs`) both hand the paths that differ
//! from the cache to the batch pipeline (`pipeline.rs`), whose workers read,
//! hash and compress each file (`prepare.rs`) while the previous batch is
//! written.
//!
//! Both take the project's [`Parts`](crate::parts::Parts), not the
//! `Project`.

mod events;
mod pipeline;
mod prepare;
mod reconcile;

pub(crate) use events::check_paths;
pub(crate) use prepare::{gap_of, Readers};
pub(crate) use reconcile::reconcile;

use crate::cache::CacheRow;
use crate::confined::Stat;
use crate::relpath::RelPath;
use crate::state::State;
use crate::store::Prepared;

/// Raw bytes read per write batch: bounds the daemon's memory on big trees
/// (a batch is held compressed, two at once, and its new small files raw
/// until they are packed; tiny in tests, so they cross batch boundaries).
const BATCH_BYTES: u64 = if cfg!(test) { 64 << 10 } else { 8 << 20 };

/// Most paths per write batch, whatever their size (a removal weighs
/// nothing): bounds a full scan's memory when much changed.
/// (Tiny in tests, so they cross batch and page boundaries.)
pub(crate) const BATCH_PATHS: usize = if cfg!(test) { 4 } else { 4096 };

/// A path to re-examine: its current stat (`None`: nothing there) and the
/// cache row it is compared with.
struct Seen {
    path: RelPath,
    stat: Option<Stat>,
    old: Option<CacheRow>,
}

/// The captured result for one path.
struct Captured {
    path: RelPath,
    old: Option<CacheRow>,
    new: Option<(State, Stat)>,
    /// The bytes read; kept past [`prepare_one`](prepare::prepare_one) only
    /// when they are new and small, for [`pack_small`](prepare::pack_small).
    content: Option<Vec<u8>>,
    blob: Option<Prepared>,
}

#[cfg(test)]
mod tests {
    use std::fs;

    use crate::model::Options;
    use crate::project::Project;

    /// A project with a tagged build dir, a dependency dir, `.ckptignore`d
    /// paths, a `.env`, and a `target` dir that is source, not build output.
    pub(super) fn setup() -> (tempfile::TempDir, std::path::PathBuf, Project) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        fs::create_dir_all(root.join("src/target")).unwrap();
        fs::write(root.join("src/target/x.rs"), "source, not build output").unwrap();
        fs::create_dir_all(root.join("target/debug")).unwrap();
        fs::write(
            root.join("target/CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        fs::write(root.join("target/debug/bin"), "built").unwrap();
        fs::create_dir_all(root.join("node_modules/x")).unwrap();
        fs::write(root.join("node_modules/x/i.js"), "dep").unwrap();
        fs::write(root.join(".ckptignore"), "*.log\n/scratch/\n").unwrap();
        fs::write(root.join("a.log"), "log").unwrap();
        fs::create_dir_all(root.join("scratch")).unwrap();
        fs::write(root.join("scratch/s"), "s").unwrap();
        fs::write(root.join(".env"), "SECRET=1").unwrap();
        let p = Project::open(&tmp.path().join("store"), &root, Options::default()).unwrap();
        (tmp, root, p)
    }

    /// The cached paths, sorted.
    pub(super) fn cached(p: &Project) -> Vec<String> {
        let mut v: Vec<String> = crate::cache::all(&p.conn)
            .unwrap()
            .into_keys()
            .map(|k| k.display())
            .collect();
        v.sort();
        v
    }

    /// Text large enough to be stored as a delta from its previous version.
    pub(super) fn large_text() -> Vec<u8> {
        let big: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        assert!(big.len() >= crate::store::DELTA_MIN);
        big
    }
}
