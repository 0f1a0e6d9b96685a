//! `files.zip`: the post-image of every touched path that exists after the
//! range — files with their permission bits, symlinks as links, directories
//! — with a fixed timestamp, so the same range gives the same bytes.

use std::collections::HashMap;
use std::io::{Cursor, Write};

use zip::write::SimpleFileOptions;

use super::RangePath;
use crate::error::{Error, Result};
use crate::state::{Hash, State};

pub(crate) fn zip(paths: &[RangePath], blobs: &HashMap<Hash, Vec<u8>>) -> Result<Vec<u8>> {
    let err =
        |e: zip::result::ZipError| Error::Invariant(format!("building {}: {e}", super::ZIP_FILE));
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let base = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default());
    for rp in paths {
        let name = rp.path.display();
        match &rp.post {
            State::File { hash, mode, .. } => {
                w.start_file(name, base.unix_permissions(mode & 0o7777))
                    .map_err(err)?;
                w.write_all(&blobs[hash])
                    .map_err(|e| Error::Invariant(format!("building {}: {e}", super::ZIP_FILE)))?;
            }
            State::Symlink { target } => {
                let target = String::from_utf8_lossy(target).into_owned();
                w.add_symlink(name, target, base).map_err(err)?;
            }
            State::Dir { mode } => {
                w.add_directory(name, base.unix_permissions(mode & 0o7777))
                    .map_err(err)?;
            }
            State::Absent | State::Skipped { .. } => {}
        }
    }
    Ok(w.finish().map_err(err)?.into_inner())
}
