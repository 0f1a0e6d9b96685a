//! Changing a config file: one key with `toml_edit` (the rest of the file,
//! comments and order included, stays byte for byte), or the whole file in
//! the user's editor. Either way the result is checked with the parser the
//! daemon uses; `set` writes nothing it would refuse.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context};
use ckpt_settings::{Key, Source, Value};
use toml_edit::{Array, DocumentMut, Item, Table};

fn source_of(path: &Path) -> Source {
    if path.parent().and_then(Path::file_name) == Some(".ckpt".as_ref()) {
        Source::Project
    } else {
        Source::User
    }
}

/// Sets `key` to `text` in the file at `path` (`None`: removes it).
pub fn set(path: &Path, key: &'static Key, text: Option<&str>) -> anyhow::Result<()> {
    let old = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut doc: DocumentMut = old
        .parse()
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let (section, name) = key.name.split_once('.').expect("every key is section.name");
    match text {
        Some(text) => {
            let value = key
                .parse_text(text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", key.name))?;
            let item = match value {
                Value::Int(n) => toml_edit::value(i64::try_from(n).context("too large")?),
                Value::Patterns(p) => toml_edit::value(p.into_iter().collect::<Array>()),
            };
            let table = doc
                .entry(section)
                .or_insert_with(|| Item::Table(Table::new()))
                .as_table_like_mut()
                .with_context(|| format!("{}: `{section}` is not a table", path.display()))?;
            table.insert(name, item);
        }
        None => {
            if let Some(t) = doc.get_mut(section).and_then(Item::as_table_like_mut) {
                t.remove(name);
            }
        }
    }
    let text = doc.to_string();
    // What the daemon would refuse is not written.
    ckpt_settings::parse(path, source_of(path), &text)?;
    write(path, &text)
}

/// Writes `text` to `path` through a temp file renamed into place, so the
/// daemon never reads half a file.
fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    crate::parent_made(path)?;
    let tmp = path.with_extension(format!("toml.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

/// A new file: every key, commented out, with its doc and default.
fn template() -> String {
    let mut s = String::from(
        "# ckpt settings (`ckptctl config` shows each value and where it comes from).\n",
    );
    let mut section = "";
    for k in ckpt_settings::KEYS {
        let (sec, name) = k.name.split_once('.').expect("section.name");
        if sec != section {
            s.push_str(&format!("\n# [{sec}]\n"));
            section = sec;
        }
        s.push_str(&format!(
            "# {} ({}).\n# {name} = {}\n",
            k.doc,
            k.kind.describe(),
            k.default_value()
        ));
    }
    s
}

/// Opens the file at `path` in `$VISUAL`, else `$EDITOR`, else `vi`
/// (through `sh`, so an editor given with its flags works), then checks
/// it: a bad file is named with its line and key (exit 1), and the daemon
/// keeps its last good settings until it is fixed.
pub fn edit(path: &Path) -> anyhow::Result<u8> {
    if !path.exists() {
        write(path, &template())?;
    }
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_string());
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(path)
        .status()
        .with_context(|| format!("starting the editor `{editor}`"))?;
    if !status.success() {
        bail!(
            "the editor `{editor}` failed ({status}); {} is as it left it",
            path.display()
        );
    }
    match ckpt_settings::read_file(path, source_of(path)) {
        Ok(_) => Ok(0),
        Err(e) => {
            eprintln!("ckptctl: config error: {e}");
            eprintln!(
                "ckptctl: the daemon keeps its last good settings until the file is fixed (`ckptctl config --edit` again)"
            );
            Ok(1)
        }
    }
}
