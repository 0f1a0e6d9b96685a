//! Tolerant reading of `ckptctl --json` output. The exact field names are
//! the daemon team's to choose; everything the bench needs from them is
//! looked up here and nowhere else.

use serde_json::Value;

/// The JSON document on stdout: the whole text, or else its last line that
/// parses (in case a progress line or a warning precedes it).
pub fn parse(stdout: &str) -> Option<Value> {
    let t = stdout.trim();
    if t.is_empty() {
        return None;
    }
    serde_json::from_str(t).ok().or_else(|| {
        t.lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
    })
}

fn as_id(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().trim_start_matches('#').parse().ok(),
        Value::Object(m) => ["id", "turn", "number", "turn_id"]
            .iter()
            .find_map(|k| m.get(*k).and_then(as_id)),
        _ => None,
    }
}

/// The turn id in a `turn-start` reply: `{"turn": N}`, or `turn_id`, or
/// `{"turn": {"id": N}}`, at the top level or one level down.
pub fn turn_id(v: &Value) -> Option<u64> {
    const KEYS: [&str; 3] = ["turn", "turn_id", "id"];
    let obj = v.as_object()?;
    if let Some(n) = KEYS.iter().find_map(|k| obj.get(*k).and_then(as_id)) {
        return Some(n);
    }
    obj.values()
        .filter(|x| x.is_object())
        .find_map(|x| KEYS.iter().find_map(|k| x.get(*k).and_then(as_id)))
}

/// Plain-text fallback: the first number after the word "turn".
pub fn turn_id_from_text(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let at = lower.find("turn")?;
    lower[at..]
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())
        .and_then(|w| w.parse().ok())
}

/// A "degraded" flag anywhere in the reply, with its reason if one is given.
pub fn degraded(v: &Value) -> Option<String> {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k.to_ascii_lowercase().contains("degraded") {
                    match x {
                        Value::Bool(true) => {
                            let why = ["reason", "why", "degraded_reason"]
                                .iter()
                                .find_map(|r| m.get(*r).and_then(Value::as_str))
                                .unwrap_or("no reason given");
                            return Some(why.to_string());
                        }
                        Value::String(s) if !s.is_empty() => return Some(s.clone()),
                        Value::Object(_) | Value::Array(_) if !is_empty(x) => {
                            return Some(x.to_string())
                        }
                        _ => {}
                    }
                }
                if let Some(r) = degraded(x) {
                    return Some(r);
                }
            }
            None
        }
        Value::Array(a) => a.iter().find_map(degraded),
        _ => None,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Null => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_shapes() {
        for s in [
            r#"{"project":"/p","turn":7}"#,
            r#"{"turn":{"id":7,"label":"x"}}"#,
            r#"{"ok":true,"data":{"turn_id":7}}"#,
            "progress\n{\"turn\":\"7\"}",
        ] {
            assert_eq!(parse(s).as_ref().and_then(turn_id), Some(7), "{s}");
        }
        assert_eq!(turn_id_from_text("opened turn 12 in /p"), Some(12));
    }

    #[test]
    fn degraded_shapes() {
        let v = parse(r#"{"projects":[{"degraded":true,"reason":"watch limit"}]}"#).unwrap();
        assert_eq!(degraded(&v).as_deref(), Some("watch limit"));
        let v = parse(r#"{"degraded":null,"x":{"degraded":false}}"#).unwrap();
        assert_eq!(degraded(&v), None);
    }
}
