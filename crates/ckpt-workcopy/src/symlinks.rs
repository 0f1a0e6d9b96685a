//! A symlink in a work copy must resolve inside the copy: one that leaves
//! it would, once applied, point from the user's tree at the copy, at the
//! original's parents or anywhere else on the machine. `create`, `preview`
//! and `apply` ask the same question here.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use anyhow::Context;

/// Symlinks followed before giving up, as the kernel's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

/// The target of the symlink at `root/path` when following it, link by
/// link as the kernel would (symlinks inside the tree included), can leave
/// `root`; `None` when it stays inside. A missing component ends the walk:
/// what follows it is judged by name only. A loop stays inside: the kernel
/// gives up on it (ELOOP) before it reaches anything.
pub fn leaves_tree(root: &Path, path: &str) -> anyhow::Result<Option<OsString>> {
    let abs = root.join(path);
    let target = std::fs::read_link(&abs).with_context(|| format!("reading {}", abs.display()))?;
    let mut at: Vec<OsString> = path.split('/').map(OsString::from).collect();
    at.pop();
    let escapes = walk(root, &mut at, &target, &mut 0)? == Walk::Leaves;
    Ok(escapes.then(|| target.into_os_string()))
}

/// Where following a target ends.
#[derive(PartialEq)]
enum Walk {
    Inside,
    Leaves,
    /// More than `MAX_LINKS` links: the kernel would stop here too.
    Loops,
}

/// Resolves `target` from the directory `at` (components under `root`),
/// stopping at the first step that climbs above `root`.
fn walk(
    root: &Path,
    at: &mut Vec<OsString>,
    target: &Path,
    links: &mut usize,
) -> anyhow::Result<Walk> {
    if target.is_absolute() {
        return Ok(Walk::Leaves);
    }
    for c in target.components() {
        match c {
            Component::ParentDir => {
                if at.pop().is_none() {
                    return Ok(Walk::Leaves);
                }
            }
            Component::Normal(name) => {
                at.push(name.to_os_string());
                let here = at.iter().fold(root.to_path_buf(), |p, c| p.join(c));
                let Ok(md) = std::fs::symlink_metadata(&here) else {
                    continue;
                };
                if md.file_type().is_symlink() {
                    *links += 1;
                    if *links > MAX_LINKS {
                        return Ok(Walk::Loops);
                    }
                    let next = std::fs::read_link(&here)
                        .with_context(|| format!("reading {}", here.display()))?;
                    at.pop();
                    match walk(root, at, &next, links)? {
                        Walk::Inside => {}
                        end => return Ok(end),
                    }
                }
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Ok(Walk::Leaves),
        }
    }
    Ok(Walk::Inside)
}

/// `leaves_tree`'s target as text for messages.
pub fn show(target: &OsString) -> String {
    String::from_utf8_lossy(target.as_bytes()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn check(links: &[(&str, &str)], dirs: &[&str], path: &str) -> bool {
        let t = tempfile::tempdir().unwrap();
        for d in dirs {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        for (at, to) in links {
            symlink(to, t.path().join(at)).unwrap();
        }
        leaves_tree(t.path(), path).unwrap().is_some()
    }

    #[test]
    fn absolute_and_climbing_targets_leave_the_tree() {
        assert!(check(&[("evil", "/etc/hostname")], &[], "evil"));
        assert!(check(&[("d/evil", "../../etc")], &["d"], "d/evil"));
        assert!(!check(&[("d/ok", "../x")], &["d"], "d/ok"));
        assert!(!check(&[("d/ok", "./e/../f")], &["d"], "d/ok"));
    }

    #[test]
    fn a_chain_of_links_that_each_stay_inside_can_still_leave() {
        // d/s -> .. is the root; d/t -> s/.. is then the root's parent.
        assert!(check(&[("d/s", ".."), ("d/t", "s/..")], &["d"], "d/t"));
        assert!(!check(&[("d/s", ".."), ("d/t", "s/d")], &["d"], "d/t"));
    }

    #[test]
    fn a_loop_stays_inside_and_ends() {
        assert!(!check(&[("a", "b"), ("b", "a"), ("c", "a/x")], &[], "c"));
        assert!(!check(&[("self", "self")], &[], "self"));
        assert!(!check(&[("d/l", "../d/l/x")], &["d"], "d/l"));
        // A link that leaves before the loop is reached still leaves.
        assert!(check(&[("a", "b"), ("b", "a"), ("c", "../a")], &[], "c"));
    }
}
