//! `ckptctl ledger export --format sarif`: the slop ledger as SARIF 2.1.0,
//! which code scanning (GitHub's and others') shows on the lines. Buckets
//! are the rules, severities the levels; each entry's turn, agent, status
//! and anchor travel in `properties`; its location is where its lines are
//! now (the anchor's span), relative to `%SRCROOT%`. Entries no longer
//! open are suppressed, with the reason given.

use ckpt_proto::{AnchorState, Bucket, LedgerEntry, LedgerFilter, LedgerStatus, Severity};
use ckptctl::commands::Ctx;
use serde_json::{json, Map, Value};

use crate::agent_trace::percent_encoded;

pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

pub fn run(ctx: &Ctx) -> anyhow::Result<u8> {
    let l = ckptctl::commands::ledger::query(
        ctx,
        LedgerFilter {
            history: true,
            ..LedgerFilter::default()
        },
    )?;
    ckptctl::output::json(&log(&l.entries))?;
    Ok(0)
}

/// What each bucket's rule says.
fn describe(b: Bucket) -> (&'static str, &'static str) {
    match b {
        Bucket::CompatShim => (
            "CompatShim",
            "A compatibility shim an agent left: code kept only so old callers keep working.",
        ),
        Bucket::UnmigratedCallers => (
            "UnmigratedCallers",
            "Callers still on the old way after an agent's change.",
        ),
        Bucket::DuplicateConcept => (
            "DuplicateConcept",
            "A second copy of a concept the code already has.",
        ),
        Bucket::NamingDrift => (
            "NamingDrift",
            "Names that drifted from the ones the code uses elsewhere.",
        ),
        Bucket::StaleDocsTests => (
            "StaleDocsTests",
            "Docs or tests that no longer say what the code does.",
        ),
        Bucket::SuspectedDeadCode => ("SuspectedDeadCode", "Code that nothing may reach any more."),
        Bucket::ToolGap => (
            "ToolGap",
            "A workaround for a tool's limit, to remove when the tool can.",
        ),
    }
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Low => "note",
        Severity::Medium => "warning",
        Severity::High | Severity::Critical => "error",
    }
}

/// The SARIF log of `entries`.
pub fn log(entries: &[LedgerEntry]) -> Value {
    let rules: Vec<Value> = Bucket::ALL
        .iter()
        .map(|&b| {
            let (name, text) = describe(b);
            json!({
                "id": b.as_str(),
                "name": name,
                "shortDescription": { "text": text },
                "defaultConfiguration": { "level": "warning" },
            })
        })
        .collect();
    let results: Vec<Value> = entries.iter().map(result).collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "ckpt",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

fn result(e: &LedgerEntry) -> Value {
    let b = &e.body;
    let rule_index = Bucket::ALL
        .iter()
        .position(|&x| x == b.bucket)
        .expect("every bucket is in ALL");
    let mut location = json!({
        "physicalLocation": {
            "artifactLocation": { "uri": percent_encoded(&b.path.display(), b"/"), "uriBaseId": "%SRCROOT%" },
        }
    });
    // Where the lines are now; a changed anchor's lines are no longer one
    // span, so the span they were added at stands for them.
    let span = match e.anchor.state {
        AnchorState::Fresh | AnchorState::Moved => e.anchor.span.or(b.span),
        AnchorState::Changed => b.span,
        AnchorState::Gone => None,
    };
    if let Some(s) = span {
        location["physicalLocation"]["region"] = json!({ "startLine": s.start, "endLine": s.end });
    }
    let mut props = Map::new();
    props.insert("ledgerId".into(), e.id.into());
    props.insert("turn".into(), e.turn.into());
    props.insert("agent".into(), b.agent.clone().into());
    props.insert("session".into(), b.session.clone().into());
    props.insert("status".into(), e.status.as_str().into());
    props.insert("severity".into(), b.severity.as_str().into());
    props.insert("confidence".into(), b.confidence.into());
    props.insert("owner".into(), b.owner.clone().into());
    props.insert("anchor".into(), e.anchor.state.as_str().into());
    let mut r = json!({
        "ruleId": b.bucket.as_str(),
        "ruleIndex": rule_index,
        "level": level(b.severity),
        "message": { "text": b.note },
        "locations": [location],
        // Stable across runs, so a scanner tracks the entry, not the line.
        "partialFingerprints": { "ckptLedgerEntry/v1": format!("{}:{}", b.created_ns, e.id) },
        "properties": props,
    });
    if e.status != LedgerStatus::Open {
        let why = e
            .history
            .as_ref()
            .and_then(|h| h.last())
            .and_then(|ev| ev.why.clone())
            .unwrap_or_else(|| format!("{} in ckpt's ledger", e.status));
        r["suppressions"] =
            json!([{ "kind": "external", "status": "accepted", "justification": why }]);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckpt_proto::{EntryBody, LedgerAnchor, LedgerEvent, LineSpan, RelPath};

    fn entry(id: i64, bucket: Bucket, severity: Severity, status: LedgerStatus) -> LedgerEntry {
        LedgerEntry {
            id,
            body: EntryBody {
                bucket,
                severity,
                confidence: 0.8,
                owner: "agent:claude-code".into(),
                path: RelPath::new("src/a b.rs").unwrap(),
                span: Some(LineSpan { start: 3, end: 4 }),
                span_text: None,
                note: "old API kept".into(),
                agent: Some("claude-code".into()),
                session: Some("s1".into()),
                created_ns: 7,
            },
            turn: Some(2),
            status,
            rewound_by: None,
            anchor: LedgerAnchor {
                state: AnchorState::Moved,
                span: Some(LineSpan { start: 9, end: 10 }),
            },
            history: Some(vec![LedgerEvent {
                status,
                who: None,
                why: Some("kept for 1.x".into()),
                at_ns: 8,
            }]),
        }
    }

    pub fn validator() -> jsonschema::Validator {
        let schema: Value =
            serde_json::from_str(include_str!("../schemas/sarif-schema-2.1.0.json")).unwrap();
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap()
    }

    #[test]
    fn the_ledger_is_valid_sarif_with_its_facts_in_place() {
        let entries = vec![
            entry(
                1,
                Bucket::CompatShim,
                Severity::Critical,
                LedgerStatus::Open,
            ),
            entry(2, Bucket::ToolGap, Severity::Low, LedgerStatus::WontFix),
        ];
        let doc = log(&entries);
        let v = validator();
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
        let r = &doc["runs"][0]["results"];
        assert_eq!(r[0]["level"], "error");
        assert_eq!(r[1]["level"], "note");
        let loc = &r[0]["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "src/a%20b.rs");
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert_eq!(
            loc["region"]["startLine"], 9,
            "the anchor's span, not the added one"
        );
        assert_eq!(r[0]["properties"]["turn"], 2);
        assert_eq!(r[0]["properties"]["agent"], "claude-code");
        assert_eq!(r[1]["properties"]["status"], "wont-fix");
        assert_eq!(r[1]["suppressions"][0]["justification"], "kept for 1.x");
        assert!(r[0].get("suppressions").is_none());
        let rules = doc["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap();
        assert_eq!(
            rules[r[1]["ruleIndex"].as_u64().unwrap() as usize]["id"],
            "tool-gap"
        );
        // A broken document is caught: the validator is not a formality.
        let mut bad = doc.clone();
        bad["runs"][0]["results"][0]["level"] = "fatal".into();
        assert!(!v.is_valid(&bad));
    }
}
