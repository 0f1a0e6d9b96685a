//! Edits to the project, made for real (std::fs or a shell tool through
//! `sh -c`) and applied to the model in the same step.
//!
//! Every edit acts only on what the model says is there and never writes
//! through a symlink, so the model stays exact without reading the disk.

mod content;
mod project;

pub use content::content;
pub use project::Project;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use anyhow::{bail, Context};

use self::project::{link_target, mv, rm_rf, write, NAMES};
use crate::rng::Rng;
use crate::tree::{self, join, parent, show, Node};

/// One random edit, made for real and in the model; returns its log line,
/// or `None` when nothing fitting was found.
pub fn random_edit(p: &mut Project, rng: &mut Rng) -> anyhow::Result<Option<String>> {
    p.transient.clear();
    let big = p.tree.len() > 400;
    let rm = if big { 20 } else { 5 };
    let weights = [
        12,                      // 0 create
        10,                      // 1 overwrite
        8,                       // 2 append
        3,                       // 3 truncate
        6,                       // 4 sed -i
        6,                       // 5 atomic save
        5,                       // 6 mv file
        5,                       // 7 mv dir
        rm,                      // 8 rm file/symlink
        rm,                      // 9 rm -rf dir
        6,                       // 10 mkdir -p deep
        5,                       // 11 symlink
        4,                       // 12 chmod
        3,                       // 13 made and removed
        if big { 0 } else { 2 }, // 14 burst
        4,                       // 15 dir -> file
        4,                       // 16 file -> dir
        rm,                      // 17 rm -rf a middle level
        3,                       // 18 mkdir empty
        2,                       // 19 npm install: an uncaptured node_modules
    ];
    let shell = rng.chance(50);
    let how = if shell { "sh" } else { "fs" };
    Ok(match rng.weighted(&weights) {
        0 => {
            let Some(path) = p.new_path(rng) else {
                return Ok(None);
            };
            let bytes = content(rng);
            if shell {
                p.sh("cat > \"$1\"", &[&path], Some(&bytes))?;
            } else {
                write(&p.full(&path), &bytes)?;
            }
            p.tree.insert(path.clone(), Node::file(&bytes, 0o644));
            Some(format!(
                "{how}: create {} ({} bytes)",
                show(&path),
                bytes.len()
            ))
        }
        1..=3 => {
            let files = p.files();
            let Some(path) = rng.pick(&files).cloned() else {
                return Ok(None);
            };
            let Some(Node::File { bytes: old, mode }) = p.tree.get(&path).cloned() else {
                return Ok(None);
            };
            let (new, what) = match rng.below(3) {
                0 => (content(rng), "overwrite"),
                1 => {
                    let mut v = old.to_vec();
                    v.extend_from_slice(&content(rng));
                    (v, "append")
                }
                _ => (
                    old[..rng.below(old.len() + 1).min(old.len())].to_vec(),
                    "truncate",
                ),
            };
            match (what, shell) {
                ("append", true) => p.sh("cat >> \"$1\"", &[&path], Some(&new[old.len()..]))?,
                ("truncate", true) => {
                    p.sh(&format!("truncate -s {} \"$1\"", new.len()), &[&path], None)?
                }
                (_, true) => p.sh("cat > \"$1\"", &[&path], Some(&new))?,
                ("truncate", false) => {
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .open(p.full(&path))
                        .with_context(|| format!("open {}", show(&path)))?;
                    f.set_len(new.len() as u64)
                        .with_context(|| format!("truncate {}", show(&path)))?;
                }
                (_, false) => write(&p.full(&path), &new)?,
            }
            p.tree.insert(path.clone(), Node::file(&new, mode));
            Some(format!(
                "{how}: {what} {} ({} bytes)",
                show(&path),
                new.len()
            ))
        }
        4 => {
            let files = p.files();
            let Some(path) = rng.pick(&files).cloned() else {
                return Ok(None);
            };
            let Some(Node::File { bytes: old, mode }) = p.tree.get(&path).cloned() else {
                return Ok(None);
            };
            p.sh("sed -i 's/a/X/g' \"$1\"", &[&path], None)?;
            let new: Vec<u8> = old
                .iter()
                .map(|&b| if b == b'a' { b'X' } else { b })
                .collect();
            p.tree.insert(path.clone(), Node::file(&new, mode));
            Some(format!("sh: sed -i s/a/X/g {}", show(&path)))
        }
        5 => {
            let files = p.files();
            let Some(path) = rng.pick(&files).cloned() else {
                return Ok(None);
            };
            let tmp = join(parent(&path).unwrap_or(b""), b".save~tmp");
            if p.tree.contains_key(&tmp) {
                return Ok(None);
            }
            let bytes = content(rng);
            if shell {
                p.sh(
                    "cat > \"$1\" && mv -f \"$1\" \"$2\"",
                    &[&tmp, &path],
                    Some(&bytes),
                )?;
            } else {
                write(&p.full(&tmp), &bytes)?;
                std::fs::rename(p.full(&tmp), p.full(&path))
                    .with_context(|| format!("rename over {}", show(&path)))?;
            }
            p.tree.insert(path.clone(), Node::file(&bytes, 0o644));
            Some(format!(
                "{how}: atomic save of {} (temp + rename)",
                show(&path)
            ))
        }
        6 => {
            let srcs = p.of_kind(|n| !n.is_dir());
            let Some(src) = rng.pick(&srcs).cloned() else {
                return Ok(None);
            };
            // Onto another file now and then: mv replaces it.
            // (Never a link onto a file: it may be its own target, which
            // mv refuses.)
            let is_link = matches!(p.tree.get(&src), Some(Node::Symlink { .. }));
            let dst = if rng.chance(25) {
                match rng.pick(&p.files()).cloned() {
                    Some(d) if d != src && !is_link => d,
                    _ => return Ok(None),
                }
            } else {
                match p.new_path(rng) {
                    Some(d) => d,
                    None => return Ok(None),
                }
            };
            mv(p, &src, &dst, shell)?;
            Some(format!("{how}: mv {} {}", show(&src), show(&dst)))
        }
        7 => {
            let dirs = p.of_kind(Node::is_dir);
            let Some(src) = rng.pick(&dirs).cloned() else {
                return Ok(None);
            };
            let Some(dst) = p.new_path(rng) else {
                return Ok(None);
            };
            if dst == src || tree::is_below(&dst, &src) {
                return Ok(None);
            }
            mv(p, &src, &dst, shell)?;
            Some(format!("{how}: mv dir {} {}", show(&src), show(&dst)))
        }
        8 => {
            let v = p.of_kind(|n| !n.is_dir());
            let Some(path) = rng.pick(&v).cloned() else {
                return Ok(None);
            };
            if shell {
                p.sh("rm -f \"$1\"", &[&path], None)?;
            } else {
                std::fs::remove_file(p.full(&path))
                    .with_context(|| format!("rm {}", show(&path)))?;
            }
            p.tree.remove(&path);
            Some(format!("{how}: rm {}", show(&path)))
        }
        9 => {
            let v = p.of_kind(Node::is_dir);
            let Some(path) = rng.pick(&v).cloned() else {
                return Ok(None);
            };
            rm_rf(p, &path, shell)?;
            Some(format!("{how}: rm -rf {}", show(&path)))
        }
        10 => {
            let Some(first) = p.new_path(rng) else {
                return Ok(None);
            };
            let mut path = first;
            for _ in 0..rng.range(1, 4) {
                path = join(&path, rng.pick(NAMES).copied().unwrap_or(b"a"));
            }
            if shell {
                p.sh("mkdir -p \"$1\"", &[&path], None)?;
            } else {
                std::fs::create_dir_all(p.full(&path))
                    .with_context(|| format!("mkdir -p {}", show(&path)))?;
            }
            let mut at = path.clone();
            loop {
                if p.tree.contains_key(&at) {
                    break;
                }
                p.tree.insert(at.clone(), Node::Dir { mode: 0o755 });
                match parent(&at) {
                    Some(up) => at = up.to_vec(),
                    None => break,
                }
            }
            let f = join(&path, b"leaf.txt");
            let bytes = content(rng);
            write(&p.full(&f), &bytes)?;
            p.tree.insert(f, Node::file(&bytes, 0o644));
            Some(format!("{how}: mkdir -p {} and a file in it", show(&path)))
        }
        11 => {
            // A new link, or an existing one pointed elsewhere.
            let links = p.of_kind(|n| matches!(n, Node::Symlink { .. }));
            let (path, replace) = if !links.is_empty() && rng.chance(35) {
                (rng.pick(&links).cloned().unwrap_or_default(), true)
            } else {
                match p.new_path(rng) {
                    Some(n) => (n, false),
                    None => return Ok(None),
                }
            };
            let target = link_target(p, rng, &path);
            if shell {
                // `ln` itself, not through sh: the target is raw bytes.
                let st = Command::new("ln")
                    .arg(if replace { "-sfn" } else { "-s" })
                    // A target may start with a dash.
                    .arg("--")
                    .arg(OsStr::from_bytes(&target))
                    .arg(Project::arg(&path))
                    .current_dir(&p.root)
                    .status()
                    .context("ln -s")?;
                if !st.success() {
                    bail!("ln -s {} {} failed", show(&target), show(&path));
                }
            } else {
                if replace {
                    std::fs::remove_file(p.full(&path))
                        .with_context(|| format!("rm {}", show(&path)))?;
                }
                std::os::unix::fs::symlink(OsStr::from_bytes(&target), p.full(&path))
                    .with_context(|| format!("symlink {}", show(&path)))?;
            }
            p.tree.insert(
                path.clone(),
                Node::Symlink {
                    target: target.clone(),
                },
            );
            Some(format!(
                "{how}: {} symlink {} -> {}",
                if replace { "repoint" } else { "new" },
                show(&path),
                show(&target)
            ))
        }
        12 => {
            let files = p.files();
            let Some(path) = rng.pick(&files).cloned() else {
                return Ok(None);
            };
            let Some(Node::File { bytes, mode }) = p.tree.get(&path).cloned() else {
                return Ok(None);
            };
            let exec = mode & 0o111 == 0;
            let new_mode = if exec { 0o755 } else { 0o644 };
            if shell {
                let flag = if exec { "+x" } else { "-x" };
                p.sh(&format!("chmod {flag} \"$1\""), &[&path], None)?;
            } else {
                std::fs::set_permissions(p.full(&path), std::fs::Permissions::from_mode(new_mode))
                    .with_context(|| format!("chmod {}", show(&path)))?;
            }
            p.tree.insert(
                path.clone(),
                Node::File {
                    bytes,
                    mode: new_mode,
                },
            );
            Some(format!(
                "{how}: chmod {} {}",
                if exec { "+x" } else { "-x" },
                show(&path)
            ))
        }
        13 => {
            let Some(path) = p.new_path(rng) else {
                return Ok(None);
            };
            if shell {
                p.sh(
                    "mkdir \"$1\" && echo t > \"$1/t\" && rm -rf \"$1\"",
                    &[&path],
                    None,
                )?;
            } else {
                write(&p.full(&path), b"gone soon")?;
                std::fs::remove_file(p.full(&path))
                    .with_context(|| format!("rm {}", show(&path)))?;
            }
            let line = format!("{how}: made and removed {}", show(&path));
            p.transient.push(path);
            Some(line)
        }
        14 => {
            let Some(dir) = p.new_path(rng) else {
                return Ok(None);
            };
            let n = rng.range(100, 300);
            let subs = rng.range(1, 5);
            std::fs::create_dir(p.full(&dir)).with_context(|| format!("mkdir {}", show(&dir)))?;
            p.tree.insert(dir.clone(), Node::Dir { mode: 0o755 });
            for s in 0..subs {
                let sd = join(&dir, format!("s{s}").as_bytes());
                std::fs::create_dir(p.full(&sd)).with_context(|| format!("mkdir {}", show(&sd)))?;
                p.tree.insert(sd, Node::Dir { mode: 0o755 });
            }
            for i in 0..n {
                let f = join(&dir, format!("s{}/f{i}", i % subs).as_bytes());
                let bytes = format!("burst {i} {}\n", rng.u64()).into_bytes();
                write(&p.full(&f), &bytes)?;
                p.tree.insert(f, Node::file(&bytes, 0o644));
            }
            Some(format!("fs: burst of {n} files in {}", show(&dir)))
        }
        15 => {
            let v = p.of_kind(Node::is_dir);
            let Some(path) = rng.pick(&v).cloned() else {
                return Ok(None);
            };
            rm_rf(p, &path, shell)?;
            // A directory becomes a symlink (to the empty directory beside
            // the project, or nowhere) now and then: nothing may be written
            // through it.
            if rng.chance(30) {
                let depth = path.iter().filter(|&&b| b == b'/').count();
                let mut elsewhere = b"../".repeat(depth + 1);
                elsewhere.extend_from_slice(b"elsewhere");
                let target = if rng.chance(50) {
                    &elsewhere[..]
                } else {
                    b"gone/dir"
                };
                std::os::unix::fs::symlink(OsStr::from_bytes(target), p.full(&path))
                    .with_context(|| format!("symlink {}", show(&path)))?;
                p.tree.insert(
                    path.clone(),
                    Node::Symlink {
                        target: target.to_vec(),
                    },
                );
                Some(format!(
                    "{how}: directory {} replaced by a symlink -> {}",
                    show(&path),
                    show(target)
                ))
            } else {
                let bytes = content(rng);
                write(&p.full(&path), &bytes)?;
                p.tree.insert(path.clone(), Node::file(&bytes, 0o644));
                Some(format!(
                    "{how}: directory {} replaced by a file",
                    show(&path)
                ))
            }
        }
        16 => {
            let v = p.of_kind(|n| !n.is_dir());
            let Some(path) = rng.pick(&v).cloned() else {
                return Ok(None);
            };
            let child = join(&path, rng.pick(NAMES).copied().unwrap_or(b"a"));
            let bytes = content(rng);
            if shell {
                p.sh(
                    "rm -f \"$1\" && mkdir \"$1\" && cat > \"$2\"",
                    &[&path, &child],
                    Some(&bytes),
                )?;
            } else {
                std::fs::remove_file(p.full(&path))
                    .with_context(|| format!("rm {}", show(&path)))?;
                std::fs::create_dir(p.full(&path))
                    .with_context(|| format!("mkdir {}", show(&path)))?;
                write(&p.full(&child), &bytes)?;
            }
            p.tree.insert(path.clone(), Node::Dir { mode: 0o755 });
            p.tree.insert(child, Node::file(&bytes, 0o644));
            Some(format!("{how}: {} replaced by a directory", show(&path)))
        }
        17 => {
            // A directory with a parent directory and a subdirectory.
            let v: Vec<Vec<u8>> = p
                .of_kind(Node::is_dir)
                .into_iter()
                .filter(|d| parent(d).is_some())
                .filter(|d| tree::below(&p.tree, d).any(|(_, n)| n.is_dir()))
                .collect();
            let Some(path) = rng.pick(&v).cloned() else {
                return Ok(None);
            };
            rm_rf(p, &path, shell)?;
            Some(format!("{how}: rm -rf middle level {}", show(&path)))
        }
        19 => {
            let dirs = p.dirs();
            let Some(d) = rng.pick(&dirs).cloned() else {
                return Ok(None);
            };
            let nm = join(&d, b"node_modules");
            if p.tree.contains_key(&nm) {
                return Ok(None);
            }
            let pkg = join(&nm, b"pkg");
            let f = join(&pkg, b"index.js");
            let bytes = content(rng);
            std::fs::create_dir_all(p.full(&pkg))
                .with_context(|| format!("mkdir {}", show(&pkg)))?;
            write(&p.full(&f), &bytes)?;
            p.tree.insert(nm.clone(), Node::Dir { mode: 0o755 });
            p.tree.insert(pkg, Node::Dir { mode: 0o755 });
            p.tree.insert(f, Node::file(&bytes, 0o644));
            Some(format!("{how}: npm install in {} (uncaptured)", show(&nm)))
        }
        _ => {
            let Some(path) = p.new_path(rng) else {
                return Ok(None);
            };
            std::fs::create_dir(p.full(&path)).with_context(|| format!("mkdir {}", show(&path)))?;
            p.tree.insert(path.clone(), Node::Dir { mode: 0o755 });
            Some(format!("fs: mkdir {}", show(&path)))
        }
    })
}

/// A starting tree: a few nested directories, files, an executable and a
/// symlink, written straight to disk before the project is watched.
pub fn seed_tree(p: &mut Project, rng: &mut Rng) -> anyhow::Result<()> {
    for _ in 0..rng.range(3, 12) {
        // Mostly the edits that build something.
        let _ = random_edit_kind(p, rng)?;
    }
    Ok(())
}

fn random_edit_kind(p: &mut Project, rng: &mut Rng) -> anyhow::Result<Option<String>> {
    loop {
        // Only kinds that add, so the start is never empty for long.
        let before = p.tree.len();
        let line = random_edit(p, rng)?;
        if p.tree.len() >= before {
            return Ok(line);
        }
    }
}

/// Line-level edits of text file `path` (what an agent's or a user's edit
/// of a source file is, and what a three-way merge can tell apart): each
/// replaces, inserts or deletes one line. `None` if it is no file.
pub fn line_edit(p: &mut Project, rng: &mut Rng, path: &[u8]) -> anyhow::Result<Option<String>> {
    let Some(Node::File { bytes, mode }) = p.tree.get(path).cloned() else {
        return Ok(None);
    };
    let mut lines: Vec<Vec<u8>> = bytes
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    let mut what = Vec::new();
    for _ in 0..rng.range(1, 2) {
        let i = rng.below(lines.len() + 1);
        let new = format!("line {} edited\n", rng.u64() % 1000).into_bytes();
        match rng.below(3) {
            0 if i < lines.len() => {
                lines[i] = new;
                what.push(format!("replace line {}", i + 1));
            }
            1 if i < lines.len() && lines.len() > 2 => {
                lines.remove(i);
                what.push(format!("delete line {}", i + 1));
            }
            _ => {
                lines.insert(i, new);
                what.push(format!("insert line {}", i + 1));
            }
        }
    }
    let new: Vec<u8> = lines.concat();
    write(&p.full(path), &new)?;
    p.tree.insert(path.to_vec(), Node::file(&new, mode));
    Ok(Some(format!("fs: {} of {}", what.join(", "), show(path))))
}

/// A new text file of `lines` numbered lines, for edits to merge.
pub fn create_lines(
    p: &mut Project,
    rng: &mut Rng,
    lines: usize,
) -> anyhow::Result<Option<Vec<u8>>> {
    let Some(path) = p.new_path(rng) else {
        return Ok(None);
    };
    let text: String = (1..=lines).map(|i| format!("line {i}\n")).collect();
    write(&p.full(&path), text.as_bytes())?;
    p.tree
        .insert(path.clone(), Node::file(text.as_bytes(), 0o644));
    Ok(Some(path))
}
