//! Provenance that travels, through the real binaries: `ckptctl trace
//! export` (Agent Trace 0.1.0, validated against the published schema and
//! compared with `blame` line by line), `blame --rev` and `trace export
//! --commit` on committed history, git-ai notes written in one clone and
//! read in another through a bare remote, and the ledger as SARIF 2.1.0.

use std::path::Path;

use ckpt_e2e::*;
use serde_json::Value;

fn validator(schema: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(schema).expect("a vendored schema is JSON");
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the schema builds")
}

fn agent_trace_schema() -> jsonschema::Validator {
    validator(include_str!(
        "../../../crates/ckpt-trace/schemas/agent-trace-0.1.0.schema.json"
    ))
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
}

fn turn(env: &Env, proj: &Path, extra: &[&str], script: &str) -> i64 {
    let mut args = vec!["turn-start", "--agent", "claude-code", "--session", "s1"];
    args.extend_from_slice(extra);
    let t = env.ctl_json(proj, &args);
    sh(proj, script);
    env.ctl_ok(proj, &["turn-end"]);
    t["turn"].as_i64().expect("a turn id")
}

/// A line as `blame --json` gives it: (line, text, origin, turn).
type Attributed = (u64, String, String, Option<i64>);

fn blamed(b: &Value) -> Vec<Attributed> {
    b["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| {
            (
                l["line"].as_u64().unwrap(),
                l["text"].as_str().unwrap().to_owned(),
                l["origin"].as_str().unwrap().to_owned(),
                l["turn"].as_i64(),
            )
        })
        .collect()
}

/// Each line of `path` as the trace record attributes it, in blame's
/// words: a range of a turn's conversation is `turn`, `human` is
/// `between-turns`, `unknown` without a turn is `baseline`.
fn traced(record: &Value, path: &str, text: &[String]) -> Vec<Attributed> {
    let file = record["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} not in {record:#}"));
    let mut lines: Vec<Option<(String, Option<i64>)>> = vec![None; text.len()];
    for c in file["conversations"].as_array().unwrap() {
        let turn = c["related"].as_array().and_then(|r| {
            r.iter()
                .find(|x| x["type"] == "turn")
                .and_then(|x| x["url"].as_str()?.strip_prefix("ckpt:turn/")?.parse().ok())
        });
        let origin = match (c["contributor"]["type"].as_str().unwrap(), turn) {
            (_, Some(_)) => "turn",
            ("human", None) => "between-turns",
            ("unknown", None) => "baseline",
            other => panic!("contributor {other:?}"),
        };
        for r in c["ranges"].as_array().unwrap() {
            let (s, e) = (
                r["start_line"].as_u64().unwrap(),
                r["end_line"].as_u64().unwrap(),
            );
            let mut hashed = String::new();
            for l in s..=e {
                let slot = &mut lines[(l - 1) as usize];
                assert!(slot.is_none(), "line {l} in two ranges: {record:#}");
                *slot = Some((origin.to_owned(), turn));
                hashed.push_str(&text[(l - 1) as usize]);
                hashed.push('\n');
            }
            assert_eq!(
                r["content_hash"].as_str().unwrap(),
                format!("sha256:{}", sha256_hex(hashed.as_bytes())),
                "{r}"
            );
        }
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let (origin, turn) = l.unwrap_or_else(|| panic!("line {} in no range", i + 1));
            (i as u64 + 1, text[i].clone(), origin, turn)
        })
        .collect()
}

fn texts(b: &Value) -> Vec<String> {
    blamed(b).into_iter().map(|l| l.1).collect()
}

#[test]
fn a_trace_attributes_every_line_as_blame_does() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo(
        "app",
        &[
            ("f.py", b"def a():\n  return 1\nx = 1\nkeep = 0\n"),
            ("g.txt", b"g\n"),
        ],
    );
    env.ctl_ok(&proj, &["watch"]);
    // The agent's transcript names its model, as Claude Code's does.
    let transcript = env.dir("transcripts").join("s1.jsonl");
    std::fs::write(
        &transcript,
        "{\"type\":\"assistant\",\"message\":{\"model\":\"claude-opus-4-8\",\"content\":[]}}\n",
    )
    .unwrap();
    let t1 = turn(
        &env,
        &proj,
        &["--transcript", transcript.to_str().unwrap()],
        "sed -i 's/return 1/return 2/' f.py && printf 'def b():\\n  return 3\\n' >> f.py",
    );
    // A formatter, run as a turn of its own: it re-indents turn 1's lines.
    env.ctl_ok(
        &proj,
        &["run", "--", "sed", "-i", "s/^  return/    return/", "f.py"],
    );
    // The user's own edit, no turn open.
    sh(&proj, "sed -i '1i # header' f.py");
    env.ctl_ok(&proj, &["sync"]);
    // An agent's turn that deletes a line.
    let t3 = turn(&env, &proj, &[], "sed -i '/^x = 1$/d' f.py");

    let record_path = env.dir("out").join("trace.json");
    env.ctl_ok(
        &proj,
        &["trace", "export", "--out", record_path.to_str().unwrap()],
    );
    let record: Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    assert_valid(&agent_trace_schema(), &record);
    assert_eq!(record["version"], "0.1.0");
    assert_eq!(record["tool"]["name"], "ckpt");
    assert!(record.get("vcs").is_none(), "no revision for the work tree");

    let b = env.ctl_json(&proj, &["blame", "f.py", "--json"]);
    let want = blamed(&b);
    assert_eq!(traced(&record, "f.py", &texts(&b)), want, "{record:#}");
    // What the file holds, so the comparison above is about something.
    let origins: Vec<(&str, &str, Option<i64>)> = want
        .iter()
        .map(|(_, t, o, turn)| (t.as_str(), o.as_str(), *turn))
        .collect();
    let formatter = want[2].3.expect("the formatter's turn");
    assert_eq!(
        origins,
        [
            ("# header", "between-turns", None),
            ("def a():", "baseline", None),
            ("    return 2", "turn", Some(formatter)),
            ("keep = 0", "baseline", None),
            ("def b():", "turn", Some(t1)),
            ("    return 3", "turn", Some(formatter)),
        ]
    );
    // g.txt no turn touched: not in the record.
    let paths: Vec<&str> = record["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["f.py"]);

    // Who: the agent's turn is `ai` with the model its transcript names;
    // the formatter's (`ckptctl run`, no agent) is `unknown`.
    let convs = record["files"][0]["conversations"].as_array().unwrap();
    let of_turn = |t: i64| {
        convs
            .iter()
            .find(|c| {
                c["related"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|x| x["url"] == format!("ckpt:turn/{t}")))
            })
            .unwrap_or_else(|| panic!("no conversation of turn {t}: {record:#}"))
    };
    assert_eq!(of_turn(t1)["contributor"]["type"], "ai");
    assert_eq!(
        of_turn(t1)["contributor"]["model_id"],
        "anthropic/claude-opus-4-8"
    );
    assert!(of_turn(t1)["related"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["type"] == "session" && r["url"] == "ckpt:session/s1"));
    assert_eq!(of_turn(formatter)["contributor"]["type"], "unknown");

    let meta = &record["metadata"]["dev.ckpt"];
    assert_eq!(meta["captured_by"], "watcher");
    // The formatter re-spaced turn 1's two lines: where they were before it.
    let moved: Vec<(u64, u64, i64)> = meta["reformatted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["formatted_by"]["turn"], formatter, "{r}");
            (
                r["start_line"].as_u64().unwrap(),
                r["pre_formatter"]["start_line"].as_u64().unwrap(),
                r["pre_formatter"]["written_by"]["turn"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(moved, [(3, 2, t1), (6, 6, t1)], "{meta:#}");
    // The line turn 3 deleted, numbered in its pre-image (the lines the
    // others replaced are there too).
    let deletions: Vec<&Value> = meta["deletions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["turn"] == t3)
        .collect();
    assert_eq!(deletions.len(), 1, "{meta:#}");
    assert_eq!(deletions[0]["start_line"], 4);
    assert_eq!(
        deletions[0]["content_hash"],
        format!("sha256:{}", sha256_hex(b"x = 1\n"))
    );

    // One turn: only the files it touched; stdout without --out.
    sh(&proj, "echo more > g.txt");
    let t4 = turn(&env, &proj, &[], "echo agent >> g.txt");
    let one = env.ctl_json(&proj, &["trace", "export", &t4.to_string()]);
    assert_valid(&agent_trace_schema(), &one);
    let b = env.ctl_json(&proj, &["blame", "g.txt", "--json"]);
    assert_eq!(traced(&one, "g.txt", &texts(&b)), blamed(&b));
    assert_eq!(one["files"].as_array().unwrap().len(), 1);
}

/// Commits a file's state; the next turn starts in a later second than
/// the commit (git's times are whole seconds).
fn commit(dir: &Path, message: &str) {
    git(dir, &["commit", "-q", "-am", message]);
    let ct: u64 = git(dir, &["show", "-s", "--format=%ct", "HEAD"])
        .stdout
        .trim()
        .parse()
        .unwrap();
    wait_for(
        "the commit's second to pass",
        std::time::Duration::from_secs(3),
        || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                > ct
        },
    );
}

#[test]
fn blame_at_a_commit_names_the_turns_that_wrote_it() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("f.txt", b"one\ntwo\nthree\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let t1 = turn(
        &env,
        &proj,
        &[],
        "sed -i 's/two/TWO/' f.txt && echo four >> f.txt",
    );
    sh(&proj, "sed -i '1i by hand' f.txt");
    commit(&proj, "first");
    let first = git(&proj, &["rev-parse", "HEAD"]).stdout;
    // After the commit: a turn that rewrites a committed line.
    let t2 = turn(
        &env,
        &proj,
        &[],
        "sed -i 's/TWO/2/' f.txt && echo five >> f.txt",
    );

    let at = env.ctl_json(&proj, &["blame", "f.txt", "--rev", "HEAD", "--json"]);
    let got: Vec<(String, String, Option<i64>)> = blamed(&at)
        .into_iter()
        .map(|(_, t, o, turn)| (t, o, turn))
        .collect();
    let s = |x: &str| x.to_string();
    assert_eq!(
        got,
        [
            (s("by hand"), s("between-turns"), None),
            (s("one"), s("baseline"), None),
            (s("TWO"), s("turn"), Some(t1)),
            (s("three"), s("baseline"), None),
            (s("four"), s("turn"), Some(t1)),
        ],
        "{at}"
    );
    // The work tree's blame has turn 2's lines.
    let now = env.ctl_json(&proj, &["blame", "f.txt", "--json"]);
    assert_eq!(now["lines"][2]["turn"], t2, "{now}");
    // Text output as `blame` prints it.
    let text = env.ctl_ok(&proj, &["blame", "f.txt", "--rev", "HEAD"]);
    assert!(
        text.lines().nth(2).unwrap().contains(&format!("t{t1}")),
        "{text}"
    );

    // The same commit as an Agent Trace record.
    let rec = env.ctl_json(&proj, &["trace", "export", "--commit", "HEAD"]);
    assert_valid(&agent_trace_schema(), &rec);
    assert_eq!(rec["vcs"]["type"], "git");
    assert_eq!(rec["vcs"]["revision"], first.trim());
    assert_eq!(traced(&rec, "f.txt", &texts(&at)), blamed(&at));

    // Refused clearly: a revision that is not there, a file not in it.
    let out = env.ctl(&proj, &["blame", "f.txt", "--rev", "nosuchrev"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("nosuchrev names no commit"), "{out:?}");
    sh(&proj, "echo new > new.txt");
    let out = env.ctl(&proj, &["blame", "new.txt", "--rev", "HEAD"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(out.stderr.contains("not in"), "{out:?}");
}

#[test]
fn notes_written_in_one_clone_give_the_same_blame_in_another() {
    let env = Env::new();
    let _d = env.start_daemon();
    let remote = env.path().join("remote.git");
    git(
        env.path(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    let a = env.git_repo(
        "a",
        &[("src/f.txt", b"one\ntwo\nthree\n"), ("o.txt", b"o\n")],
    );
    git(&a, &["remote", "add", "origin", remote.to_str().unwrap()]);
    git(&a, &["push", "-q", "origin", "main"]);
    env.ctl_ok(&a, &["watch"]);
    let t1 = turn(
        &env,
        &a,
        &[],
        "sed -i 's/two/TWO/' src/f.txt && echo four >> src/f.txt",
    );
    sh(&a, "echo by hand >> src/f.txt && echo o2 >> o.txt");
    commit(&a, "work");

    // Nothing is written to git until asked.
    let out = env.ctl(&a, &["trace", "notes", "read", "HEAD"]);
    assert_eq!(out.code(), 1, "{out:?}");
    assert!(
        out.stderr.contains("no note under refs/notes/ai"),
        "{out:?}"
    );

    let w = env.ctl_json(&a, &["trace", "notes", "write", "HEAD~1..HEAD"]);
    assert_eq!(w["notes"].as_array().unwrap().len(), 1, "{w}");
    assert_eq!(w["notes"][0]["lines"], 2, "{w}");
    let note = git(&a, &["notes", "--ref=ai", "show", "HEAD"]).stdout;
    // The session key as git-ai makes it: s_ + SHA-256("claude:s1")[..14].
    let session = format!("s_{}", &sha256_hex(b"claude:s1")[..14]);
    let first = note.lines().next().unwrap();
    assert_eq!(first, "src/f.txt", "{note}");
    let att = note.lines().nth(1).unwrap();
    assert!(att.starts_with(&format!("  {session}::t_")), "{note}");
    assert!(att.ends_with(" 2,4"), "{note}");
    assert!(
        !note.contains("o.txt"),
        "a file no agent wrote is left out: {note}"
    );
    let (_, meta) = note.split_once("\n---\n").expect("two sections");
    let meta: Value = serde_json::from_str(meta).unwrap();
    assert_eq!(meta["schema_version"], "authorship/3.0.0");
    assert_eq!(meta["sessions"][&session]["agent_id"]["tool"], "claude");
    assert_eq!(meta["sessions"][&session]["agent_id"]["id"], "s1");

    let in_a = env.ctl_json(&a, &["blame", "src/f.txt", "--notes", "--json"]);
    // The notes say what ckpt's blame at the commit says.
    let at = env.ctl_json(&a, &["blame", "src/f.txt", "--rev", "HEAD", "--json"]);
    let by_turn: Vec<bool> = blamed(&at).iter().map(|l| l.3 == Some(t1)).collect();
    let by_note: Vec<bool> = in_a["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| !l["author"].is_null())
        .collect();
    assert_eq!(by_note, by_turn, "{in_a:#}");

    // Shared as the README says; another clone, which ckpt never watched.
    git(&a, &["push", "-q", "origin", "main", "refs/notes/ai"]);
    git(env.path(), &["clone", "-q", remote.to_str().unwrap(), "b"]);
    let b = env.path().join("b");
    git(
        &b,
        &["fetch", "-q", "origin", "+refs/notes/ai:refs/notes/ai"],
    );
    let in_b = env.ctl_json(&b, &["blame", "src/f.txt", "--notes", "--json"]);
    assert_eq!(in_b, in_a);
    assert_eq!(in_b["lines"][1]["author"]["agent_id"]["tool"], "claude");
    let text = env.ctl_ok(&b, &["blame", "src/f.txt", "--notes"]);
    assert!(text.lines().nth(1).unwrap().contains("claude"), "{text}");
    assert!(text.lines().next().unwrap().contains("untracked"), "{text}");
    let read = env.ctl_json(&b, &["trace", "notes", "read", "--json"]);
    assert_eq!(
        read["files"]["src/f.txt"][0]["ranges"],
        serde_json::json!([[2, 2], [4, 4]])
    );
}

#[test]
fn the_ledger_exports_as_valid_sarif() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("app", &[("src/a.rs", b"fn a() {}\nfn b() {}\nfn c() {}\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_json(&proj, &["turn-start", "--agent", "codex"]);
    let add = |target: &str, bucket: &str, severity: &str| {
        env.ctl_json(
            &proj,
            &[
                "ledger",
                "add",
                target,
                "--bucket",
                bucket,
                "--severity",
                severity,
                "--confidence",
                "0.9",
                "--note",
                "kept for old callers",
            ],
        )["id"]
            .as_i64()
            .unwrap()
    };
    let shim = add("src/a.rs:2-3", "compat-shim", "high");
    let gap = add("src/a.rs", "tool-gap", "low");
    env.ctl_ok(&proj, &["turn-end"]);
    env.ctl_ok(
        &proj,
        &[
            "ledger",
            "resolve",
            &gap.to_string(),
            "--wont-fix",
            "--why",
            "the tool cannot yet",
        ],
    );
    // The shim's lines move down by one.
    sh(&proj, "sed -i '1i // top' src/a.rs");
    env.ctl_ok(&proj, &["sync"]);

    let out = env.ctl_ok(&proj, &["ledger", "export", "--format", "sarif"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_valid(
        &validator(include_str!(
            "../../../crates/ckpt-trace/schemas/sarif-schema-2.1.0.json"
        )),
        &doc,
    );
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let by_id = |id: i64| {
        results
            .iter()
            .find(|r| r["properties"]["ledgerId"] == id)
            .unwrap_or_else(|| panic!("no result {id}: {doc:#}"))
    };
    let r = by_id(shim);
    assert_eq!(r["ruleId"], "compat-shim");
    assert_eq!(r["level"], "error");
    assert_eq!(r["properties"]["agent"], "codex");
    assert_eq!(r["properties"]["status"], "open");
    assert!(r["properties"]["turn"].is_i64());
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "src/a.rs");
    assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    assert_eq!(
        loc["region"]["startLine"], 3,
        "where the lines are now: {r}"
    );
    assert_eq!(loc["region"]["endLine"], 4);
    let g = by_id(gap);
    assert_eq!(g["level"], "note");
    assert_eq!(g["properties"]["status"], "wont-fix");
    assert_eq!(g["suppressions"][0]["justification"], "the tool cannot yet");
    assert!(
        g["locations"][0]["physicalLocation"]
            .get("region")
            .is_none(),
        "whole file"
    );
}
