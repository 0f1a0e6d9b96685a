//! Transcripts written in each agent's format (see the adapters' headers),
//! grown turn by turn as the agent would, with positions recorded at each
//! turn-start the way a hook call records them.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;

fn append(path: &Path, entries: &[Value]) {
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for e in entries {
        writeln!(f, "{e}").unwrap();
    }
}

fn lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn turn<'a>(turn: i64, agent: &'a str, transcript: &'a str, pos: &'a str) -> TurnConversation<'a> {
    TurnConversation {
        turn,
        agent: Some(agent),
        session: Some("orig-session"),
        transcript: Some(transcript),
        position: Some(pos),
    }
}

fn recorded(agent: &str, path: &Path) -> String {
    record(agent, path.to_str().unwrap()).expect("position recorded")
}

struct Claude {
    n: u32,
    parent: Option<String>,
}

impl Claude {
    fn entry(&mut self, kind: &str, extra: Value) -> Value {
        self.n += 1;
        let uuid = format!("u{:03}", self.n);
        let mut e = json!({
            "parentUuid": self.parent, "isSidechain": false, "userType": "external",
            "cwd": "/w/app", "sessionId": "orig-session", "version": "2.0.55",
            "gitBranch": "main", "type": kind, "uuid": uuid,
            "timestamp": format!("2026-12-01T10:{:02}:00.000Z", self.n),
        });
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        self.parent = Some(uuid);
        e
    }

    fn prompt(&mut self, text: &str) -> Value {
        self.entry(
            "user",
            json!({"message": {"role": "user", "content": text}}),
        )
    }

    /// An assistant reply with one tool call and its result.
    fn tool_turn(&mut self, file: &str) -> Vec<Value> {
        vec![
            self.entry(
                "assistant",
                json!({"message": {"id": "msg_1", "role": "assistant", "model": "claude-x",
                "content": [{"type": "tool_use", "id": format!("toolu_{file}"), "name": "Edit",
                             "input": {"file_path": file}}]}, "requestId": "req_1"}),
            ),
            self.entry(
                "user",
                json!({"message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("toolu_{file}"), "content": "ok"}]},
                "toolUseResult": {"filePath": file}}),
            ),
            self.entry(
                "assistant",
                json!({"message": {"role": "assistant",
                "content": [{"type": "text", "text": "Done."}]}}),
            ),
        ]
    }
}

/// Three turns and a compaction between turns 2 and 3; returns the
/// positions recorded at each turn-start and the line count before each
/// prompt.
fn claude_transcript(path: &Path) -> (Vec<String>, Vec<usize>) {
    let mut c = Claude { n: 0, parent: None };
    let mut positions = Vec::new();
    let mut before = Vec::new();
    fs::write(path, "").unwrap();
    append(
        path,
        &[json!({"type": "summary", "summary": "old", "leafUuid": "elsewhere"})],
    );
    for (i, file) in ["a.rs", "b.rs", "c.rs"].iter().enumerate() {
        if i == 2 {
            let last = c.parent.clone();
            c.parent = None;
            let boundary = c.entry(
                "system",
                json!({"subtype": "compact_boundary",
                "content": "Conversation compacted", "logicalParentUuid": last,
                "compactMetadata": {"trigger": "manual", "preTokens": 1000}}),
            );
            let summary = c.entry(
                "user",
                json!({"isCompactSummary": true,
                "message": {"role": "user", "content": "This session is being continued…"}}),
            );
            append(path, &[boundary, summary]);
        }
        positions.push(recorded("claude-code", path));
        before.push(lines(path).len());
        let prompt = c.prompt(&format!("edit {file}"));
        let rest = c.tool_turn(file);
        append(path, &[prompt]);
        append(path, &rest);
    }
    (positions, before)
}

#[test]
fn claude_code_fork_holds_the_entries_before_the_turn_under_a_new_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orig-session.jsonl");
    let (positions, before) = claude_transcript(&path);
    let original = fs::read(&path).unwrap();
    for n in [1usize, 2] {
        let t = turn(
            n as i64 + 1,
            "claude-code",
            path.to_str().unwrap(),
            &positions[n],
        );
        let r = fork(&t, false);
        assert_eq!(r.skipped, None, "{r:?}");
        let new = r.forked_session.clone().unwrap();
        assert_eq!(
            r.resume_command.as_deref(),
            Some(&*format!("claude --resume {new}"))
        );
        let fork_path = PathBuf::from(r.path.unwrap());
        assert_eq!(fork_path, dir.path().join(format!("{new}.jsonl")));
        let all = lines(&path);
        let forked = lines(&fork_path);
        // The summary naming no entry of the fork is dropped.
        let expect: Vec<&Value> = all[1..before[n]].iter().collect();
        assert_eq!(forked.len(), expect.len());
        assert_eq!(r.entries, Some(forked.len()));
        let uuids: Vec<&str> = forked.iter().map(|e| e["uuid"].as_str().unwrap()).collect();
        for (f, o) in forked.iter().zip(expect) {
            assert_eq!(f["uuid"], o["uuid"]);
            assert_eq!(f["sessionId"], new.as_str());
            let mut back = f.clone();
            back["sessionId"] = o["sessionId"].clone();
            assert_eq!(&back, o, "everything else copied through");
            if let Some(p) = f["parentUuid"].as_str() {
                assert!(uuids.contains(&p), "parent {p} in the fork");
            }
        }
    }
    assert_eq!(
        fs::read(&path).unwrap(),
        original,
        "the original is untouched"
    );
}

#[test]
fn a_prompt_already_written_at_turn_start_is_left_out_and_late_replies_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut c = Claude { n: 0, parent: None };
    let p1 = c.prompt("first");
    append(&path, &[p1]);
    let reply = c.tool_turn("a.rs");
    // The reply's last entry lags: it lands after turn 2's hook call.
    append(&path, &reply[..2]);
    let p2 = c.prompt("second");
    append(&path, std::slice::from_ref(&p2));
    let pos = recorded("claude-code", &path);
    let recorded_pos: Position = serde_json::from_str(&pos).unwrap();
    assert_eq!(recorded_pos.last.as_deref(), reply[1]["uuid"].as_str());
    // Rewritten as if written late: the lagging entry after the prompt's
    // place. Build that file: p1, reply0, reply1, reply2, p2.
    let late = dir.path().join("late.jsonl");
    append(
        &late,
        &[lines(&path)[0].clone(), reply[0].clone(), reply[1].clone()],
    );
    let pos_late = recorded("claude-code", &late);
    append(&late, &[reply[2].clone(), p2]);
    let r = fork(
        &turn(2, "claude-code", late.to_str().unwrap(), &pos_late),
        true,
    );
    assert_eq!(r.entries, Some(4), "{r:?}");
    assert!(r.dry_run);
    assert_eq!(
        (r.forked_session, r.path, r.resume_command),
        (None, None, None),
        "a dry run names no session it did not make"
    );
    let files = fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, 2, "a dry run writes nothing");
    let r = fork(&turn(2, "claude-code", path.to_str().unwrap(), &pos), false);
    assert_eq!(r.entries, Some(3), "{r:?}");
}

#[test]
fn truncated_rewritten_corrupted_and_newer_transcripts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let (positions, _) = claude_transcript(&path);
    let p = path.to_str().unwrap();
    let original = fs::read(&path).unwrap();
    let why = |bytes: &[u8]| {
        fs::write(&path, bytes).unwrap();
        fork(&turn(3, "claude-code", p, &positions[2]), false)
            .skipped
            .unwrap_or_else(|| panic!("not skipped: {}", String::from_utf8_lossy(bytes)))
    };
    let truncated = why(&original[..original.len() / 3]);
    assert!(truncated.contains("shorter"), "{truncated}");
    let text = String::from_utf8(original.clone()).unwrap();
    // Each change keeps the length, so the recorded position still falls
    // on a line's end.
    let corrupted = why(text
        .replacen("\"type\":\"assistant\",", "\"type\":\"assistant\" ", 1)
        .as_bytes());
    assert!(corrupted.contains("not JSON"), "{corrupted}");
    let newer = why(text.replace("2.0.55", "3.0.55").as_bytes());
    assert!(newer.contains("newer than this ckpt knows"), "{newer}");
    let renamed = why(text.replace("\"uuid\":\"u0", "\"uuid\":\"x0").as_bytes());
    assert!(renamed.contains("rewritten"), "{renamed}");
    let missing = why(text.replace("\"sessionId\":", "\"sessionXd\":").as_bytes());
    assert!(missing.contains("no `sessionId`"), "{missing}");
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no fork written"
    );
}

#[test]
fn turn_one_and_unknown_agents_and_missing_positions_are_skipped_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let (positions, _) = claude_transcript(&path);
    let p = path.to_str().unwrap();
    let r = fork(&turn(1, "claude-code", p, &positions[0]), false);
    assert!(r.skipped.unwrap().contains("no prompt before turn 1"));
    let r = fork(&turn(2, "cursor", p, &positions[1]), false);
    assert!(r.skipped.unwrap().contains("cursor has no session adapter"));
    let mut t = turn(2, "claude-code", p, &positions[1]);
    t.position = None;
    assert!(fork(&t, false)
        .skipped
        .unwrap()
        .contains("no conversation position"));
}

fn codex_line(ts: u32, kind: &str, payload: Value) -> Value {
    json!({"timestamp": format!("2026-12-01T10:00:{ts:02}.000Z"), "type": kind, "payload": payload})
}

fn codex_user(ts: u32, text: &str) -> Value {
    codex_line(
        ts,
        "response_item",
        json!({"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": text}]}),
    )
}

#[test]
fn codex_fork_gets_a_new_id_and_names_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("rollout-2026-12-01T10-00-00-0199a000-0000-7000-8000-000000000001.jsonl");
    let meta = codex_line(
        0,
        "session_meta",
        json!({"id": "0199a000-0000-7000-8000-000000000001",
        "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/w/app", "originator": "codex_cli_rs",
        "cli_version": "0.63.0", "source": "cli", "model_provider": "openai"}),
    );
    append(
        &path,
        &[
            meta,
            codex_user(
                1,
                "<environment_context>\n  <cwd>/w/app</cwd>\n</environment_context>",
            ),
        ],
    );
    let mut positions = Vec::new();
    for t in 0..3u32 {
        positions.push(recorded("codex", &path));
        let ts = 10 + t * 10;
        append(
            &path,
            &[
                codex_user(ts, &format!("task {t}")),
                codex_line(
                    ts + 1,
                    "event_msg",
                    json!({"type": "user_message", "message": format!("task {t}")}),
                ),
                codex_line(
                    ts + 2,
                    "turn_context",
                    json!({"cwd": "/w/app", "model": "gpt-5"}),
                ),
                codex_line(
                    ts + 3,
                    "response_item",
                    json!({"type": "function_call", "name": "shell",
                "arguments": "{\"command\":[\"ls\"]}", "call_id": format!("call_{t}")}),
                ),
                codex_line(
                    ts + 4,
                    "response_item",
                    json!({"type": "function_call_output",
                "call_id": format!("call_{t}"), "output": "a.rs"}),
                ),
                codex_line(
                    ts + 5,
                    "response_item",
                    json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "done"}]}),
                ),
            ],
        );
        if t == 1 {
            append(
                &path,
                &[codex_line(
                    ts + 6,
                    "compacted",
                    json!({"message": "summary of turns 0-1"}),
                )],
            );
        }
    }
    let original = fs::read(&path).unwrap();
    let r = fork(
        &turn(3, "codex", path.to_str().unwrap(), &positions[2]),
        false,
    );
    assert_eq!(r.skipped, None, "{r:?}");
    let new = r.forked_session.unwrap();
    let forked_path = PathBuf::from(r.path.unwrap());
    let name = forked_path
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        name.starts_with("rollout-") && name.ends_with(&format!("-{new}.jsonl")),
        "{name}"
    );
    let forked = lines(&forked_path);
    let all = lines(&path);
    assert_eq!(
        forked.len(),
        2 + 6 + 7,
        "meta, context, turn 0, turn 1 and its compaction"
    );
    assert_eq!(forked[0]["payload"]["id"], new.as_str());
    assert_eq!(forked[0]["payload"]["forked_from_id"], "orig-session");
    assert_eq!(forked[0]["payload"]["cli_version"], "0.63.0");
    assert_eq!(&forked[1..], &all[1..15]);
    assert_eq!(r.resume_command.unwrap(), format!("codex resume {new}"));
    assert_eq!(fs::read(&path).unwrap(), original);
    let text = String::from_utf8(original)
        .unwrap()
        .replace("0.63.0", "1.63.0");
    fs::write(&path, text).unwrap();
    let r = fork(
        &turn(3, "codex", path.to_str().unwrap(), &positions[2]),
        false,
    );
    assert!(r.skipped.unwrap().contains("written by Codex 1.63.0"));
}

fn gemini_msg(id: &str, kind: &str, text: &str) -> Value {
    json!({"id": id, "timestamp": "2026-12-01T10:00:00.000Z", "type": kind, "content": [{"text": text}]})
}

#[test]
fn gemini_fork_rewrites_the_metadata_and_keeps_the_messages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session-2026-12-01T10-00-orig-ses.jsonl");
    append(
        &path,
        &[json!({"sessionId": "orig-session", "projectHash": "abc",
        "startTime": "2026-12-01T10:00:00.000Z", "lastUpdated": "2026-12-01T10:00:00.000Z", "kind": "main"})],
    );
    let mut positions = Vec::new();
    for t in 0..3 {
        positions.push(recorded("gemini", &path));
        let mut reply = gemini_msg(&format!("g{t}"), "gemini", "");
        reply["toolCalls"] = json!([{"id": format!("c{t}"), "name": "write_file", "args": {"file_path": "a.rs"},
            "status": "success", "timestamp": "2026-12-01T10:00:01.000Z"}]);
        append(
            &path,
            &[
                gemini_msg(&format!("u{t}"), "user", &format!("task {t}")),
                reply.clone(),
                json!({"$set": {"lastUpdated": "2026-12-01T10:00:02.000Z"}}),
            ],
        );
        // The same message again, updated: Gemini appends, the reader keeps the last.
        reply["tokens"] = json!({"input": 1, "output": 2, "cached": 0, "total": 3});
        append(
            &path,
            &[reply, json!({"$set": {"summary": format!("after {t}")}})],
        );
    }
    let original = fs::read(&path).unwrap();
    let r = fork(
        &turn(2, "gemini", path.to_str().unwrap(), &positions[1]),
        false,
    );
    assert_eq!(r.skipped, None, "{r:?}");
    let new = r.forked_session.unwrap();
    let forked = lines(&PathBuf::from(r.path.unwrap()));
    let all = lines(&path);
    assert_eq!(forked.len(), 6);
    assert_eq!(forked[0]["sessionId"], new.as_str());
    assert_eq!(forked[0]["projectHash"], "abc");
    assert_eq!(&forked[1..], &all[1..6]);
    assert_eq!(r.resume_command.unwrap(), format!("gemini --resume {new}"));
    assert_eq!(fs::read(&path).unwrap(), original);
    let text = String::from_utf8(original).unwrap();
    let unknown = text.replacen(
        "{\"$set\":{\"lastUpdated\"",
        "{\"$sex\":{\"lastUpdated\"",
        1,
    );
    fs::write(&path, unknown).unwrap();
    let r = fork(
        &turn(2, "gemini", path.to_str().unwrap(), &positions[1]),
        false,
    );
    assert!(r.skipped.unwrap().contains("no kind this ckpt knows"));
    let legacy = text.replacen("\"projectHash\"", "\"projectHasX\"", 1);
    fs::write(&path, legacy).unwrap();
    let r = fork(
        &turn(2, "gemini", path.to_str().unwrap(), &positions[1]),
        false,
    );
    assert!(r
        .skipped
        .unwrap()
        .contains("does not begin with its metadata"));
}

#[test]
fn redo_names_the_original_session() {
    let t = TurnConversation {
        turn: 3,
        agent: Some("gemini"),
        session: Some("s-1"),
        transcript: Some("/t.jsonl"),
        position: None,
    };
    let r = resume_original(&t);
    assert_eq!(r.resume_command.as_deref(), Some("gemini --resume s-1"));
    assert_eq!(r.path.as_deref(), Some("/t.jsonl"));
}

#[test]
fn a_position_reads_only_the_tail_and_a_missing_file_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let missing = position(adapter("claude-code").unwrap(), &path).unwrap();
    assert_eq!(
        missing,
        Position {
            bytes: 0,
            last: None
        }
    );
    let mut c = Claude { n: 0, parent: None };
    // Far more than the tail window, so only its end is read.
    while fs::metadata(&path).map_or(0, |m| m.len()) < 4 * TAIL_BYTES {
        let e = c.entry(
            "assistant",
            json!({"message": {"role": "assistant", "content": "x".repeat(900)}}),
        );
        append(&path, &[e]);
    }
    let len = fs::metadata(&path).unwrap().len();
    let p = position(adapter("claude-code").unwrap(), &path).unwrap();
    assert_eq!(p.bytes, len);
    assert_eq!(p.last, c.parent);
    // An entry being written (no newline yet) is not part of it.
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"type\":\"user\",\"uu")
        .unwrap();
    assert_eq!(position(adapter("claude-code").unwrap(), &path).unwrap(), p);
}

#[test]
fn an_entry_larger_than_the_first_read_is_found_in_the_whole_window() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut c = Claude { n: 0, parent: None };
    let big = |c: &mut Claude| {
        c.entry(
            "assistant",
            json!({"message": {"role": "assistant", "content": "y".repeat(20 << 10)}}),
        )
    };
    let (a, b) = (big(&mut c), big(&mut c));
    append(&path, &[a, b]);
    let len = fs::metadata(&path).unwrap().len();
    let p = position(adapter("claude-code").unwrap(), &path).unwrap();
    assert_eq!((p.bytes, p.last.as_deref()), (len, Some("u002")));
    // The prompt already written: the position ends before it, at the big
    // entry, which only the whole window holds.
    let prompt = c.prompt("next");
    append(&path, &[prompt]);
    assert_eq!(position(adapter("claude-code").unwrap(), &path).unwrap(), p);
}

/// Writes an agent's recorded transcript (`testdata/`) line by line as the
/// agent did, recording a position, as a hook call does, whenever the file
/// holds the next of `hooks` lines (0: not created yet); returns them.
fn replay(path: &Path, agent: &str, lines: &[&str], hooks: &[usize]) -> Vec<String> {
    let write = |from: usize, to: usize| {
        if from < to {
            let mut f = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap();
            for l in &lines[from..to] {
                writeln!(f, "{l}").unwrap();
            }
        }
    };
    let mut written = 0;
    let mut positions = Vec::new();
    for &h in hooks {
        write(written, h);
        written = h;
        positions.push(recorded(agent, path));
    }
    write(written, lines.len());
    positions
}

/// Three `claude -p` prompts (the second and third with `--resume`), as
/// Claude Code 2.1.197 wrote them; long texts shortened.
const CLAUDE_2_1_197: &str = include_str!("testdata/claude-code-2.1.197.jsonl");
/// Its lines when each prompt's `UserPromptSubmit` hook ran (copies the
/// hook took in that recording): no file yet, then each prompt's enqueue
/// and dequeue already written.
const CLAUDE_HOOKS: [usize; 3] = [0, 9, 15];
/// Where each turn's entries begin: its prompt's enqueue.
const CLAUDE_TURNS: [usize; 3] = [0, 7, 13];
const CLAUDE_PROMPTS: [&str; 3] = ["secret prompt one", "second SECRET2", "third SECRET3"];

#[test]
fn a_claude_code_fork_keeps_no_text_of_the_rewound_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("85c0eec7-97d7-4986-9b65-04851a8b663f.jsonl");
    let recorded_lines: Vec<&str> = CLAUDE_2_1_197.lines().collect();
    let positions = replay(&path, "claude-code", &recorded_lines, &CLAUDE_HOOKS);
    let all = lines(&path);
    for n in [2usize, 3] {
        let p = path.to_str().unwrap();
        let r = fork(&turn(n as i64, "claude-code", p, &positions[n - 1]), false);
        assert_eq!(r.skipped, None, "{r:?}");
        let text = fs::read_to_string(r.path.unwrap()).unwrap();
        for later in &CLAUDE_PROMPTS[n - 1..] {
            assert!(!text.contains(later), "turn {n}'s fork holds {later:?}");
        }
        let forked: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            forked.len(),
            CLAUDE_TURNS[n - 1],
            "the entries before turn {n} began"
        );
        for (f, o) in forked.iter().zip(&all) {
            let mut back = f.clone();
            back["sessionId"] = o["sessionId"].clone();
            assert_eq!(&back, o);
        }
    }
}

#[test]
fn a_prompt_queued_while_the_turn_before_ran_is_left_out_of_the_fork() {
    // Typed while turn 2 ran: Claude Code enqueues it among turn 2's
    // entries, and only its dequeue comes just before its own prompt.
    let mut recorded_lines: Vec<&str> = CLAUDE_2_1_197.lines().collect();
    let enqueue = recorded_lines.remove(CLAUDE_TURNS[2]);
    assert!(enqueue.contains("\"enqueue\""), "{enqueue}");
    recorded_lines.insert(10, enqueue);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let positions = replay(&path, "claude-code", &recorded_lines, &CLAUDE_HOOKS);
    let r = fork(
        &turn(3, "claude-code", path.to_str().unwrap(), &positions[2]),
        false,
    );
    assert_eq!(r.skipped, None, "{r:?}");
    let text = fs::read_to_string(r.path.unwrap()).unwrap();
    assert!(!text.contains(CLAUDE_PROMPTS[2]), "{text}");
    // The earlier prompts' queue entries stay; only the moved one is gone.
    let all = lines(&path);
    let expect: Vec<&Value> = all[..14]
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 10)
        .map(|(_, e)| e)
        .collect();
    let forked: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(forked.len(), expect.len());
    for (f, o) in forked.iter().zip(expect) {
        assert_eq!(f["type"], o["type"]);
        assert_eq!(f.get("content"), o.get("content"));
        assert_eq!(f.get("uuid"), o.get("uuid"));
    }
}

/// A `codex exec` prompt and two `codex exec resume` prompts, as Codex
/// 0.171.0 wrote them; long texts shortened.
const CODEX_0_171: &str = include_str!("testdata/codex-0.171.0.jsonl");
const CODEX_SESSION: &str = "01a235ac-6a63-7e31-b973-750a2901b01f";
/// Its lines when each prompt's hook ran: after the turn's `task_started`
/// and `turn_context` (a fourth prompt's hook in the same recording saw
/// exactly that).
const CODEX_HOOKS: [usize; 3] = [7, 17, 27];
/// The same, had the hook run before the turn wrote anything.
const CODEX_HOOKS_EARLY: [usize; 3] = [1, 14, 24];
/// Where each turn's lines begin: its `task_started`.
const CODEX_TURNS: [usize; 3] = [1, 15, 25];

fn codex_fork(hooks: &[usize], n: usize) -> (tempfile::TempDir, Report, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join(format!("rollout-2026-12-02T07-33-41-{CODEX_SESSION}.jsonl"));
    let recorded_lines: Vec<&str> = CODEX_0_171.lines().collect();
    let positions = replay(&path, "codex", &recorded_lines, hooks);
    let t = TurnConversation {
        turn: n as i64,
        agent: Some("codex"),
        session: Some(CODEX_SESSION),
        transcript: path.to_str(),
        position: Some(&positions[n - 1]),
    };
    let r = fork(&t, false);
    assert_eq!(r.skipped, None, "{r:?}");
    let forked = lines(Path::new(r.path.as_ref().unwrap()));
    (dir, r, forked)
}

#[test]
fn a_codex_fork_ends_before_the_rewound_turn_began() {
    for hooks in [CODEX_HOOKS, CODEX_HOOKS_EARLY] {
        for n in [2usize, 3] {
            let (dir, _, forked) = codex_fork(&hooks, n);
            let all = lines(
                &dir.path()
                    .join(format!("rollout-2026-12-02T07-33-41-{CODEX_SESSION}.jsonl")),
            );
            assert_eq!(
                forked.len(),
                CODEX_TURNS[n - 1],
                "hooks at {hooks:?}, turn {n}"
            );
            assert_eq!(&forked[1..], &all[1..forked.len()]);
            let last_turn = forked
                .iter()
                .rev()
                .find(|e| {
                    e["payload"]["type"] == "task_started"
                        || e["payload"]["type"] == "task_complete"
                })
                .unwrap();
            assert_eq!(
                last_turn["payload"]["type"], "task_complete",
                "no turn left open"
            );
        }
    }
}

#[test]
fn a_codex_fork_names_itself_in_session_id_as_codex_own_fork_does() {
    let (_dir, r, forked) = codex_fork(&CODEX_HOOKS, 3);
    let new = r.forked_session.unwrap();
    let meta = &forked[0]["payload"];
    assert_eq!(meta["id"], new.as_str());
    assert_eq!(
        meta["session_id"],
        new.as_str(),
        "the id resumed hooks send"
    );
    assert_eq!(meta["forked_from_id"], CODEX_SESSION);
    let original: Value = serde_json::from_str(CODEX_0_171.lines().next().unwrap()).unwrap();
    let original = original["payload"].as_object().unwrap();
    let meta = meta.as_object().unwrap();
    for (k, v) in original {
        if k != "id" && k != "session_id" {
            assert_eq!(&meta[k], v, "{k} copied through");
        }
    }
    let keys: Vec<&str> = meta.keys().map(String::as_str).collect();
    let want: Vec<&str> = original
        .keys()
        .map(String::as_str)
        .chain(["forked_from_id"])
        .collect();
    assert_eq!(keys, want, "keys keep their order");
}

#[test]
fn a_codex_0_171_rollout_forks_as_a_full_copy() {
    // World state, token usage records, settings events and `ordinal`s
    // are copied byte for byte: a prefix of the original, which Codex
    // 0.171.0 resumes (`codex exec resume` on such a fork ran its turn).
    let (dir, r, forked) = codex_fork(&CODEX_HOOKS, 3);
    let original = fs::read_to_string(
        dir.path()
            .join(format!("rollout-2026-12-02T07-33-41-{CODEX_SESSION}.jsonl")),
    )
    .unwrap();
    let copy = fs::read_to_string(r.path.unwrap()).unwrap();
    let (_, rest) = copy.split_once('\n').unwrap();
    let (_, original_rest) = original.split_once('\n').unwrap();
    assert!(
        original_rest.starts_with(rest),
        "every line but the first is the original's"
    );
    for kind in ["world_state", "token_usage_record", "turn_context"] {
        assert!(forked.iter().any(|e| e["type"] == kind), "{kind}");
    }
    assert!(forked
        .iter()
        .any(|e| e["payload"]["type"] == "thread_settings_applied"));
    let ordinals: Vec<u64> = forked
        .iter()
        .map(|e| e["ordinal"].as_u64().unwrap())
        .collect();
    assert_eq!(ordinals, (0..forked.len() as u64).collect::<Vec<_>>());
    assert_eq!(forked[0]["payload"]["history_mode"], "paginated");
    assert_eq!(
        adapter("codex").unwrap().detect(&forked).unwrap(),
        "0.171.0"
    );
}

/// Two `gemini -p` prompts (the second with `--resume`), each writing a
/// file through a tool, as Gemini CLI 0.61.0 recorded them: each message
/// then a `$set` of `lastUpdated`; the reply appended again with its tool
/// calls; the tool's result a `user` message holding a `functionResponse`.
const GEMINI_0_61: &str = include_str!("testdata/gemini-cli-0.61.0.jsonl");
/// Its lines when each prompt's `BeforeAgent` hook ran (copies the hook
/// took in that recording): the prompt not yet written.
const GEMINI_HOOKS: [usize; 2] = [2, 13];
/// Turn 1's tool result.
const GEMINI_RESULT: usize = 7;

#[test]
fn a_gemini_tool_result_is_no_prompt() {
    let recorded_lines: Vec<&str> = GEMINI_0_61.lines().collect();
    assert!(recorded_lines[GEMINI_RESULT].contains("functionResponse"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session-2026-12-02T08-17-4f3bdd6e.jsonl");
    // The result's `$set` not complete yet: the position ends after the
    // result, which is turn 1's, not before it as before a prompt.
    let upto = |n: usize| {
        recorded_lines[..n]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    };
    let through_result = upto(GEMINI_RESULT + 1);
    fs::write(&path, format!("{through_result}{{\"$set\":{{\"lastUp")).unwrap();
    let p = position(adapter("gemini").unwrap(), &path).unwrap();
    assert_eq!(
        (p.bytes, p.last.as_deref()),
        (
            through_result.len() as u64,
            Some("ba2e66cf-45a8-4092-9461-ed467d86a8b4")
        )
    );

    // A position recorded before turn 1's result: turn 2's fork still ends
    // before turn 2's prompt, not before the result.
    fs::write(&path, upto(GEMINI_RESULT)).unwrap();
    let before_result = recorded("gemini", &path);
    fs::write(&path, upto(recorded_lines.len())).unwrap();
    let all = lines(&path);
    for pos in [before_result, replay_positions(&recorded_lines)[1].clone()] {
        let r = fork(&turn(2, "gemini", path.to_str().unwrap(), &pos), false);
        assert_eq!(r.skipped, None, "{r:?}");
        let new = r.forked_session.unwrap();
        let forked = lines(Path::new(&r.path.unwrap()));
        assert_eq!(forked.len(), GEMINI_HOOKS[1], "{pos}");
        for (f, o) in forked.iter().zip(&all).skip(1) {
            let mut back = f.clone();
            // The resumed session's `$set` of its id names the fork.
            if let Some(id) = back.pointer_mut("/$set/sessionId") {
                assert_eq!(*id, new.as_str());
                *id = o["$set"]["sessionId"].clone();
            }
            assert_eq!(&back, o);
        }
    }
}

/// The positions Gemini's hooks recorded, from a replay of its lines.
fn replay_positions(recorded_lines: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    replay(
        &dir.path().join("s.jsonl"),
        "gemini",
        recorded_lines,
        &GEMINI_HOOKS,
    )
}
