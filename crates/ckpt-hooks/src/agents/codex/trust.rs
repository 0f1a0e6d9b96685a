//! Whether Codex will run ckpt's hooks: it runs a hook from `hooks.json`
//! only once the user trusted it in `/hooks`, which records, in the user's
//! `config.toml`, `[hooks.state."<hooks.json>:<event>:<group>:<handler>"]`
//! with `trusted_hash`, a hash of the hook as configured. A changed command
//! (a moved `ckptctl`, a reinstall) changes the hash, and Codex then skips
//! the hook silently until it is trusted again.
//!
//! The key and hash as openai/codex computes them
//! (`codex-rs/hooks/src/engine/discovery.rs`, `append_matcher_groups`,
//! `command_hook_hash`; `codex-rs/config/src/fingerprint.rs`,
//! `version_for_toml`): SHA-256 of the compact JSON, keys sorted, of
//! `{"event_name": <event in snake case>, "matcher"?, "hooks": [<the one
//! handler, its timeout filled in>]}`, as `sha256:<hex>`; fields that are
//! unset are left out. Checked against the hashes Codex 0.171.0's
//! `app-server` lists (`hooks/list`, `currentHash`).

use ckpt_core::HashOf;
use std::path::Path;

use anyhow::Context;
use serde_json::{json, Map, Value};

use super::super::{Scope, Target};
use super::{codex_home, SHORT_TIMEOUT};
use crate::edit::MARKER;

/// The events whose timeout Codex clamps to [`SHORT_TIMEOUT`].
const SHORT_EVENTS: [&str; 2] = ["session_end", "interrupt"];

/// How Codex sees one of ckpt's hooks.
#[derive(Debug, PartialEq, Eq)]
enum Trust {
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, and changed since.
    Modified,
    /// Turned off in `/hooks`.
    Disabled,
}

/// `Spec::pending` for Codex: what keeps it from running ckpt's installed
/// hooks at the target's scope, if anything.
pub fn pending(t: &Target) -> anyhow::Result<Option<String>> {
    let hooks_file = super::hooks_json(t);
    let Some(text) = crate::files::read(&hooks_file)? else {
        return Ok(None);
    };
    let hooks: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not valid JSON", hooks_file.display()))?;
    let config = codex_home(t.home).join("config.toml");
    let state = match crate::files::read(&config)? {
        Some(text) => text
            .parse::<toml_edit::DocumentMut>()
            .map_err(|e| anyhow::anyhow!("{}: not valid TOML: {e}", config.display()))?,
        None => toml_edit::DocumentMut::new(),
    };
    if t.scope == Scope::Project && !project_trusted(&state, t.project) {
        return Ok(Some(format!(
            "installed, but Codex does not trust this project, so it ignores its .codex/ \
             (hooks and MCP server) — run `codex` in {} and trust the folder",
            t.project.display()
        )));
    }
    let states = state
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(|s| s.as_table_like());
    // Codex names the file by the path it loaded it from, which may be
    // the real path (a `CODEX_HOME` it canonicalized) or not.
    let shown = hooks_file.display().to_string();
    let real = hooks_file
        .canonicalize()
        .ok()
        .map(|p| p.display().to_string());
    let found = ours(&hooks_file, &hooks)
        .into_iter()
        .map(|(key, hash)| {
            let entry = states.and_then(|s| {
                s.get(&key).or_else(|| {
                    let real = real.as_deref()?;
                    s.get(&key.replacen(&shown, real, 1))
                })
            });
            let field = |name: &str| entry.and_then(|e| e.get(name)).and_then(|v| v.as_value());
            if field("enabled").and_then(|v| v.as_bool()) == Some(false) {
                return Trust::Disabled;
            }
            match field("trusted_hash").and_then(|v| v.as_str()) {
                Some(h) if h == hash => Trust::Trusted,
                Some(_) => Trust::Modified,
                None => Trust::Untrusted,
            }
        })
        .collect::<Vec<_>>();
    Ok(message(&found).map(str::to_string))
}

/// Whether the user's `config.toml` trusts the project
/// (`[projects."<root>"] trust_level = "trusted"`), under its path as given
/// or as resolved.
fn project_trusted(config: &toml_edit::DocumentMut, root: &Path) -> bool {
    let Some(projects) = config.get("projects").and_then(|p| p.as_table_like()) else {
        return false;
    };
    let trusted = |p: &Path| {
        projects
            .get(&p.to_string_lossy())
            .and_then(|e| e.get("trust_level"))
            .and_then(|v| v.as_str())
            == Some("trusted")
    };
    trusted(root) || root.canonicalize().is_ok_and(|real| trusted(&real))
}

/// One line for what the hooks' states need, worst first.
fn message(found: &[Trust]) -> Option<&'static str> {
    if found.contains(&Trust::Modified) {
        Some(
            "installed, changed since you trusted it (a moved or reinstalled ckptctl): \
             Codex skips it until you trust it again — open `/hooks` in Codex",
        )
    } else if found.contains(&Trust::Untrusted) {
        Some("installed, not trusted yet — open `/hooks` in Codex")
    } else if found.contains(&Trust::Disabled) {
        Some("installed, turned off in Codex's `/hooks`")
    } else {
        None
    }
}

/// The `hooks.state` key and current hash of each of ckpt's handlers in a
/// `hooks.json`.
fn ours(hooks_file: &Path, hooks: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(events) = hooks.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in events {
        let event = snake_case(event);
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                let ours = handler
                    .get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.contains(MARKER));
                if ours {
                    let key = format!("{}:{event}:{g}:{h}", hooks_file.display());
                    out.push((key, hash(&event, group.get("matcher"), handler)));
                }
            }
        }
    }
    out
}

/// Codex's `command_hook_hash` of one command handler.
fn hash(event: &str, matcher: Option<&Value>, handler: &Value) -> String {
    let timeout = handler
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(600)
        .max(1);
    let timeout = if SHORT_EVENTS.contains(&event) {
        timeout.min(SHORT_TIMEOUT)
    } else {
        timeout
    };
    let mut h = Map::new();
    h.insert(
        "async".into(),
        handler.get("async").cloned().unwrap_or(json!(false)),
    );
    h.insert(
        "command".into(),
        handler.get("command").cloned().unwrap_or(Value::Null),
    );
    if let Some(m) = handler.get("statusMessage").filter(|v| !v.is_null()) {
        h.insert("statusMessage".into(), m.clone());
    }
    h.insert("timeout".into(), json!(timeout));
    h.insert("type".into(), json!("command"));
    let mut identity = Map::new();
    identity.insert("event_name".into(), json!(event));
    identity.insert("hooks".into(), json!([Value::Object(h)]));
    // Only the tool events match on anything (`matcher_pattern_for_event`).
    if let Some(m) = matcher.filter(|m| !m.is_null()) {
        if event.ends_with("tool_use") {
            identity.insert("matcher".into(), m.clone());
        }
    }
    // Keys were inserted in sorted order: the map keeps it (`preserve_order`).
    let text = serde_json::to_string(&Value::Object(identity)).expect("JSON values serialize");
    format!("sha256:{}", ckpt_core::Hash::of(text.as_bytes()).to_hex())
}

/// `UserPromptSubmit` → `user_prompt_submit`, as in the key.
fn snake_case(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys and hashes Codex 0.171.0's `app-server` listed (`hooks/list`)
    /// for this `hooks.json` at `/tmp/cxh/home/.codex/hooks.json`.
    #[test]
    fn keys_and_hashes_match_what_codex_computes() {
        let hooks = json!({"hooks": {
            "UserPromptSubmit": [{"hooks": [{"type": "command",
                "command": "/x/ckptctl turn-start --from-hook=codex", "timeout": 30}]}],
            "Stop": [{"hooks": [{"type": "command",
                "command": "/x/ckptctl turn-end --from-hook=codex", "timeout": 30}]}],
            "SessionEnd": [{"hooks": [{"type": "command",
                "command": "/x/ckptctl turn-end --from-hook=codex", "timeout": 30}]}],
            "Interrupt": [{"hooks": [{"type": "command",
                "command": "/x/ckptctl turn-end --from-hook=codex", "timeout": 3}]}],
            "PreToolUse": [{"hooks": [{"type": "command", "command": "notify-send"}]}],
        }});
        let mut found = ours(Path::new("/tmp/cxh/home/.codex/hooks.json"), &hooks);
        found.sort();
        let p = "/tmp/cxh/home/.codex/hooks.json";
        let mut expected = vec![
            (
                format!("{p}:user_prompt_submit:0:0"),
                "sha256:f3fc1a26ada6743cdd2e47ca3e6d40507a186619c1e2720b1da2d3002b1e61c8",
            ),
            (
                format!("{p}:stop:0:0"),
                "sha256:2406b6b31e051ef5517982af554cb5e72c6f3cb25b11b964e592ff14aa1fe01a",
            ),
            // Listed with a timeout of 30 in the file, hashed clamped to 3.
            (
                format!("{p}:session_end:0:0"),
                "sha256:47fee41b8e4cf813e48a8ed204f0f769d6210d70366ae3d191f5620c7a9eadcf",
            ),
            (
                format!("{p}:interrupt:0:0"),
                "sha256:ee20cd92240482f493738316780fc070fe0a84ea2b66a83fc59c4ddb927cb6ce",
            ),
        ];
        expected.sort();
        let expected: Vec<(String, String)> = expected
            .into_iter()
            .map(|(k, h)| (k, h.to_string()))
            .collect();
        assert_eq!(found, expected, "the user's own hook is not ckpt's");
    }

    #[test]
    fn the_worst_state_decides_the_message() {
        use Trust::*;
        assert_eq!(message(&[Trusted, Trusted]), None);
        assert!(message(&[Trusted, Untrusted])
            .unwrap()
            .contains("not trusted yet"));
        assert!(message(&[Untrusted, Modified])
            .unwrap()
            .contains("trust it again"));
        assert!(message(&[Trusted, Disabled])
            .unwrap()
            .contains("turned off"));
        assert_eq!(message(&[]), None);
    }
}

#[cfg(test)]
mod project_trust_tests {
    use super::*;

    #[test]
    fn only_a_trusted_level_for_the_project_trusts_it() {
        let config: toml_edit::DocumentMut = r#"
[projects."/src/app"]
trust_level = "trusted"
[projects."/src/other"]
trust_level = "untrusted"
"#
        .parse()
        .unwrap();
        assert!(project_trusted(&config, Path::new("/src/app")));
        assert!(!project_trusted(&config, Path::new("/src/other")));
        assert!(!project_trusted(&config, Path::new("/src/none")));
        assert!(!project_trusted(
            &toml_edit::DocumentMut::new(),
            Path::new("/src/app")
        ));
    }
}
