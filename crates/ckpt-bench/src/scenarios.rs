//! The scenarios of issue 4. Each repetition runs every system once, in
//! turn (A B C, A B C, …), each on its own copy of the same tree. Only the
//! system calls are timed; the agent's edits and the verification are not.
//! A repetition's timings are kept only if every rewind in it restored the
//! tree byte-for-byte (and left the user's `.git` byte-identical).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::procstat;
use crate::report::Results;
use crate::system::System;
use crate::tree::{self, DOTENV};
use crate::verify::{self, Scope, TreeState};

/// One system and the tree it works on.
pub struct Subject {
    pub sys: Box<dyn System>,
    /// The work tree every scenario starts from and must return to.
    pub clean: TreeState,
    /// The user's `.git`, which must never change.
    pub dotgit: TreeState,
    /// Set when the system could not even be set up.
    pub dead: Option<String>,
}

impl Subject {
    pub fn new(sys: Box<dyn System>) -> Result<Self> {
        let root = sys.root().to_path_buf();
        Ok(Self {
            clean: verify::capture(&root, Scope::WorkTree)?,
            dotgit: verify::capture(&root.join(".git"), Scope::All)?,
            sys,
            dead: None,
        })
    }

    fn root(&self) -> PathBuf {
        self.sys.root().to_path_buf()
    }
}

/// All systems on one tree size.
pub struct Lab {
    /// Prefix of scenario keys ("" for the base tree, "scale/" for 10×).
    pub prefix: &'static str,
    /// The prepared repository every subject's tree was copied from.
    pub base: PathBuf,
    /// The tracked file the user edited (agents leave it alone).
    pub user_edit: PathBuf,
    pub subjects: Vec<Subject>,
    /// `sync` before each system's repetition (off for `--quick`, where
    /// timings do not count and a busy CI disk would make it slow).
    pub flush: bool,
}

pub struct Plan {
    pub reps: usize,
    pub idle_pairs: usize,
    pub watch_reps: usize,
    pub idle_secs: f64,
}

/// Why a repetition produced no timings.
enum Bad {
    Wrong(String),
    Error(anyhow::Error),
}

impl From<anyhow::Error> for Bad {
    fn from(e: anyhow::Error) -> Self {
        Bad::Error(e)
    }
}

impl From<std::io::Error> for Bad {
    fn from(e: std::io::Error) -> Self {
        Bad::Error(e.into())
    }
}

type Step<T> = std::result::Result<T, Bad>;

/// Timings and values of one repetition, committed only if it was right.
#[derive(Default)]
struct RepLog {
    times: Vec<(&'static str, Duration)>,
    values: Vec<(&'static str, f64, &'static str)>,
}

fn timed<T>(log: &mut RepLog, op: &'static str, f: impl FnOnce() -> Result<T>) -> Step<T> {
    let t = Instant::now();
    let v = f()?;
    log.times.push((op, t.elapsed()));
    Ok(v)
}

/// Compares the work tree and the user's `.git` with what they must be.
fn check(s: &Subject, expected: &TreeState, after: &str) -> Step<()> {
    let root = s.root();
    let now = verify::capture(&root, Scope::WorkTree)?;
    let mut d = verify::diff(expected, &now, 8);
    let git_now = verify::capture(&root.join(".git"), Scope::All)?;
    d.extend(
        verify::diff(&s.dotgit, &git_now, 4)
            .into_iter()
            .map(|x| format!(".git/: {x}")),
    );
    if d.is_empty() {
        Ok(())
    } else {
        Err(Bad::Wrong(format!("after {after}: {}", d.join("; "))))
    }
}

/// Brings a subject's tree back to its clean state after a failure, and
/// restarts the system from scratch if it stopped answering.
fn repair(base: &Path, s: &mut Subject) {
    let root = s.root();
    if s.sys.settle().is_err() {
        let _ = s.sys.prepare_fresh().and_then(|_| s.sys.init());
    }
    if check(s, &s.clean, "repair").is_ok() {
        return;
    }
    let fixed = tree::resync(base, &root).and_then(|_| {
        let git_now = verify::capture(&root.join(".git"), Scope::All)?;
        if git_now != s.dotgit {
            fs::remove_dir_all(root.join(".git"))?;
            tree::clone_tree(&base.join(".git"), &root.join(".git"))?;
            s.dotgit = verify::capture(&root.join(".git"), Scope::All)?;
        }
        s.clean = verify::capture(&root, Scope::WorkTree)?;
        Ok(())
    });
    let _ = s.sys.settle();
    if let Err(e) = fixed {
        s.dead = Some(format!("tree could not be repaired: {e:#}"));
    }
}

/// Runs `body` for `reps` repetitions, all subjects interleaved.
fn run_reps(
    lab: &mut Lab,
    res: &mut Results,
    key: &str,
    reps: usize,
    mut body: impl FnMut(&mut Subject, &Path, &mut RepLog, usize) -> Step<()>,
) {
    let key = format!("{}{}", lab.prefix, key);
    eprintln!("[bench] {key}: {reps} repetitions");
    let started = Instant::now();
    for rep in 0..reps {
        for s in lab.subjects.iter_mut() {
            let name = s.sys.name();
            if res.failure(&key, name).is_some() {
                continue;
            }
            if let Some(why) = &s.dead {
                res.fail(&key, name, "ERROR", rep, why.clone());
                continue;
            }
            // Start every system with nothing dirty in the page cache, so
            // none pays for writeback of what the previous one wrote.
            if lab.flush {
                // SAFETY: sync(2) has no preconditions.
                unsafe { libc::sync() };
            }
            let mut log = RepLog::default();
            let out = body(s, &lab.user_edit, &mut log, rep);
            for n in s.sys.take_notes() {
                res.note(format!("{key} [{name}] {n}"));
            }
            match out {
                Ok(()) => {
                    for (op, d) in log.times {
                        res.time(&key, op, name, rep, d);
                    }
                    for (m, v, unit) in log.values {
                        res.metric(&key, m, name, v, unit);
                    }
                }
                Err(bad) => {
                    let (kind, msg) = match bad {
                        Bad::Wrong(m) => ("WRONG", m),
                        Bad::Error(e) => ("ERROR", format!("{e:#}")),
                    };
                    eprintln!("[bench] {key} [{name}] rep {rep}: {kind}: {msg}");
                    res.fail(&key, name, kind, rep, msg);
                    repair(&lab.base, s);
                }
            }
        }
    }
    eprintln!(
        "[bench] {key}: done in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// Untimed set-up used when the `watch` scenario is not run.
pub fn init_all(lab: &mut Lab) {
    for s in lab.subjects.iter_mut() {
        if let Err(e) = s.sys.prepare_fresh().and_then(|_| s.sys.init()) {
            eprintln!("[bench] set-up of {} failed: {e:#}", s.sys.name());
            s.dead = Some(format!("set-up failed: {e:#}"));
        }
    }
}

/// `watch`: start tracking the tree from nothing; store size afterwards.
pub fn watch(lab: &mut Lab, res: &mut Results, reps: usize) {
    for s in lab.subjects.iter_mut() {
        s.dead = None;
    }
    run_reps(lab, res, "watch", reps, |s, _, log, _| {
        s.sys.prepare_fresh()?;
        timed(log, "watch", || s.sys.init())?;
        if let Some(pid) = s.sys.daemon_pid() {
            let p = procstat::sample(pid)?;
            log.values
                .push(("peak RSS after baseline", p.peak_rss as f64, "bytes"));
        }
        let size = s.sys.store_bytes();
        log.values
            .push(("baseline store", size.total as f64, "bytes"));
        log.values.push((
            "baseline store / tree",
            size.total as f64 / s.clean.bytes().max(1) as f64,
            "ratio",
        ));
        s.sys.settle()?;
        check(s, &s.clean, "watch")
    });
    // A system whose set-up failed in every repetition cannot go on.
    let key = format!("{}watch", lab.prefix);
    for s in lab.subjects.iter_mut() {
        if let Some(f) = res.failure(&key, s.sys.name()) {
            if f.kind == "ERROR" {
                s.dead = Some(format!("watch failed: {}", f.message));
            }
        }
    }
}

/// `forget`: stop tracking the tree and delete its history, last (a
/// watched tree's directory watches all go at once); nothing in the tree
/// or its `.git` may change.
pub fn forget(lab: &mut Lab, res: &mut Results) {
    run_reps(lab, res, "forget", 1, |s, _, log, _| {
        let before = verify::capture(&s.root(), Scope::WorkTree)?;
        timed(log, "forget", || s.sys.forget())?;
        check(s, &before, "forget")
    });
}

/// The floor of a call: process spawn alone, and a bare status round trip.
pub fn connect(lab: &mut Lab, res: &mut Results, reps: usize) {
    run_reps(lab, res, "connect", reps, |s, _, log, _| {
        for _ in 0..5 {
            for (op, d) in s.sys.floors()? {
                log.times.push((op, d));
            }
        }
        Ok(())
    });
}

/// `idle`: turn-start then turn-end with nothing changed.
pub fn idle(lab: &mut Lab, res: &mut Results, reps: usize, pairs: usize) {
    run_reps(lab, res, "idle", reps, |s, _, log, _| {
        for _ in 0..pairs {
            timed(log, "turn-start", || s.sys.turn_start())?;
            timed(log, "turn-end", || s.sys.turn_end())?;
        }
        check(s, &s.clean, "idle turns")?;
        Ok(s.sys.settle()?)
    });
}

/// Inserts `line` in the middle of a file (at a line boundary), in place.
fn insert_middle(path: &Path, line: &str) -> Result<()> {
    let mut data = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mid = data.len() / 2;
    let at = data[mid..]
        .iter()
        .position(|b| *b == b'\n')
        .map(|i| mid + i + 1)
        .unwrap_or(data.len());
    data.splice(at..at, line.bytes());
    fs::write(path, data).with_context(|| format!("writing {}", path.display()))
}

/// The agent's small turn: 3 source files and `.env` edited, one new
/// directory with one new file. Returns the touched paths.
fn small_edit(
    root: &Path,
    clean: &TreeState,
    user_edit: &Path,
    rep: usize,
) -> Result<Vec<PathBuf>> {
    let files: Vec<PathBuf> = clean
        .files()
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.components().count() >= 2 && p != user_edit)
        .collect();
    anyhow::ensure!(files.len() >= 3, "tree too small for the small scenario");
    let mut touched = Vec::new();
    for k in 1..=3 {
        let p = files[files.len() * k / 5].clone();
        insert_middle(
            &root.join(&p),
            &format!("// agent edit {k}, repetition {rep}\n"),
        )?;
        touched.push(p);
    }
    fs::write(
        root.join(DOTENV),
        format!("API_KEY=sk-agent-{rep:016}\nDATABASE_URL=postgres://localhost/agent\n"),
    )?;
    touched.push(PathBuf::from(DOTENV));
    let dir = files[0]
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .join("agent_generated");
    fs::create_dir(root.join(&dir))?;
    let file = dir.join("mod.rs");
    fs::write(
        root.join(&file),
        format!("//! Written by the agent in repetition {rep}.\npub fn generated() -> u32 {{ {rep} }}\n"),
    )?;
    touched.push(file);
    Ok(touched)
}

/// `small`: time turn-start, turn-end, rewind, and redo of a small turn.
pub fn small(lab: &mut Lab, res: &mut Results, reps: usize) {
    run_reps(lab, res, "small", reps, |s, user_edit, log, rep| {
        let root = s.root();
        let turn = timed(log, "turn-start", || s.sys.turn_start())?;
        let touched = small_edit(&root, &s.clean, user_edit, rep)?;
        let mut post = s.clean.clone();
        post.refresh(&root, &touched)?;
        timed(log, "turn-end", || s.sys.turn_end())?;
        timed(log, "rewind", || s.sys.rewind(turn))?;
        check(s, &s.clean, "rewind")?;
        s.sys.settle()?;
        timed(log, "redo", || s.sys.redo())?;
        check(s, &post, "redo")?;
        s.sys.settle()?;
        s.sys.rewind(turn)?;
        check(s, &s.clean, "rewind after redo")?;
        Ok(s.sys.settle()?)
    });
}

/// Directories `scaffold` makes, one small file in each.
const SCAFFOLD_DIRS: usize = 200;

/// `scaffold`: the agent makes a directory tree (a module per directory)
/// and the turn is rewound, removing every directory it made; then the next
/// turn's boundaries, which wait for the watcher to take those removals in.
pub fn scaffold(lab: &mut Lab, res: &mut Results, reps: usize) {
    run_reps(lab, res, "scaffold", reps, |s, _, log, rep| {
        let root = s.root();
        let turn = timed(log, "turn-start", || s.sys.turn_start())?;
        let top = root.join(format!("bench-scaffold-{rep}"));
        for i in 0..SCAFFOLD_DIRS {
            let dir = top.join(format!("m{i:03}"));
            fs::create_dir_all(&dir)?;
            fs::write(dir.join("mod.rs"), format!("// module {i}\n"))?;
        }
        timed(log, "turn-end", || s.sys.turn_end())?;
        timed(log, "rewind", || s.sys.rewind(turn))?;
        // Timed before the check, whose reading of the tree would give the
        // watcher time to catch up.
        timed(log, "next turn", || {
            s.sys.turn_start()?;
            s.sys.turn_end()
        })?;
        check(s, &s.clean, "rewind")?;
        Ok(s.sys.settle()?)
    });
}

/// `fulltree`: a formatter appends a line to every file.
pub fn fulltree(lab: &mut Lab, res: &mut Results, reps: usize) {
    run_reps(lab, res, "fulltree", reps, |s, _, log, rep| {
        let root = s.root();
        let turn = timed(log, "turn-start", || s.sys.turn_start())?;
        let line = format!("\n// reformatted, repetition {rep}\n");
        let t = Instant::now();
        for (p, _) in s.clean.files() {
            let path = root.join(&p);
            let mut f = fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .with_context(|| format!("opening {}", path.display()))?;
            f.write_all(line.as_bytes())
                .with_context(|| format!("appending to {}", path.display()))?;
        }
        log.values
            .push(("agent writes (untimed)", t.elapsed().as_secs_f64(), "s"));
        timed(log, "turn-end", || s.sys.turn_end())?;
        timed(log, "rewind", || s.sys.rewind(turn))?;
        check(s, &s.clean, "rewind")?;
        Ok(s.sys.settle()?)
    });
}

const BIGFILE: &str = "bench-bigfile.txt";
const BIG_TURNS: usize = 10;

/// 2 MiB of real text from the tree (its source files, concatenated).
pub fn big_text(clean: &TreeState, root: &Path) -> Result<Vec<u8>> {
    const SIZE: usize = 2 << 20;
    let mut out = Vec::with_capacity(SIZE + 4096);
    let files = clean.files();
    let text = |p: &PathBuf| {
        p.extension().is_some_and(|e| {
            ["rs", "md", "toml", "txt", "c", "h"]
                .iter()
                .any(|x| e == *x)
        })
    };
    while out.len() < SIZE {
        let before = out.len();
        for (p, _) in files.iter().filter(|(p, _)| text(p)) {
            out.extend_from_slice(&fs::read(root.join(p))?);
            if out.len() >= SIZE {
                break;
            }
        }
        anyhow::ensure!(
            out.len() > before,
            "no text files to build the big file from"
        );
    }
    out.truncate(SIZE);
    Ok(out)
}

/// `bigfile`: one line appended to a 2 MiB file in each of 10 turns.
pub fn bigfile(lab: &mut Lab, res: &mut Results, reps: usize, text: &[u8]) {
    run_reps(lab, res, "bigfile", reps, |s, _, log, rep| {
        let root = s.root();
        let big = root.join(BIGFILE);
        let mut data = format!("big file, repetition {rep}\n").into_bytes();
        data.extend_from_slice(text);
        fs::write(&big, &data)?;
        let mut before = s.clean.clone();
        before.refresh(&root, &[PathBuf::from(BIGFILE)])?;
        let mut first = None;
        let mut size0 = Default::default();
        for t in 0..BIG_TURNS {
            let turn = timed(log, "turn-start", || s.sys.turn_start())?;
            if first.is_none() {
                first = Some(turn);
                size0 = s.sys.store_bytes();
            }
            let mut f = fs::OpenOptions::new().append(true).open(&big)?;
            writeln!(f, "appended in turn {t} of repetition {rep}")?;
            drop(f);
            timed(log, "turn-end", || s.sys.turn_end())?;
        }
        let size1 = s.sys.store_bytes();
        let turns = BIG_TURNS as f64;
        log.values.push((
            "store growth/turn",
            (size1.total as f64 - size0.total as f64) / turns,
            "bytes",
        ));
        log.values.push((
            "store growth/turn without WAL",
            ((size1.total - size1.wal) as f64 - (size0.total - size0.wal) as f64) / turns,
            "bytes",
        ));
        let first = first.context("no turn")?;
        timed(log, "rewind", || s.sys.rewind(first))?;
        check(s, &before, "rewind to the first turn")?;
        fs::remove_file(&big)?;
        s.sys.settle()?;
        check(s, &s.clean, "removing the big file")
    });
}

/// Lines of the file `blame` follows, turns that edit it, lines each edits.
pub const BLAME_LINES: usize = 5000;
pub const BLAME_TURNS: usize = 100;
const BLAME_EDITS: usize = 3;

/// The lines (0-based) turn `t` of `blame` rewrites: spread over the file,
/// some rewritten again by later turns.
fn blame_edits(t: usize) -> [usize; BLAME_EDITS] {
    std::array::from_fn(|k| (t * 53 + k * 1667) % BLAME_LINES)
}

/// `blame`: a 5,000-line file is edited by 100 turns, a few lines each;
/// then every line is attributed. Only the blame is timed; it must find
/// every line and attribute exactly the rewritten ones to turns.
pub fn blame(lab: &mut Lab, res: &mut Results, reps: usize) {
    run_reps(lab, res, "blame", reps, |s, _, log, rep| {
        let root = s.root();
        let rel = PathBuf::from(format!("bench-blame-{rep}.txt"));
        let path = root.join(&rel);
        let mut lines: Vec<String> = (0..BLAME_LINES)
            .map(|i| format!("line {i} of the blame file, repetition {rep}\n"))
            .collect();
        fs::write(&path, lines.concat())?;
        s.sys.settle()?;
        let mut rewritten = std::collections::BTreeSet::new();
        for t in 0..BLAME_TURNS {
            s.sys.turn_start()?;
            for i in blame_edits(t) {
                lines[i] = format!("line {i} rewritten in turn {t}\n");
                rewritten.insert(i);
            }
            fs::write(&path, lines.concat())?;
            s.sys.turn_end()?;
        }
        let b = timed(log, "blame", || s.sys.blame(&rel))?;
        if b.lines != BLAME_LINES || b.from_turns != rewritten.len() {
            return Err(Bad::Wrong(format!(
                "blame found {} lines, {} from turns; expected {BLAME_LINES}, {}",
                b.lines,
                b.from_turns,
                rewritten.len()
            )));
        }
        fs::remove_file(&path)?;
        s.sys.settle()?;
        check(s, &s.clean, "removing the blamed file")
    });
}

/// The daemon's peak RSS and its CPU and wake-ups over `secs` of idleness.
pub fn daemon_idle(lab: &mut Lab, res: &mut Results, secs: f64) {
    let key = format!("{}daemon", lab.prefix);
    for s in lab.subjects.iter_mut() {
        let Some(pid) = s.sys.daemon_pid() else {
            continue;
        };
        let name = s.sys.name();
        let r = (|| -> Result<()> {
            s.sys.settle()?;
            std::thread::sleep(Duration::from_secs(1));
            let a = procstat::sample(pid)?;
            std::thread::sleep(Duration::from_secs_f64(secs));
            let b = procstat::sample(pid)?;
            res.metric(&key, "peak RSS", name, b.peak_rss as f64, "bytes");
            res.metric(&key, "RSS", name, b.rss as f64, "bytes");
            res.metric(&key, "threads", name, b.switches.len() as f64, "count");
            res.metric(
                &key,
                "idle CPU",
                name,
                (b.cpu_secs - a.cpu_secs) * 1e3,
                "ms",
            );
            let per_thread = a.wakeups_until(&b);
            let total: u64 = per_thread.values().sum();
            res.metric(&key, "idle wake-ups", name, total as f64, "count");
            let busy: Vec<String> = per_thread
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(t, n)| format!("{t}: {n}"))
                .collect();
            if !busy.is_empty() {
                res.note(format!(
                    "{key} [{name}] context switches in {secs:.0} s of idleness, by thread: {}",
                    busy.join(", ")
                ));
            }
            res.metric(&key, "idle seconds", name, secs, "s");
            Ok(())
        })();
        if let Err(e) = r {
            res.fail(&key, name, "ERROR", 0, format!("{e:#}"));
        }
    }
}
