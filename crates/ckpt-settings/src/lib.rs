//! ckpt's settings: the one table of keys ([`KEYS`]: name, type, default,
//! doc), and how a value is found for each: the default, then the user's
//! file (`$XDG_CONFIG_HOME/ckpt/config.toml`), then the project's
//! (`<root>/.ckpt/config.toml`), then the environment (`CKPT_<KEY>`, the
//! key upper-cased with `.` as `_`). A list (`capture.excludes`) adds up
//! over the layers; any other value is the last layer's that sets it.
//!
//! The daemon parses the files with this crate (plain `toml`); editing them
//! (`ckptctl config set`, which keeps the user's comments) is the
//! `ckpt-config` sibling's.
//!
//! ```
//! use ckpt_settings::{parse, resolve, Layer, Source};
//! let project = parse(
//!     "/p/.ckpt/config.toml".as_ref(),
//!     Source::Project,
//!     "[retention]\nturns = 20\n",
//! )
//! .unwrap();
//! let s = resolve(&[&project]);
//! assert_eq!(s.retention_turns(), 20);
//! assert_eq!(s.retention_days(), 14);
//! assert_eq!(s.entry("retention.turns").sources, [Source::Project]);
//! # let _ = Layer::empty(Source::Env);
//! ```

mod file;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use file::CachedFile;

/// The names of the keys, for the accessors below and their callers.
pub mod key {
    pub const RETENTION_TURNS: &str = "retention.turns";
    pub const RETENTION_DAYS: &str = "retention.days";
    pub const STORE_BUDGET_MIB: &str = "store.budget_mib";
    pub const CAPTURE_MAX_FILE_MIB: &str = "capture.max_file_mib";
    pub const CAPTURE_EXCLUDES: &str = "capture.excludes";
    pub const BARRIER_TIMEOUT_MS: &str = "barrier.timeout_ms";
    pub const WORKCOPY_RUN_TIMEOUT_SECS: &str = "workcopy.run_timeout_secs";
    pub const WORKCOPY_MAX_FILES: &str = "workcopy.max_files";
    pub const WORKCOPY_MAX_MIB: &str = "workcopy.max_mib";
    pub const WORKCOPY_CO_AUTHORED_BY: &str = "workcopy.co_authored_by";
}

/// What a key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A whole number, at least `min`, with its unit (`turns`, `days`,
    /// `MiB`, `ms`, `s`, `files`) for the docs.
    Int { min: u64, unit: &'static str },
    /// A list of strings (gitignore patterns).
    Patterns,
}

impl Kind {
    /// The type as the docs and errors name it.
    pub fn describe(&self) -> String {
        match self {
            Kind::Int { unit, .. } => format!("integer ({unit})"),
            Kind::Patterns => "list of strings".into(),
        }
    }
}

/// A key's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultValue {
    Int(u64),
    Patterns(&'static [&'static str]),
}

/// One setting: the only place it is defined.
#[derive(Debug, PartialEq, Eq)]
pub struct Key {
    /// `section.name`, as the file and `ckptctl config get` spell it.
    pub name: &'static str,
    pub kind: Kind,
    pub default: DefaultValue,
    pub doc: &'static str,
}

impl Key {
    /// The variable that overrides it: `CKPT_` and the name upper-cased,
    /// `.` as `_`.
    pub fn env_var(&self) -> String {
        format!("CKPT_{}", self.name.replace('.', "_").to_ascii_uppercase())
    }

    pub fn default_value(&self) -> Value {
        match self.default {
            DefaultValue::Int(n) => Value::Int(n),
            DefaultValue::Patterns(p) => Value::Patterns(p.iter().map(|s| s.to_string()).collect()),
        }
    }

    /// Reads `text` (a command-line or environment value) as this key's
    /// value: a number, or patterns separated by commas.
    pub fn parse_text(&self, text: &str) -> Result<Value, String> {
        match self.kind {
            Kind::Int { min, .. } => text
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n >= min)
                .map(Value::Int)
                .ok_or_else(|| self.int_expected()),
            Kind::Patterns => Ok(Value::Patterns(
                text.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
            )),
        }
    }

    fn int_expected(&self) -> String {
        match self.kind {
            Kind::Int { min, unit } => format!("expected a whole number of {unit} from {min}"),
            Kind::Patterns => "expected a list of strings".into(),
        }
    }
}

/// Every key ckpt reads. The README's table of settings is checked against
/// this one (`readme_lists_every_key`).
pub const KEYS: &[Key] = &[
    Key {
        name: key::RETENTION_TURNS,
        kind: Kind::Int { min: 0, unit: "turns" },
        default: DefaultValue::Int(100),
        doc: "The newest turns always kept; turns that changed nothing do not count",
    },
    Key {
        name: key::RETENTION_DAYS,
        kind: Kind::Int { min: 0, unit: "days" },
        default: DefaultValue::Int(14),
        doc: "Older turns are dropped once they are this many days old",
    },
    Key {
        name: key::STORE_BUDGET_MIB,
        kind: Kind::Int { min: 0, unit: "MiB" },
        default: DefaultValue::Int(0),
        doc: "When a project's store is bigger, gc drops its oldest unpinned turns until it fits (0: no budget)",
    },
    Key {
        name: key::CAPTURE_MAX_FILE_MIB,
        kind: Kind::Int { min: 1, unit: "MiB" },
        default: DefaultValue::Int(16),
        doc: "Bigger files are recorded as skipped, not stored",
    },
    Key {
        name: key::CAPTURE_EXCLUDES,
        kind: Kind::Patterns,
        default: DefaultValue::Patterns(&[]),
        doc: "Paths never captured, in gitignore syntax; the user's and the project's both apply",
    },
    Key {
        name: key::BARRIER_TIMEOUT_MS,
        kind: Kind::Int { min: 1, unit: "ms" },
        default: DefaultValue::Int(2000),
        doc: "How long a turn boundary waits for the watcher before it scans the tree",
    },
    Key {
        name: key::WORKCOPY_RUN_TIMEOUT_SECS,
        kind: Kind::Int { min: 1, unit: "s" },
        default: DefaultValue::Int(300),
        doc: "How long `workcopy run` lets its command run",
    },
    Key {
        name: key::WORKCOPY_MAX_FILES,
        kind: Kind::Int { min: 1, unit: "files" },
        default: DefaultValue::Int(10_000),
        doc: "The most files a work copy copies",
    },
    Key {
        name: key::WORKCOPY_MAX_MIB,
        kind: Kind::Int { min: 1, unit: "MiB" },
        default: DefaultValue::Int(256),
        doc: "The most bytes a work copy copies",
    },
    Key {
        name: key::WORKCOPY_CO_AUTHORED_BY,
        kind: Kind::Patterns,
        default: DefaultValue::Patterns(&[]),
        doc: "`Co-authored-by` trailers `workcopy commit` adds (\"Name <email>\"); the agent is named by `Assisted-by` either way",
    },
];

/// The key named `name`.
pub fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// A setting's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Int(u64),
    Patterns(Vec<String>),
}

impl fmt::Display for Value {
    /// As TOML writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Patterns(p) => {
                let quoted: Vec<String> = p.iter().map(|s| format!("{s:?}")).collect();
                write!(f, "[{}]", quoted.join(", "))
            }
        }
    }
}

/// Where a value comes from, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Default,
    User,
    Project,
    Env,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::User => "user file",
            Source::Project => "project file",
            Source::Env => "env",
        }
    }
}

/// A bad setting: the file (none for the environment), the line, the key,
/// and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsError {
    pub file: Option<PathBuf>,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
            }
            f.write_str(": ")?;
        }
        if let Some(key) = &self.key {
            match find(key).filter(|_| self.file.is_none()) {
                Some(k) => write!(f, "{} ({key}): ", k.env_var())?,
                None => write!(f, "{key}: ")?,
            }
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for SettingsError {}

/// The values one file (or the environment) sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    pub source: Source,
    pub values: BTreeMap<&'static str, Value>,
}

impl Layer {
    pub fn empty(source: Source) -> Layer {
        Layer {
            source,
            values: BTreeMap::new(),
        }
    }
}

/// Parses a config file's `text` (`path` names it in errors).
pub fn parse(path: &Path, source: Source, text: &str) -> Result<Layer, SettingsError> {
    use toml::de::{DeTable, DeValue};
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let error = |offset: Option<usize>, key: Option<&str>, message: String| SettingsError {
        file: Some(path.to_path_buf()),
        line: offset.map(line_of),
        key: key.map(String::from),
        message,
    };
    let doc = DeTable::parse(text)
        .map_err(|e| error(e.span().map(|s| s.start), None, e.message().to_string()))?;
    let mut layer = Layer::empty(source);
    // Two levels: `[section]` then `key`; dotted keys parse the same way.
    for (section, body) in doc.get_ref() {
        let Some(table) = body.get_ref().as_table() else {
            return Err(error(
                Some(section.span().start),
                Some(section.get_ref()),
                unknown(section.get_ref()),
            ));
        };
        for (name, value) in table {
            let full = format!("{}.{}", section.get_ref(), name.get_ref());
            let at = Some(name.span().start);
            let Some(k) = find(&full) else {
                return Err(error(at, Some(&full), unknown(&full)));
            };
            let parsed = match (k.kind, value.get_ref()) {
                (Kind::Int { min, .. }, DeValue::Integer(i)) => {
                    u64::from_str_radix(i.as_str(), i.radix())
                        .ok()
                        .filter(|n| *n >= min)
                        .map(Value::Int)
                }
                (Kind::Patterns, DeValue::Array(items)) => items
                    .iter()
                    .map(|v| v.get_ref().as_str().map(String::from))
                    .collect::<Option<Vec<_>>>()
                    .map(Value::Patterns),
                _ => None,
            };
            let Some(parsed) = parsed else {
                let found = value.get_ref().type_str();
                let message = match k.kind {
                    Kind::Int { .. } => format!("{} (found {found})", k.int_expected()),
                    Kind::Patterns => format!("expected a list of strings (found {found})"),
                };
                return Err(error(at, Some(&full), message));
            };
            layer.values.insert(k.name, parsed);
        }
    }
    Ok(layer)
}

fn unknown(name: &str) -> String {
    let known: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
    format!("unknown key `{name}`; the keys are {}", known.join(", "))
}

/// The `CKPT_<KEY>` variables `var` gives (a process's environment:
/// `|n| std::env::var(n).ok()`).
pub fn env_layer(var: impl Fn(&str) -> Option<String>) -> Result<Layer, SettingsError> {
    let mut layer = Layer::empty(Source::Env);
    for k in KEYS {
        if let Some(text) = var(&k.env_var()) {
            let value = k.parse_text(&text).map_err(|message| SettingsError {
                file: None,
                line: None,
                key: Some(k.name.to_string()),
                message,
            })?;
            layer.values.insert(k.name, value);
        }
    }
    Ok(layer)
}

/// A key's effective value and the layers it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: &'static Key,
    pub value: Value,
    /// `[Default]`, or the layers that set it (several for a list).
    pub sources: Vec<Source>,
}

/// Every key's effective value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    entries: Vec<Entry>,
}

impl Default for Settings {
    fn default() -> Self {
        resolve(&[])
    }
}

/// Lays `layers` (weakest first) over the defaults.
pub fn resolve(layers: &[&Layer]) -> Settings {
    let entries = KEYS
        .iter()
        .map(|k| {
            let mut entry = Entry {
                key: k,
                value: k.default_value(),
                sources: vec![Source::Default],
            };
            for layer in layers {
                let Some(v) = layer.values.get(k.name) else {
                    continue;
                };
                if entry.sources == [Source::Default] {
                    entry.sources.clear();
                }
                match (&mut entry.value, v) {
                    // Lists add up: the user's excludes still apply in a
                    // project that has its own.
                    (Value::Patterns(all), Value::Patterns(more)) => all.extend(more.clone()),
                    (slot, v) => {
                        entry.sources.clear();
                        *slot = v.clone();
                    }
                }
                entry.sources.push(layer.source);
            }
            entry
        })
        .collect();
    Settings { entries }
}

impl Settings {
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry of `name`, a key of [`KEYS`].
    pub fn entry(&self, name: &str) -> &Entry {
        self.entries
            .iter()
            .find(|e| e.key.name == name)
            .unwrap_or_else(|| panic!("`{name}` is not in the key table"))
    }

    fn int(&self, name: &str) -> u64 {
        match &self.entry(name).value {
            Value::Int(n) => *n,
            Value::Patterns(_) => panic!("`{name}` is not a number"),
        }
    }

    pub fn retention_turns(&self) -> u64 {
        self.int(key::RETENTION_TURNS)
    }

    pub fn retention_days(&self) -> u64 {
        self.int(key::RETENTION_DAYS)
    }

    /// `None`: no budget.
    pub fn store_budget_bytes(&self) -> Option<u64> {
        Some(self.int(key::STORE_BUDGET_MIB))
            .filter(|&m| m > 0)
            .map(mib)
    }

    pub fn max_file_bytes(&self) -> u64 {
        mib(self.int(key::CAPTURE_MAX_FILE_MIB))
    }

    pub fn excludes(&self) -> &[String] {
        match &self.entry(key::CAPTURE_EXCLUDES).value {
            Value::Patterns(p) => p,
            Value::Int(_) => panic!("capture.excludes is a list"),
        }
    }

    pub fn barrier_timeout(&self) -> Duration {
        Duration::from_millis(self.int(key::BARRIER_TIMEOUT_MS))
    }

    /// How long `workcopy run` lets its command run.
    pub fn workcopy_run_timeout(&self) -> Duration {
        Duration::from_secs(self.int(key::WORKCOPY_RUN_TIMEOUT_SECS))
    }

    /// The most files a work copy copies.
    pub fn workcopy_max_files(&self) -> u64 {
        self.int(key::WORKCOPY_MAX_FILES)
    }

    /// The most bytes a work copy copies.
    pub fn workcopy_max_bytes(&self) -> u64 {
        mib(self.int(key::WORKCOPY_MAX_MIB))
    }

    /// Who `workcopy commit` names in `Co-authored-by` trailers.
    pub fn co_authored_by(&self) -> &[String] {
        match &self.entry(key::WORKCOPY_CO_AUTHORED_BY).value {
            Value::Patterns(p) => p,
            Value::Int(_) => panic!("workcopy.co_authored_by is a list"),
        }
    }
}

fn mib(n: u64) -> u64 {
    n.saturating_mul(1 << 20)
}

/// The user's file: `config.toml` in ckpt's directory under the
/// platform's config dir (`$XDG_CONFIG_HOME/ckpt` on Linux). `None`
/// without a home directory.
pub fn user_file() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|b| b.config_dir().join("ckpt").join("config.toml"))
}

/// A project's file: `.ckpt/config.toml` in its root.
pub fn project_file(root: &Path) -> PathBuf {
    root.join(".ckpt").join("config.toml")
}

/// Reads and parses the file at `path`; `Ok(None)` when there is none.
pub fn read_file(path: &Path, source: Source) -> Result<Option<Layer>, SettingsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(path, source, &text).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SettingsError {
            file: Some(path.to_path_buf()),
            line: None,
            key: None,
            message: format!("cannot read it: {e}"),
        }),
    }
}

/// The settings this process sees for the project at `root` (or none):
/// the user's file, the project's, this process's environment. For a
/// sibling that reads them once (the daemon keeps [`CachedFile`]s).
pub fn load(root: Option<&Path>) -> Result<Settings, SettingsError> {
    let user = match user_file() {
        Some(f) => read_file(&f, Source::User)?,
        None => None,
    };
    let project = match root {
        Some(r) => read_file(&project_file(r), Source::Project)?,
        None => None,
    };
    let env = env_layer(|n| std::env::var(n).ok())?;
    let layers: Vec<&Layer> = user.iter().chain(project.iter()).chain([&env]).collect();
    Ok(resolve(&layers))
}

#[cfg(test)]
mod tests;
