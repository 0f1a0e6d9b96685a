//! Output that reads like git's (issue 32 item 3, issue 33's empty turns):
//! colour and the pager only at a terminal, `diff --stat`/`--name-only`/
//! `--name-status`, renames and mode changes, long listings summarised,
//! `log`'s columns, rewinds, lanes and empty turns; completions and man
//! pages from the sibling.

use std::path::Path;
use std::process::Command;

use ckpt_e2e::*;

const ESC: &str = "\u{1b}[";

/// A project whose turn 1 renames a file, renames and edits another,
/// makes a script executable and adds 25 files.
fn renaming_turn(env: &Env) -> std::path::PathBuf {
    let seq: String = (1..=30).map(|i| format!("{i}\n")).collect();
    let proj = env.git_repo(
        "p",
        &[
            ("a.txt", b"one\ntwo\nthree\n"),
            ("big.txt", seq.as_bytes()),
            ("run.sh", b"echo hi\n"),
        ],
    );
    sh(&proj, "chmod 644 run.sh");
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(
        &proj,
        &["turn-start", "--agent", "claude-code", "--session", "s1"],
    );
    sh(
        &proj,
        "mv a.txt b.txt && mv big.txt moved.txt && echo 31 >> moved.txt && chmod 755 run.sh \
         && for i in $(seq 10 34); do echo $i > f$i; done",
    );
    env.ctl_ok(&proj, &["turn-end", "--session", "s1"]);
    proj
}

/// `ckptctl ARGS` run on a terminal (util-linux `script` gives it a pty),
/// with `env` set; returns what the terminal showed.
pub fn on_terminal(env: &Env, proj: &Path, args: &[&str], vars: &[(&str, &str)]) -> String {
    let mut line = format!("'{}'", bin("ckptctl").display());
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .current_dir(proj)
        .env_remove("CLICOLOR_FORCE")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    // The harness's own socket and data dir, as ctl_cmd sets them.
    for (k, v) in env.ctl_cmd(proj, &[]).get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    assert!(out.status.success(), "{line}: {out:?}");
    out.stdout.replace('\r', "")
}

#[test]
fn diff_names_renames_and_mode_changes_as_git_does() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = renaming_turn(&env);

    let status = env.ctl_ok(&proj, &["diff", "1", "--name-status"]);
    assert!(status.contains("R100\ta.txt\tb.txt\n"), "{status}");
    assert!(status.contains("R098\tbig.txt\tmoved.txt\n"), "{status}");
    assert!(status.contains("M\trun.sh\n"), "{status}");
    assert!(status.contains("A\tf10\n"), "{status}");
    assert!(
        !status.contains("\ta.txt\n") && !status.contains("D\t"),
        "a rename is no delete: {status}"
    );

    let names = env.ctl_ok(&proj, &["diff", "1", "--name-only"]);
    assert_eq!(names.lines().count(), 28, "{names}");
    assert!(names.lines().any(|l| l == "b.txt"), "{names}");

    let stat = env.ctl_ok(&proj, &["diff", "1", "--stat"]);
    assert!(stat.contains(" a.txt => b.txt "), "{stat}");
    assert!(stat.contains("| 1 +\n"), "{stat}");
    assert!(
        stat.ends_with(" 28 files changed, 26 insertions(+), 0 deletions(-)\n")
            || stat.ends_with(" 28 files changed, 26 insertions(+)\n"),
        "{stat}"
    );

    let patch = env.ctl_ok(&proj, &["diff", "1"]);
    assert!(
        patch.contains(
            "diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n"
        ),
        "{patch}"
    );
    assert!(
        patch
            .contains("rename from big.txt\nrename to moved.txt\n--- a/big.txt\n+++ b/moved.txt\n"),
        "{patch}"
    );
    assert!(
        patch.contains("diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"),
        "{patch}"
    );
    let json = env.ctl_json(&proj, &["diff", "1"]);
    let renamed = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "b.txt")
        .expect("b.txt");
    assert_eq!(renamed["kind"], "renamed", "{json}");
    assert_eq!(renamed["from"]["path"], "a.txt", "{json}");
    assert_eq!(renamed["from"]["similarity"], 100, "{json}");

    // More than one format is a usage error.
    let both = env.ctl(&proj, &["diff", "1", "--stat", "--name-only"]);
    assert_eq!(both.code(), 2, "{both:?}");
}

#[test]
fn colour_follows_the_flag_the_environment_and_the_terminal_but_never_json() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = renaming_turn(&env);

    let piped = env.ctl_ok(&proj, &["diff", "1", "moved.txt"]);
    assert!(!piped.contains(ESC), "piped output is plain: {piped:?}");
    let always = env.ctl_ok(&proj, &["--color=always", "diff", "1", "moved.txt"]);
    assert!(always.contains(&format!("{ESC}32m+31")), "{always:?}");
    let never = env.ctl_ok(&proj, &["--color=never", "diff", "1", "moved.txt"]);
    assert_eq!(never, piped);
    let forced = run(env
        .ctl_cmd(&proj, &["diff", "1", "moved.txt"])
        .env("CLICOLOR_FORCE", "1"));
    assert!(forced.stdout.contains(ESC), "{forced:?}");
    let json = env.ctl(&proj, &["--json", "--color=always", "diff", "1"]);
    assert!(!json.stdout.contains(ESC), "{json:?}");
    json.json();
    let log = env.ctl_ok(&proj, &["--color=always", "log"]);
    assert!(log.contains(ESC), "{log:?}");

    let tty = on_terminal(&env, &proj, &["--no-pager", "diff", "1", "moved.txt"], &[]);
    assert!(tty.contains(&format!("{ESC}32m+31")), "{tty:?}");
    let no_color = on_terminal(
        &env,
        &proj,
        &["--no-pager", "diff", "1", "moved.txt"],
        &[("NO_COLOR", "1")],
    );
    assert!(
        no_color.contains("+31") && !no_color.contains(ESC),
        "{no_color:?}"
    );
}

#[test]
fn the_pager_runs_only_on_a_terminal_and_not_with_no_pager() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = renaming_turn(&env);
    let pager = [("CKPT_PAGER", "sed 's/^/paged: /'"), ("PAGER", "false")];

    for args in [&["diff", "1"][..], &["log"], &["show", "1"]] {
        let paged = on_terminal(&env, &proj, args, &pager);
        assert!(
            paged.lines().count() > 1 && paged.lines().all(|l| l.starts_with("paged: ")),
            "{args:?}: {paged}"
        );
        let mut plain_args = vec!["--no-pager"];
        plain_args.extend_from_slice(args);
        let plain = on_terminal(&env, &proj, &plain_args, &pager);
        assert!(!plain.contains("paged: "), "{args:?}: {plain}");
        // PAGER is used when CKPT_PAGER is not set.
        let by_pager = on_terminal(&env, &proj, args, &[("PAGER", "sed 's/^/via PAGER: /'")]);
        assert!(by_pager.starts_with("via PAGER: "), "{args:?}: {by_pager}");
    }
    // Piped, the pager never runs.
    let piped = run(env
        .ctl_cmd(&proj, &["diff", "1"])
        .env("CKPT_PAGER", "sed 's/^/paged: /'"));
    assert!(!piped.stdout.contains("paged: "), "{piped:?}");
}

#[test]
fn long_listings_show_counts_and_the_first_paths_unless_verbose() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("README", b"r\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "for i in $(seq 1000 3821); do echo $i > f$i; done");
    let end = env.ctl_ok(&proj, &["turn-end"]);
    assert!(end.starts_with("turn 1 closed: 2822 added"), "{end}");
    assert_eq!(
        end.lines().filter(|l| l.starts_with("  A  ")).count(),
        10,
        "{end}"
    );
    assert!(
        end.ends_with("  … and 2,812 more: `ckptctl show 1 -v`\n"),
        "{end}"
    );

    let show = env.ctl_ok(&proj, &["show", "1"]);
    assert_eq!(show.lines().filter(|l| l.starts_with("  A  ")).count(), 10);
    assert!(
        show.contains("  … and 2,812 more: `ckptctl show 1 -v`\n"),
        "{show}"
    );
    let all = env.ctl_ok(&proj, &["show", "1", "-v"]);
    assert_eq!(all.lines().filter(|l| l.starts_with("  A  ")).count(), 2822);
    assert!(!all.contains("more:"), "{all}");
    // JSON holds every path.
    let json = env.ctl_json(&proj, &["show", "1"]);
    assert_eq!(json["turn"]["entries"].as_array().unwrap().len(), 2822);

    let dry = env.ctl_ok(&proj, &["rewind", "1", "--dry-run"]);
    assert!(dry.contains("  (would delete 2,822)\n"), "{dry}");
    assert_eq!(
        dry.lines().filter(|l| l.contains("would delete  ")).count(),
        10
    );
    assert!(
        dry.contains("  … and 2,812 more (`-v` lists every path)\n"),
        "{dry}"
    );
    let rewind = env.ctl_ok(&proj, &["rewind", "1", "--verbose"]);
    assert_eq!(
        rewind
            .lines()
            .filter(|l| l.starts_with("  deleted "))
            .count(),
        2822
    );
    let redo = env.ctl_ok(&proj, &["redo"]);
    assert!(redo.contains("  (recreated 2,822)\n"), "{redo}");

    // A short turn is listed whole.
    env.ctl_ok(&proj, &["turn-start"]);
    sh(&proj, "for i in $(seq 1 20); do echo $i > g$i; done");
    let short = env.ctl_ok(&proj, &["turn-end"]);
    assert_eq!(short.lines().filter(|l| l.starts_with("  A  ")).count(), 20);
}

/// A plain `rewind` asks the daemon to list only what it prints (a
/// full-tree rewind's every path is megabytes of reply): the first paths,
/// every merged one, and counts of all. `-v` and `--json` get every path.
#[test]
fn a_rewind_reply_lists_what_the_client_prints_and_counts_every_path() {
    use ckpt_proto::{
        write_frame, ActionCounts, MergeMode, Request, Response, Rewind, RewindFlags, RewindTo,
    };
    let env = Env::new();
    let _d = env.start_daemon();
    let long: String = (1..=200).map(|i| format!("line {i}\n")).collect();
    let proj = env.git_repo("p", &[("zz.txt", long.as_bytes())]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(&proj, &["turn-start"]);
    sh(
        &proj,
        "for i in $(seq 10 39); do echo $i > f$i; done; sed -i 's/^line 2$/line 2 agent/' zz.txt",
    );
    env.ctl_ok(&proj, &["turn-end"]);
    sh(&proj, "sed -i 's/^line 150$/line 150 user/' zz.txt");

    let mut s = hello(&env.socket).unwrap();
    let mut ask = |list| {
        let req = Request::Rewind(Rewind {
            dir: proj.as_path().into(),
            to: RewindTo::Before(1),
            paths: vec![],
            flags: RewindFlags {
                dry_run: true,
                force: false,
            },
            merge: Some(MergeMode::Clean),
            list,
        });
        write_frame(&mut s, &req).unwrap();
        match recv(&mut s) {
            Response::Rewind(r) => r,
            other => panic!("{other:?}"),
        }
    };
    let all = ActionCounts {
        restore: 1,
        delete: 30,
        recreate: 0,
    };
    let cut = ask(Some(3));
    let listed: Vec<String> = cut.actions.iter().map(|a| a.path.display()).collect();
    assert_eq!(
        listed,
        ["f10", "f11", "f12", "zz.txt"],
        "merged past the cut"
    );
    assert_eq!(cut.counts, Some(all));
    let whole = ask(None);
    assert_eq!(whole.actions.len(), 31);
    assert_eq!(whole.counts, Some(all));

    let dry = env.ctl_ok(&proj, &["rewind", "1", "--merge", "--dry-run"]);
    assert!(dry.contains("  (would delete 30)\n"), "{dry}");
    assert_eq!(dry.matches("would delete  ").count(), 10, "{dry}");
    assert!(
        dry.contains("  … and 20 more (`-v` lists every path)\n"),
        "{dry}"
    );
    assert!(dry.contains("  would merge  zz.txt"), "{dry}");
    let verbose = env.ctl_ok(&proj, &["rewind", "1", "--merge", "--dry-run", "-v"]);
    assert_eq!(verbose.matches("would delete  ").count(), 30, "{verbose}");
    let json = env.ctl_json(&proj, &["rewind", "1", "--merge", "--dry-run"]);
    assert_eq!(json["actions"].as_array().unwrap().len(), 31, "{json}");
    assert_eq!(json["counts"]["delete"], 30, "{json}");
    // Applied, it says how many paths in all.
    let applied = env.ctl_ok(&proj, &["rewind", "1", "--merge"]);
    assert!(
        applied.starts_with("rewind to before turn 1 (undoing turn 1): 31 paths in "),
        "{applied}"
    );
}

/// A turn-end (and `show`) asks the daemon to list only what the client
/// prints: none for a hook (`-q`), the first paths for a terminal, every
/// one for `-v` and `--json`; the reply counts them all.
#[test]
fn a_turn_end_reply_lists_what_the_client_prints_and_counts_every_path() {
    use ckpt_proto::{write_frame, Request, Response, TurnEnd};
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"a\n")]);
    env.ctl_ok(&proj, &["watch"]);
    // A turn that writes f10..f39 (30 paths) once more.
    let turn = |round: u32| {
        env.ctl_ok(&proj, &["turn-start"]);
        sh(
            &proj,
            &format!("for i in $(seq 10 39); do echo {round} > f$i; done"),
        );
    };
    let mut s = hello(&env.socket).unwrap();
    let end = |s: &mut std::os::unix::net::UnixStream, list| {
        let req = Request::TurnEnd(TurnEnd {
            dir: proj.as_path().into(),
            list,
            ..TurnEnd::default()
        });
        write_frame(s, &req).unwrap();
        match recv(s) {
            Response::TurnEnded(t) => t,
            other => panic!("{other:?}"),
        }
    };
    turn(1);
    let cut = end(&mut s, Some(3));
    let listed: Vec<String> = cut.turn.entries.iter().map(|e| e.path.display()).collect();
    assert_eq!(listed, ["f10", "f11", "f12"]);
    assert_eq!(
        (cut.turn.total_entries, cut.turn.total_entries()),
        (Some(30), 30)
    );
    assert_eq!(cut.turn.info.counts.added, 30);
    turn(2);
    let none = end(&mut s, Some(0));
    assert!(none.turn.entries.is_empty());
    assert_eq!(none.turn.total_entries(), 30);
    turn(3);
    let whole = end(&mut s, None);
    assert_eq!(
        (whole.turn.entries.len(), whole.turn.total_entries),
        (30, None)
    );

    turn(4);
    let text = env.ctl_ok(&proj, &["turn-end"]);
    assert!(
        text.starts_with("turn 4 closed: 0 added, 30 modified"),
        "{text}"
    );
    assert_eq!(text.matches("\n  M  f").count(), 10, "{text}");
    assert!(
        text.contains("  … and 20 more: `ckptctl show 4 -v`\n"),
        "{text}"
    );
    turn(5);
    let verbose = env.ctl_ok(&proj, &["turn-end", "-v"]);
    assert_eq!(verbose.matches("\n  M  f").count(), 30, "{verbose}");
    turn(6);
    let json = env.ctl_json(&proj, &["turn-end"]);
    assert_eq!(
        json["turn"]["entries"].as_array().unwrap().len(),
        30,
        "{json}"
    );
    assert!(json["turn"].get("total_entries").is_none(), "{json}");
    turn(7);
    assert_eq!(env.ctl_ok(&proj, &["turn-end", "-q"]), "");

    // `show` alike.
    let req = Request::Show {
        dir: proj.as_path().into(),
        turn: 7,
        list: Some(2),
    };
    write_frame(&mut s, &req).unwrap();
    let Response::Show(shown) = recv(&mut s) else {
        panic!("a show reply")
    };
    assert_eq!(shown.turn.entries.len(), 2);
    assert_eq!(shown.turn.total_entries, Some(30));
    let text = env.ctl_ok(&proj, &["show", "7"]);
    assert_eq!(text.matches("\n  M  f").count(), 10, "{text}");
    assert!(
        text.contains("  … and 20 more: `ckptctl show 7 -v`\n"),
        "{text}"
    );
    let verbose = env.ctl_ok(&proj, &["show", "7", "-v"]);
    assert_eq!(verbose.matches("\n  M  f").count(), 30, "{verbose}");
    let json = env.ctl_json(&proj, &["show", "7"]);
    assert_eq!(json["turn"]["entries"].as_array().unwrap().len(), 30);
}

#[test]
fn log_shows_who_how_long_rewinds_lanes_and_folds_empty_turns() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"0\n")]);
    env.ctl_ok(&proj, &["watch"]);
    let turn = |session: &str, script: &str| {
        env.ctl_ok(
            &proj,
            &["turn-start", "--agent", "codex", "--session", session],
        );
        if !script.is_empty() {
            sh(&proj, script);
        }
        env.ctl_ok(&proj, &["turn-end", "--session", session]);
    };
    turn("s1", "echo 1 > a"); // 1
    turn("s2", "echo x > b"); // 2
    turn("s1", ""); // 3
    turn("s1", ""); // 4
    turn("s1", ""); // 5
    turn("s1", "echo 2 > a"); // 6
    env.ctl_ok(&proj, &["rewind", "6"]);
    env.ctl_ok(&proj, &["redo"]);

    let log = env.ctl_ok(&proj, &["log"]);
    let header = log.lines().next().unwrap();
    for col in [
        "TURN", "STARTED", "TOOK", "STATE", "AGENT", "SESSION", "CHANGES",
    ] {
        assert!(header.contains(col), "{header}");
    }
    let lines: Vec<&str> = log.lines().skip(1).collect();
    assert_eq!(lines.len(), 6, "{log}");
    assert!(
        lines[0].contains("redo 2 of rewind 1 (turns 6), 1 path"),
        "{log}"
    );
    assert!(
        lines[1].contains("rewind 1 to before turn 6 (turns 6), 1 path"),
        "{log}"
    );
    assert!(
        lines[2].trim_start().starts_with("6 ") && lines[2].contains("codex"),
        "{log}"
    );
    assert!(lines[3].trim_start().starts_with("3-5 "), "{log}");
    assert!(
        lines[3].contains("3 turns without changes (`--empty` lists them)"),
        "{log}"
    );
    assert!(lines[4].contains("s2"), "{log}");

    let every = env.ctl_ok(&proj, &["log", "--empty"]);
    assert!(!every.contains("without changes"), "{every}");
    assert_eq!(every.lines().count(), 1 + 2 + 6, "{every}");

    let graph = env.ctl_ok(&proj, &["log", "--graph"]);
    let g: Vec<&str> = graph.lines().skip(1).collect();
    // Two lanes: s1's, and s2's for its one turn; s1's runs past it.
    assert!(g[2].starts_with("*   "), "{graph}");
    assert!(g[4].starts_with("| * "), "{graph}");
    assert!(g[5].starts_with("*   "), "{graph}");
}

#[test]
fn completions_and_man_pages_come_from_the_sibling() {
    let env = Env::new();
    let _d = env.start_daemon();
    let proj = env.git_repo("p", &[("a", b"0\n")]);
    env.ctl_ok(&proj, &["watch"]);
    env.ctl_ok(
        &proj,
        &["turn-start", "--label", "fix the header", "--session", "s9"],
    );
    sh(&proj, "echo 1 > a");
    env.ctl_ok(&proj, &["turn-end", "--session", "s9"]);

    let hooks = bin("ckpt-hooks");
    for shell in ["bash", "zsh", "fish"] {
        let script = env.ctl_ok(&proj, &["completions", shell]);
        assert!(
            script.contains("CKPT_COMPLETE") && script.contains(&*hooks.to_string_lossy()),
            "{shell}: {script}"
        );
    }
    // What the fish script asks: the daemon's turns and sessions, labelled.
    let complete = |words: &[&str]| {
        let cmd = env.ctl_cmd(&proj, &[]);
        let mut c = Command::new(&hooks);
        c.arg("--").arg("ckptctl").args(words).current_dir(&proj);
        for (k, v) in cmd.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        c.env("CKPT_COMPLETE", "fish");
        run(&mut c).stdout
    };
    assert!(complete(&["show", ""]).contains("1\tfix the header\n"));
    assert!(complete(&["rewind", ""]).contains("1\tfix the header\n"));
    assert!(complete(&["log", "--session", ""]).contains("s9\n"));
    assert!(complete(&["di"]).starts_with("diff\t"));
    // `workcopy` is its sibling's: its subcommands and the copies' names.
    env.ctl_ok(
        &proj,
        &["workcopy", "create", "--base", "current", "--name", "wc1"],
    );
    assert!(complete(&["workcopy", "pre"]).starts_with("preview\t"));
    let names = complete(&["workcopy", "status", ""]);
    assert!(names.contains("wc1\t"), "{names}");

    let man = env.ctl_ok(&proj, &["man"]);
    assert!(man.contains(".TH ckptctl 1"), "{man}");
    let dir = env.path().join("man");
    let wrote = env.ctl_ok(&proj, &["man", "--out", dir.to_str().unwrap()]);
    assert!(wrote.contains("pages written"), "{wrote}");
    let show = std::fs::read_to_string(dir.join("ckptctl-show.1")).expect("ckptctl-show.1");
    assert!(show.contains("verbose"), "{show}");
}
