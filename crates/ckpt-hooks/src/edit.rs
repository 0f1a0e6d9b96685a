//! Edits to an agent's config file that keep everything else as the user
//! wrote it: JSON and JSONC through a concrete syntax tree (comments, order
//! and spacing stay), TOML through `toml_edit`, and whole files of ours.
//!
//! Each edit knows what it adds and recognizes its own pieces again, so
//! `install` twice changes nothing and `uninstall` takes out exactly them.

use anyhow::{bail, Context};
use jsonc_parser::cst::{CstContainerNode, CstInputValue, CstNode, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::Value;

/// In every hook command ckpt installs, and in no other: how an installed
/// hook is recognized again (whichever path ckptctl had then).
pub const MARKER: &str = "--from-hook=";

/// The first line of a whole file ckpt writes (in the file's comment
/// syntax): uninstall removes only a file that still carries it.
pub const OWN_FILE_TAG: &str = "written by `ckptctl hooks install`";

/// One change to a file.
#[derive(Debug, Clone)]
pub enum Edit {
    /// JSON or JSONC (comments allowed).
    Json(Vec<JsonOp>),
    /// TOML: `key` of the table at `at` set to `value` (strings, numbers,
    /// booleans, arrays of them, and objects as tables).
    Toml {
        at: &'static [&'static str],
        key: &'static str,
        value: Value,
    },
    /// A file that is wholly ours (a plugin, a hook script).
    File { text: String, executable: bool },
}

#[derive(Debug, Clone)]
pub enum JsonOp {
    /// An element of the array at `at` (keys from the root), ours when one
    /// of its strings holds [`MARKER`].
    Item {
        at: &'static [&'static str],
        value: Value,
    },
    /// Property `key` of the object at `at`.
    Prop {
        at: &'static [&'static str],
        key: &'static str,
        value: Value,
    },
    /// A top-level property the file needs (`"version": 1`): set when
    /// missing, never changed, and removed only with the whole file.
    Default { key: &'static str, value: Value },
}

impl Edit {
    /// The file's text with our pieces in place (`old`: None if there is no
    /// file yet).
    ///
    /// A file that already holds them, in whatever bytes, is left as it is:
    /// agents rewrite their own configs (Claude Code its `.claude.json`
    /// without a final newline, Gemini CLI its `settings.json`), and what
    /// counts is the parsed document. So `installed` says yes, and a second
    /// install writes nothing.
    pub fn install(&self, old: Option<&str>) -> anyhow::Result<String> {
        match self {
            Edit::Json(ops) => {
                let new = json_install(old.unwrap_or(""), ops)?;
                match old {
                    Some(old) if same_json(old, &new) => Ok(old.to_string()),
                    _ => Ok(new),
                }
            }
            // toml_edit keeps every byte it does not change, and changes
            // nothing when our table is there as we write it.
            Edit::Toml { at, key, value } => toml_install(old.unwrap_or(""), at, key, value),
            Edit::File { text, .. } => Ok(text.clone()),
        }
    }

    /// The file's text without our pieces; None: remove the file (nothing
    /// but what we added is left in it).
    pub fn uninstall(&self, old: &str) -> anyhow::Result<Option<String>> {
        match self {
            Edit::Json(ops) => json_uninstall(old, ops),
            Edit::Toml { at, key, .. } => toml_uninstall(old, at, key),
            Edit::File { .. } if old.lines().take(3).any(|l| l.contains(OWN_FILE_TAG)) => Ok(None),
            Edit::File { .. } => Ok(Some(old.to_string())),
        }
    }

    /// Whether `old` already holds our pieces exactly.
    pub fn installed(&self, old: Option<&str>) -> anyhow::Result<bool> {
        Ok(match old {
            Some(text) => self.install(Some(text))? == text,
            None => false,
        })
    }

    /// The program this edit configures as an MCP server (`"command":
    /// PROG, "args": ["mcp"]`, or `"command": [PROG, "mcp"]`); None for a
    /// hook.
    pub fn mcp_program(&self) -> Option<String> {
        let values: Vec<&Value> = match self {
            Edit::Json(ops) => ops
                .iter()
                .filter_map(|op| match op {
                    JsonOp::Item { value, .. } | JsonOp::Prop { value, .. } => Some(value),
                    JsonOp::Default { .. } => None,
                })
                .collect(),
            Edit::Toml { value, .. } => vec![value],
            Edit::File { .. } => Vec::new(),
        };
        values.into_iter().find_map(mcp_program)
    }

    /// Whether the file must be executable (hook scripts).
    pub fn executable(&self) -> bool {
        matches!(
            self,
            Edit::File {
                executable: true,
                ..
            }
        )
    }
}

/// Both texts parse to the same JSON document (comments and layout aside).
fn same_json(a: &str, b: &str) -> bool {
    let value = |t: &str| parse_json(t).ok().map(|root| root.to_serde_value());
    match (value(a), value(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The program of an MCP server entry as every agent spells it.
fn mcp_program(v: &Value) -> Option<String> {
    let mcp = |a: &Value| a.as_str() == Some("mcp");
    match v.get("command")? {
        Value::String(prog) if v.get("args")?.as_array()?.iter().any(mcp) => Some(prog.clone()),
        Value::Array(argv) if argv.len() == 2 && mcp(&argv[1]) => {
            argv[0].as_str().map(String::from)
        }
        _ => None,
    }
}

fn is_ours(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(MARKER),
        Value::Array(a) => a.iter().any(is_ours),
        Value::Object(o) => o.values().any(is_ours),
        _ => false,
    }
}

fn parse_json(text: &str) -> anyhow::Result<CstRootNode> {
    let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| {
        anyhow::anyhow!(
            "not valid JSON: {} (line {})",
            e.kind(),
            text[..e.range().start.min(text.len())]
                .lines()
                .count()
                .max(1)
        )
    })?;
    match root.value() {
        None => {}
        Some(CstNode::Container(CstContainerNode::Object(_))) => {}
        Some(_) => bail!("the top level is not an object"),
    }
    Ok(root)
}

/// The object at `at`, created (with the objects above it) if missing.
fn object_at(root: &CstRootNode, at: &[&str]) -> anyhow::Result<CstObject> {
    let mut obj = root.object_value_or_set();
    for (i, key) in at.iter().enumerate() {
        obj = obj
            .object_value_or_create(key)
            .with_context(|| format!("\"{}\" is not an object", at[..=i].join(".")))?;
    }
    Ok(obj)
}

/// The object at `at` if all of it exists.
fn find_object(root: &CstRootNode, at: &[&str]) -> Option<CstObject> {
    let mut obj = root.object_value()?;
    for key in at {
        obj = obj.object_value(key)?;
    }
    Some(obj)
}

fn json_install(text: &str, ops: &[JsonOp]) -> anyhow::Result<String> {
    let root = parse_json(text)?;
    for op in ops {
        match op {
            JsonOp::Item { at, value } => {
                let (last, parents) = at.split_last().expect("an array path has a key");
                let array = object_at(&root, parents)?
                    .array_value_or_create(last)
                    .with_context(|| format!("\"{}\" is not an array", at.join(".")))?;
                let ours: Vec<CstNode> = array
                    .elements()
                    .into_iter()
                    .filter(|e| e.to_serde_value().is_some_and(|v| is_ours(&v)))
                    .collect();
                if let [one] = ours.as_slice() {
                    if one.to_serde_value().as_ref() == Some(value) {
                        continue;
                    }
                }
                for e in ours {
                    e.remove();
                }
                array.ensure_multiline();
                array.append(input(value));
            }
            JsonOp::Default { key, value } => {
                let obj = root.object_value_or_set();
                if obj.get(key).is_none() {
                    obj.insert(0, key, input(value));
                }
            }
            JsonOp::Prop { at, key, value } => {
                let obj = object_at(&root, at)?;
                match obj.get(key) {
                    Some(p)
                        if p.value().and_then(|v| v.to_serde_value()).as_ref() == Some(value) => {}
                    Some(p) => p.set_value(input(value)),
                    None => {
                        obj.append(key, input(value));
                    }
                }
            }
        }
    }
    let mut out = root.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

fn json_uninstall(text: &str, ops: &[JsonOp]) -> anyhow::Result<Option<String>> {
    let root = parse_json(text)?;
    let mut changed = false;
    for op in ops {
        let (container, at) = match op {
            JsonOp::Item { at, .. } => {
                let (last, parents) = at.split_last().expect("an array path has a key");
                let Some(array) = find_object(&root, parents).and_then(|o| o.array_value(last))
                else {
                    continue;
                };
                let ours: Vec<CstNode> = array
                    .elements()
                    .into_iter()
                    .filter(|e| e.to_serde_value().is_some_and(|v| is_ours(&v)))
                    .collect();
                if ours.is_empty() {
                    continue;
                }
                for e in ours {
                    e.remove();
                }
                (array.elements().is_empty(), *at)
            }
            JsonOp::Prop { at, key, .. } => {
                let Some(prop) = find_object(&root, at).and_then(|o| o.get(key)) else {
                    continue;
                };
                prop.remove();
                (
                    find_object(&root, at).is_some_and(|o| o.properties().is_empty()),
                    *at,
                )
            }
            JsonOp::Default { .. } => continue,
        };
        changed = true;
        // What install created for us alone goes too: the containers on our
        // path that are left empty, innermost first.
        if container {
            prune_empty(&root, at);
        }
    }
    if !changed {
        return Ok(Some(text.to_string()));
    }
    // Nothing left but the defaults we set: the file was ours alone.
    let defaults: serde_json::Map<String, Value> = ops
        .iter()
        .filter_map(|op| match op {
            JsonOp::Default { key, value } => Some((key.to_string(), value.clone())),
            _ => None,
        })
        .collect();
    let only_defaults = root.to_serde_value() == Some(Value::Object(defaults));
    let out = root.to_string();
    let has_comment = out.contains("//") || out.contains("/*");
    Ok((!only_defaults || has_comment).then_some(out))
}

fn prune_empty(root: &CstRootNode, at: &[&str]) {
    for depth in (1..=at.len()).rev() {
        let (last, parents) = at[..depth].split_last().expect("depth >= 1");
        let Some(parent) = find_object(root, parents) else {
            return;
        };
        let Some(prop) = parent.get(last) else {
            return;
        };
        let empty = match prop.value() {
            Some(CstNode::Container(CstContainerNode::Array(a))) => a.elements().is_empty(),
            Some(CstNode::Container(CstContainerNode::Object(o))) => o.properties().is_empty(),
            _ => false,
        };
        if !empty {
            return;
        }
        prop.remove();
    }
}

fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

fn parse_toml(text: &str) -> anyhow::Result<toml_edit::DocumentMut> {
    text.parse::<toml_edit::DocumentMut>()
        .map_err(|e| anyhow::anyhow!("not valid TOML: {}", e.to_string().trim()))
}

fn toml_install(text: &str, at: &[&str], key: &str, value: &Value) -> anyhow::Result<String> {
    let mut doc = parse_toml(text)?;
    let mut table = doc.as_table_mut();
    for (i, k) in at.iter().enumerate() {
        let item = table.entry(k).or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        });
        table = item
            .as_table_mut()
            .with_context(|| format!("[{}] is not a table", at[..=i].join(".")))?;
    }
    let new = toml_item(value)?;
    let same = table
        .get(key)
        .is_some_and(|old| old.to_string().trim() == new.to_string().trim());
    if !same {
        table.insert(key, new);
    }
    Ok(doc.to_string())
}

fn toml_uninstall(text: &str, at: &[&str], key: &str) -> anyhow::Result<Option<String>> {
    let mut doc = parse_toml(text)?;
    let mut table = doc.as_table_mut();
    for k in at {
        match table.get_mut(k).and_then(|i| i.as_table_mut()) {
            Some(t) => table = t,
            None => return Ok(Some(text.to_string())),
        }
    }
    if table.remove(key).is_none() {
        return Ok(Some(text.to_string()));
    }
    // Parent tables left empty and implicit (never written as a header by
    // the user) go with it.
    for depth in (1..=at.len()).rev() {
        let mut t = doc.as_table_mut();
        for k in &at[..depth - 1] {
            t = t[k].as_table_mut().expect("walked above");
        }
        let last = at[depth - 1];
        let empty = t[last]
            .as_table()
            .is_some_and(|c| c.is_empty() && c.is_implicit());
        if !empty {
            break;
        }
        t.remove(last);
    }
    let out = doc.to_string();
    Ok((!out.trim().is_empty()).then_some(out))
}

fn toml_item(v: &Value) -> anyhow::Result<toml_edit::Item> {
    Ok(match v {
        Value::Object(o) => {
            let mut t = toml_edit::Table::new();
            for (k, v) in o {
                t.insert(k, toml_item(v)?);
            }
            toml_edit::Item::Table(t)
        }
        other => toml_edit::Item::Value(toml_value(other)?),
    })
}

fn toml_value(v: &Value) -> anyhow::Result<toml_edit::Value> {
    Ok(match v {
        Value::String(s) => s.as_str().into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().context("a number TOML cannot hold")?.into(),
        },
        Value::Array(a) => {
            let mut arr = toml_edit::Array::new();
            for x in a {
                arr.push(toml_value(x)?);
            }
            toml_edit::Value::Array(arr)
        }
        Value::Object(o) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, v) in o {
                t.insert(k, toml_value(v)?);
            }
            toml_edit::Value::InlineTable(t)
        }
        Value::Null => bail!("TOML has no null"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hooks_edit(cmd: &str) -> Edit {
        Edit::Json(vec![
            JsonOp::Item {
                at: &["hooks", "Stop"],
                value: json!({"hooks": [{"type": "command", "command": cmd}]}),
            },
            JsonOp::Prop {
                at: &["mcpServers"],
                key: "ckpt",
                value: json!({"command": "ckptctl", "args": ["mcp"]}),
            },
        ])
    }

    const USER: &str = r#"{
  // the user's own comment
  "model": "opus",
  "hooks": {
    "Stop": [
      { "hooks": [ { "type": "command", "command": "notify-send done" } ] }
    ]
  },
  "mcpServers": {
    "docs": { "command": "docs-mcp" }
  }
}
"#;

    #[test]
    fn json_install_keeps_the_rest_and_is_idempotent_and_reversible() {
        let e = hooks_edit("/bin/ckptctl turn-end --from-hook=claude-code");
        let once = e.install(Some(USER)).unwrap();
        assert!(once.contains("// the user's own comment"));
        assert!(once.contains("notify-send done"));
        assert!(once.contains("turn-end --from-hook=claude-code"));
        assert_eq!(e.install(Some(&once)).unwrap(), once);
        assert!(e.installed(Some(&once)).unwrap());
        assert!(!e.installed(Some(USER)).unwrap());
        assert_eq!(e.uninstall(&once).unwrap().as_deref(), Some(USER));
        // A one-line container becomes multi-line when ours goes in, and
        // stays so: the same JSON, other bytes.
        let inline = r#"{"mcpServers": {"docs": {"command": "d"}}}"#;
        let back = e
            .uninstall(&e.install(Some(inline)).unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&back).unwrap(),
            serde_json::from_str::<Value>(inline).unwrap()
        );
        // A moved ckptctl replaces the old entry rather than adding one.
        let moved = hooks_edit("/new/ckptctl turn-end --from-hook=claude-code")
            .install(Some(&once))
            .unwrap();
        assert_eq!(moved.matches(MARKER).count(), 1);
        assert!(moved.contains("/new/ckptctl"));
    }

    /// Claude Code rewrites `~/.claude.json` without a final newline, Gemini
    /// CLI its settings in its own layout: ours is still installed, and a
    /// second install leaves the file's bytes alone.
    #[test]
    fn a_file_the_agent_rewrote_in_other_bytes_is_still_installed() {
        let e = hooks_edit("/bin/ckptctl turn-end --from-hook=claude-code");
        let once = e.install(Some("{\"model\": \"opus\"}\n")).unwrap();
        let doc: Value = serde_json::from_str(&once).unwrap();
        for rewritten in [
            serde_json::to_string(&doc).unwrap(),
            serde_json::to_string_pretty(&doc).unwrap(),
            once.trim_end().to_string(),
        ] {
            assert!(e.installed(Some(&rewritten)).unwrap(), "{rewritten}");
            assert_eq!(e.install(Some(&rewritten)).unwrap(), rewritten);
        }
    }

    #[test]
    fn json_file_created_by_install_goes_with_uninstall() {
        let e = hooks_edit("ckptctl turn-end --from-hook=x");
        let new = e.install(None).unwrap();
        let v: Value = serde_json::from_str(&new).unwrap();
        assert_eq!(
            v["hooks"]["Stop"][0]["hooks"][0]["command"],
            "ckptctl turn-end --from-hook=x"
        );
        assert_eq!(e.uninstall(&new).unwrap(), None);
    }

    #[test]
    fn json_that_is_not_ours_to_change_is_an_error() {
        let e = hooks_edit("ckptctl turn-end --from-hook=x");
        let err = e.install(Some("{\"hooks\": ")).unwrap_err().to_string();
        assert!(err.contains("not valid JSON"), "{err}");
        let err = e.install(Some("[1]")).unwrap_err().to_string();
        assert!(err.contains("not an object"), "{err}");
        let err = e
            .install(Some(r#"{"hooks": {"Stop": 3}}"#))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"hooks.Stop\" is not an array"), "{err}");
    }

    #[test]
    fn toml_install_keeps_the_rest_and_is_reversible() {
        let user = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let e = Edit::Toml {
            at: &["mcp_servers"],
            key: "ckpt",
            value: json!({"command": "/bin/ckptctl", "args": ["mcp"]}),
        };
        let once = e.install(Some(user)).unwrap();
        assert!(once.starts_with(user), "{once}");
        assert!(once.contains("[mcp_servers.ckpt]"), "{once}");
        assert_eq!(e.install(Some(&once)).unwrap(), once);
        assert_eq!(e.uninstall(&once).unwrap().as_deref(), Some(user));
        let fresh = e.install(None).unwrap();
        assert_eq!(e.uninstall(&fresh).unwrap(), None);
        assert!(e
            .install(Some("mcp_servers = 3\n"))
            .unwrap_err()
            .to_string()
            .contains("[mcp_servers] is not a table"));
    }

    #[test]
    fn own_files_are_removed_only_while_they_carry_the_tag() {
        let e = Edit::File {
            text: format!("// {OWN_FILE_TAG}\nx\n"),
            executable: false,
        };
        let text = e.install(None).unwrap();
        assert_eq!(e.uninstall(&text).unwrap(), None);
        assert_eq!(e.uninstall("mine\n").unwrap().as_deref(), Some("mine\n"));
    }
}
