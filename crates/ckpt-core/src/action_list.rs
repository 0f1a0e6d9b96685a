//! A rewind's actions in path order: in memory up to a window, in a temp
//! file beside the project's database past it, read back a block at a
//! time. A rewind's plan was the one structure that grew with its turn
//! (~150 B a path: 125 MiB of daemon RSS for 500,000 paths); every pass
//! over it (planning, journal, apply) goes in path order, so a few cached
//! blocks serve them.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, IoContext, Result};
use crate::model::{Action, ActionCounts, PlanWindow};
use crate::relpath::{self, RelPath};
use crate::state::{self, State};

/// Where an [`ActionList`] goes past its window, and the window.
#[derive(Clone, Debug, Default)]
pub(crate) struct Spill {
    /// A temp file there (unlinked at once); `None`: the system's temp
    /// directory.
    pub dir: Option<PathBuf>,
    pub window: PlanWindow,
}

/// Blocks read back kept decoded: passes run side by side (the apply's
/// blob readers, its writer).
const CACHED_BLOCKS: usize = 8;

/// Actions in strictly ascending path order, built by [`Builder`].
pub(crate) struct ActionList {
    /// Actions to a block.
    per_block: usize,
    blocks: Vec<Block>,
    len: usize,
    counts: ActionCounts,
    file: Option<File>,
    cache: Mutex<VecDeque<(usize, Arc<Vec<Action>>)>>,
}

struct Block {
    /// Its first action's path: where [`ActionList::find`] looks.
    first: RelPath,
    data: Data,
}

enum Data {
    Here(Arc<Vec<Action>>),
    /// Encoded at `at` in the list's file.
    Spilled {
        at: u64,
        len: usize,
    },
}

/// One action of a list, holding its block.
pub(crate) struct Item {
    block: Arc<Vec<Action>>,
    at: usize,
}

impl std::ops::Deref for Item {
    type Target = Action;
    fn deref(&self) -> &Action {
        &self.block[self.at]
    }
}

impl ActionList {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every action, counted by kind.
    pub fn counts(&self) -> ActionCounts {
        self.counts
    }

    /// Action `i` (< `len`).
    pub fn get(&self, i: usize) -> Result<Item> {
        Ok(Item {
            block: self.block(i / self.per_block)?,
            at: i % self.per_block,
        })
    }

    /// Action `i`, through `held`, the block the caller read last: a pass
    /// in order takes the cache's lock once a block, not once an action.
    pub fn get_held(&self, i: usize, held: &mut Held) -> Result<Item> {
        let b = i / self.per_block;
        let block = match &held.0 {
            Some((n, block)) if *n == b => block.clone(),
            _ => {
                let block = self.block(b)?;
                held.0 = Some((b, block.clone()));
                block
            }
        };
        Ok(Item {
            block,
            at: i % self.per_block,
        })
    }

    /// Every action, in order, taken out of the list (a block read back
    /// is decoded for this alone, not cached).
    pub fn into_actions(self) -> impl Iterator<Item = Result<Action>> {
        let ActionList { blocks, file, .. } = self;
        blocks.into_iter().flat_map(move |b| {
            let actions = match b.data {
                Data::Here(actions) => {
                    Ok(Arc::try_unwrap(actions).unwrap_or_else(|shared| (*shared).clone()))
                }
                Data::Spilled { at, len } => read_block(file.as_ref(), at, len),
            };
            let (ok, err) = match actions {
                Ok(actions) => (actions, None),
                Err(e) => (Vec::new(), Some(Err(e))),
            };
            ok.into_iter().map(Ok).chain(err)
        })
    }

    /// The place of `path`'s action and the action, if the list has one.
    pub fn find(&self, path: &RelPath) -> Result<Option<(usize, Item)>> {
        let b = self.blocks.partition_point(|b| b.first <= *path);
        if b == 0 {
            return Ok(None);
        }
        let block = self.block(b - 1)?;
        Ok(match block.binary_search_by(|a| a.path.cmp(path)) {
            Ok(at) => Some(((b - 1) * self.per_block + at, Item { block, at })),
            Err(_) => None,
        })
    }

    /// Calls `f` with each action and its place, in order.
    pub fn try_for_each(&self, mut f: impl FnMut(usize, &Action) -> Result<()>) -> Result<()> {
        for b in 0..self.blocks.len() {
            let block = self.block(b)?;
            for (at, a) in block.iter().enumerate() {
                f(b * self.per_block + at, a)?;
            }
        }
        Ok(())
    }

    /// Every action, in order, from the file too: for the few callers
    /// that want them all (a work copy's apply, tests).
    pub fn to_vec(&self) -> Result<Vec<Action>> {
        let mut out = Vec::with_capacity(self.len);
        self.try_for_each(|_, a| {
            out.push(a.clone());
            Ok(())
        })?;
        Ok(out)
    }

    /// The list with `edits` made (path: `None` takes its action out,
    /// `Some(target)` gives it that target); paths it has no action for
    /// are ignored.
    pub fn edited(
        self,
        spill: &Spill,
        edits: &std::collections::BTreeMap<RelPath, Option<State>>,
    ) -> Result<ActionList> {
        if edits.is_empty() {
            return Ok(self);
        }
        let mut out = Builder::new(spill);
        for a in self.into_actions() {
            let a = a?;
            match edits.get(&a.path) {
                None => out.push(a)?,
                Some(None) => {}
                Some(Some(target)) => out.push(Action {
                    target: target.clone(),
                    ..a
                })?,
            }
        }
        out.finish()
    }

    fn block(&self, b: usize) -> Result<Arc<Vec<Action>>> {
        let (at, len) = match &self.blocks[b].data {
            Data::Here(actions) => return Ok(actions.clone()),
            Data::Spilled { at, len } => (*at, *len),
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, actions)) = cache.iter().find(|(n, _)| *n == b) {
            return Ok(actions.clone());
        }
        let actions = Arc::new(read_block(self.file.as_ref(), at, len)?);
        if cache.len() == CACHED_BLOCKS {
            cache.pop_front();
        }
        cache.push_back((b, actions.clone()));
        Ok(actions)
    }
}

/// What [`ActionList::get_held`] holds between calls.
#[derive(Default)]
pub(crate) struct Held(Option<(usize, Arc<Vec<Action>>)>);

fn read_block(file: Option<&File>, at: u64, len: usize) -> Result<Vec<Action>> {
    let file = file.ok_or_else(|| {
        Error::Invariant("a spilled block of a rewind's actions without its file".into())
    })?;
    let mut bytes = vec![0; len];
    file.read_exact_at(&mut bytes, at)
        .ctx("read back", Path::new("a rewind's spilled actions"))?;
    decode_block(&bytes)
}

/// Builds an [`ActionList`] from actions pushed in path order.
pub(crate) struct Builder {
    list: ActionList,
    current: Vec<Action>,
    spill: Spill,
    /// The last full block's last path, to check the order against.
    last: Option<RelPath>,
    written: u64,
}

impl Builder {
    pub fn new(spill: &Spill) -> Builder {
        let block = spill.window.block.max(1);
        Builder {
            list: ActionList {
                per_block: block,
                blocks: Vec::new(),
                len: 0,
                counts: ActionCounts::default(),
                file: None,
                cache: Mutex::new(VecDeque::new()),
            },
            // Grown as pushed: a one-file rewind's lists hold a few
            // actions, and a whole block reserved (~480 KiB) is a mapping
            // made and unmade for each.
            current: Vec::new(),
            spill: spill.clone(),
            last: None,
            written: 0,
        }
    }

    /// Appends `a`, whose path must sort after every one before it.
    pub fn push(&mut self, a: Action) -> Result<()> {
        let last = self.current.last().map(|l| &l.path).or(self.last.as_ref());
        if last.is_some_and(|l| *l >= a.path) {
            return Err(Error::Invariant(format!(
                "a rewind's actions out of path order at {}",
                a.path
            )));
        }
        self.list.counts.add(&a);
        self.current.push(a);
        if self.current.len() == self.list.per_block {
            self.close_block()?;
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<ActionList> {
        if !self.current.is_empty() {
            self.close_block()?;
        }
        Ok(self.list)
    }

    fn close_block(&mut self) -> Result<()> {
        let actions = std::mem::take(&mut self.current);
        self.last = actions.last().map(|a| a.path.clone());
        let first = actions[0].path.clone();
        self.list.len += actions.len();
        let window = self.spill.window.blocks;
        let data = if self.list.file.is_none() && self.list.blocks.len() < window {
            Data::Here(Arc::new(actions))
        } else {
            if self.list.file.is_none() {
                self.start_file()?;
            }
            self.write_block(&actions)?
        };
        self.list.blocks.push(Block { first, data });
        Ok(())
    }

    /// Past the window: the file, with every block held so far.
    fn start_file(&mut self) -> Result<()> {
        let file = match &self.spill.dir {
            Some(dir) => tempfile::tempfile_in(dir).ctx("create a temp file in", dir)?,
            None => tempfile::tempfile().ctx("create", Path::new("a temp file"))?,
        };
        self.list.file = Some(file);
        #[cfg(test)]
        SPILLED.with(|n| n.set(n.get() + 1));
        for b in 0..self.list.blocks.len() {
            let Data::Here(actions) = &self.list.blocks[b].data else {
                continue;
            };
            let actions = actions.clone();
            self.list.blocks[b].data = self.write_block(&actions)?;
        }
        Ok(())
    }

    fn write_block(&mut self, actions: &[Action]) -> Result<Data> {
        let mut bytes = Vec::new();
        for a in actions {
            encode(a, &mut bytes);
        }
        let file = self.list.file.as_mut().expect("started");
        file.write_all(&bytes)
            .ctx("write", Path::new("a rewind's spilled actions"))?;
        let at = self.written;
        self.written += bytes.len() as u64;
        Ok(Data::Spilled {
            at,
            len: bytes.len(),
        })
    }
}

#[cfg(test)]
thread_local! {
    /// Lists that went to disk.
    pub(crate) static SPILLED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A list of no actions.
pub(crate) fn empty() -> ActionList {
    Builder::new(&Spill::default()).list
}

/// `ActionList` from actions in any order.
pub(crate) fn from_vec(mut actions: Vec<Action>, spill: &Spill) -> Result<ActionList> {
    if !actions.is_sorted_by(|a, b| a.path < b.path) {
        actions.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    }
    let mut out = Builder::new(spill);
    for a in actions {
        out.push(a)?;
    }
    out.finish()
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// A state as the database's columns hold it (`state::encode`).
fn put_state(out: &mut Vec<u8>, s: &State) {
    let (kind, mode, data, size) = state::encode(s);
    out.push(kind as u8);
    out.extend_from_slice(&(mode as u32).to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    match data {
        None => out.push(0),
        Some(data) => {
            out.push(1);
            put_bytes(out, &data);
        }
    }
}

fn encode(a: &Action, out: &mut Vec<u8>) {
    put_bytes(out, a.path.as_bytes());
    put_state(out, &a.current);
    put_state(out, &a.target);
}

/// Reads what [`encode`] wrote.
struct Reader<'b>(&'b [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.0.len() < n {
            return Err(Error::Corrupt(
                "a rewind's spilled actions are cut short".into(),
            ));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn bytes(&mut self) -> Result<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }

    fn state(&mut self) -> Result<State> {
        let kind = self.take(1)?[0];
        let mode = self.u32()?;
        let size = i64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"));
        let data = match self.take(1)?[0] {
            0 => None,
            _ => Some(self.bytes()?),
        };
        state::decode(kind.into(), mode.into(), data, size).ok_or_else(|| {
            Error::Corrupt(format!("a rewind's spilled actions hold state kind {kind}"))
        })
    }
}

fn decode_block(bytes: &[u8]) -> Result<Vec<Action>> {
    let mut r = Reader(bytes);
    let mut out = Vec::new();
    while !r.0.is_empty() {
        let path = relpath::stored(r.bytes()?)?;
        let current = r.state()?;
        let target = r.state()?;
        out.push(Action {
            path,
            current,
            target,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Hash, HashOf};

    fn action(i: usize) -> Action {
        let path = RelPath::new(format!("d{}/f{i:05}", i % 3)).unwrap();
        let states = [
            State::Absent,
            State::File {
                hash: Hash::of(&i.to_le_bytes()),
                size: i as u64,
                mode: 0o644,
            },
            State::Dir { mode: 0o755 },
            State::Symlink {
                target: format!("t{i}").into_bytes(),
            },
            State::Skipped {
                reason: format!("why {i}"),
            },
        ];
        Action {
            path,
            current: states[i % 5].clone(),
            target: states[(i + 2) % 5].clone(),
        }
    }

    fn sorted(n: usize) -> Vec<Action> {
        let mut v: Vec<Action> = (0..n).map(action).collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }

    /// Past the window the list goes to a file; whatever its length, it
    /// gives back every action, by place, by path and in order.
    #[test]
    fn a_list_gives_back_what_it_was_given_in_memory_and_from_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill {
            dir: Some(dir.path().to_path_buf()),
            window: PlanWindow::default(),
        };
        let (block, window) = (spill.window.block, spill.window.block * spill.window.blocks);
        for n in [0, 1, block, window, window + 1, 97] {
            let want = sorted(n);
            let list = from_vec(want.clone(), &spill).unwrap();
            assert_eq!(list.len(), n);
            assert_eq!(list.file.is_some(), n > window, "{n}");
            assert_eq!(list.to_vec().unwrap(), want);
            for (i, a) in want.iter().enumerate().rev() {
                assert_eq!(*list.get(i).unwrap(), *a);
                let (at, found) = list.find(&a.path).unwrap().unwrap();
                assert_eq!((at, &*found), (i, a));
                let between = RelPath::new(format!("{}.x", a.path)).unwrap();
                assert!(list.find(&between).unwrap().is_none());
            }
            assert!(list.find(&RelPath::new("a").unwrap()).unwrap().is_none());
            assert!(list.find(&RelPath::new("z").unwrap()).unwrap().is_none());
        }
    }

    #[test]
    fn out_of_order_is_refused_and_edits_keep_the_order() {
        let want = sorted(40);
        let none = Spill::default();
        let mut b = Builder::new(&none);
        b.push(want[1].clone()).unwrap();
        assert!(matches!(b.push(want[0].clone()), Err(Error::Invariant(_))));
        assert!(matches!(b.push(want[1].clone()), Err(Error::Invariant(_))));

        let list = from_vec(want.iter().rev().cloned().collect(), &none).unwrap();
        let gone = want[7].path.clone();
        let changed = want[30].path.clone();
        let edits = [(gone.clone(), None), (changed.clone(), Some(State::Absent))];
        let list = list.edited(&none, &edits.into_iter().collect()).unwrap();
        let mut expect = want.clone();
        expect[30].target = State::Absent;
        expect.remove(7);
        assert_eq!(list.to_vec().unwrap(), expect);
    }
}
