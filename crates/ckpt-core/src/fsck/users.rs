//! Who uses a damaged blob: a finding about `blob <hex>` names the turns
//! and paths whose content it holds (and the current file, from the hash
//! cache), so the user knows which turns can no longer be rewound exactly.

use std::collections::BTreeMap;

use super::{lossy, Checker, FindingKind};
use crate::error::Result;

/// Uses listed per blob; more are counted.
const MAX_LISTED: usize = 10;

/// Findings about a blob that make its content unreadable.
fn damages_content(kind: FindingKind) -> bool {
    matches!(
        kind,
        FindingKind::CorruptBlob
            | FindingKind::MissingPack
            | FindingKind::BlobOutsidePack
            | FindingKind::MissingObject
            | FindingKind::BrokenDelta
    )
}

/// Appends "used by …" to each damaged blob's finding.
pub(super) fn name_users(c: &mut Checker) -> Result<()> {
    let mut uses: BTreeMap<Vec<u8>, Vec<String>> = c
        .report
        .problems
        .iter()
        .filter(|f| damages_content(f.kind))
        .filter_map(|f| f.subject.strip_prefix("blob "))
        .filter_map(|h| hex::decode(h).ok())
        .map(|h| (h, Vec::new()))
        .collect();
    if uses.is_empty() {
        return Ok(());
    }
    let mut stmt = c.conn.prepare(
        "SELECT turn, path, pre_kind = 1 AND pre_data = ?1, post_kind = 1 AND post_data = ?1
         FROM turn_entries
         WHERE (pre_kind = 1 AND pre_data = ?1) OR (post_kind = 1 AND post_data = ?1)
         ORDER BY turn, path",
    )?;
    let mut cached = c
        .conn
        .prepare("SELECT path FROM files WHERE kind = 1 AND data = ?1 ORDER BY path")?;
    for (hash, list) in uses.iter_mut() {
        let mut rows = stmt.query([hash])?;
        while let Some(r) = rows.next()? {
            let (turn, path): (i64, Vec<u8>) = (r.get(0)?, r.get(1)?);
            let side = match (r.get::<_, bool>(2)?, r.get::<_, bool>(3)?) {
                (true, true) => "before and after",
                (true, false) => "before",
                _ => "after",
            };
            list.push(format!("turn {turn} {} ({side})", lossy(&path)));
        }
        let mut rows = cached.query([hash])?;
        while let Some(r) = rows.next()? {
            let path: Vec<u8> = r.get(0)?;
            list.push(format!("the current {}", lossy(&path)));
        }
    }
    for f in c
        .report
        .problems
        .iter_mut()
        .filter(|f| damages_content(f.kind))
    {
        let Some(list) = f
            .subject
            .strip_prefix("blob ")
            .and_then(|h| hex::decode(h).ok())
            .and_then(|h| uses.get(&h))
        else {
            continue;
        };
        f.detail.push_str(&used_by(list));
    }
    Ok(())
}

/// "; used by turn 2 a.txt (before), the current a.txt", or that nothing
/// uses it.
fn used_by(list: &[String]) -> String {
    if list.is_empty() {
        return "; no turn or current file uses it".to_string();
    }
    let shown = list[..list.len().min(MAX_LISTED)].join(", ");
    let more = list.len().saturating_sub(MAX_LISTED);
    if more > 0 {
        format!("; used by {shown} and {more} more")
    } else {
        format!("; used by {shown}")
    }
}
