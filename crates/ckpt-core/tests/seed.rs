//! The seed scenario (seed `000_…`): an agent turn in a git repository with
//! the user's own uncommitted work around it. Rewinding the turn gives back
//! every file byte for byte, keeps the user's work, and never touches `.git`.

mod common;

use ckpt_core::{ChangeKind, Project, RewindOptions};
use common::*;

/// How the test plays the daemon's barrier.
#[derive(Clone, Copy, Debug)]
enum Barrier {
    /// Full stat-compare scan (`reconcile`), the slow path.
    Scan,
    /// Only the paths the watcher would report (`check_paths`), the fast path.
    Events,
}

fn barrier(p: &mut Project, how: Barrier, changed: &[&str]) {
    match how {
        Barrier::Scan => sync(p),
        Barrier::Events => {
            p.check_paths(changed.iter().map(rp)).expect("check_paths");
        }
    }
}

fn styles(lines: usize, flavor: &str) -> String {
    (0..lines)
        .map(|i| match i % 4 {
            0 => format!(".{flavor}-{i} {{\n"),
            1 => format!("  margin: {}px {}px;\n", i % 17, i % 5),
            2 => format!("  color: #{:06x};\n", (i * 7919) % 0xffffff),
            _ => "}\n".to_string(),
        })
        .collect()
}

const INDEX_COMMITTED: &str = "<!doctype html>
<html>
<head>
  <meta charset=\"utf-8\">
  <title>My Site</title>
  <link rel=\"stylesheet\" href=\"styles.css\">
</head>
<body>
  <h1>Hello</h1>
  <script src=\"app.js\"></script>
</body>
</html>
";

const APP_JS: &str = "const API = process.env.API_URL;\n\
function main() {\n  document.querySelector('h1').textContent = 'Hello, world';\n}\n\
main();\n";

const ENV: &str = "API_URL=https://api.example.com\nDEBUG=false\n";

fn seed_scenario(how: Barrier) {
    let fx = Fx::new();

    // The repository as committed.
    assert_eq!(styles(212, "site").lines().count(), 212);
    fx.write("index.html", INDEX_COMMITTED);
    fx.write("styles.css", styles(212, "site"));
    fx.write("app.js", APP_JS);
    fx.write(".gitignore", ".env\n");
    fx.write(
        "legacy.js",
        "// old code nobody uses\nwindow.legacy = true;\n",
    );
    fx.write(
        "assets/logo.svg",
        "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n",
    );
    fx.write(".env", ENV);
    git(&fx.root, &["init", "-q"]);
    git(&fx.root, &["add", "-A"]);
    git(&fx.root, &["commit", "-q", "-m", "initial"]);

    // The user's own uncommitted work.
    fx.write(
        "index.html",
        INDEX_COMMITTED.replace("<title>My Site</title>", "<title>My Site — draft ✓</title>"),
    );
    fx.write("notes.md", "# notes\n- ask about the colour scheme\n");

    let git_before = fx.git_dir();
    let status_before = git(
        &fx.root,
        &[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignored",
        ],
    );
    assert!(status_before.contains(" M index.html"), "{status_before}");
    assert!(status_before.contains("?? notes.md"), "{status_before}");
    assert!(status_before.contains("!! .env"), "{status_before}");

    let mut p = fx.open();
    sync(&mut p); // baseline
    let before = fx.tree();
    let turn = {
        barrier(&mut p, how, &[]);
        p.turn_start(Default::default()).expect("turn_start")
    };

    // The agent's turn.
    fx.write("styles.css", styles(41, "theme"));
    let index_user = String::from_utf8(fx.read("index.html")).unwrap();
    fx.write(
        "index.html",
        index_user.replace(
            "<link rel=\"stylesheet\" href=\"styles.css\">",
            "<link rel=\"stylesheet\" href=\"styles.css\">\n  <link rel=\"stylesheet\" href=\"theme.css\">",
        ),
    );
    fx.write(
        "app.js",
        "import { start } from './src/components/Button.js';\nstart();\n",
    );
    fx.write(
        ".env",
        ENV.replace("https://api.example.com", "http://localhost:3000"),
    );
    fx.write("theme.css", ":root { --accent: #ff6600; }\n");
    fx.rm("legacy.js");
    fx.write("src/components/Button.js", "export function start() {}\n");

    let changed = [
        "styles.css",
        "index.html",
        "app.js",
        ".env",
        "theme.css",
        "legacy.js",
        "src",
    ];
    barrier(&mut p, how, &changed);
    let detail = p.turn_end().expect("turn_end");
    let after = fx.tree();
    assert_eq!(
        fx.read("styles.css")
            .iter()
            .filter(|&&b| b == b'\n')
            .count(),
        41
    );

    // The turn recorded exactly what the agent changed, nothing of the user's.
    let paths: Vec<_> = detail.entries.iter().map(|e| e.path.display()).collect();
    let mut got = paths.clone();
    got.sort();
    let mut want = vec![
        ".env",
        "app.js",
        "index.html",
        "legacy.js",
        "src",
        "src/components",
        "src/components/Button.js",
        "styles.css",
        "theme.css",
    ];
    want.sort();
    assert_eq!(got, want, "turn entries");
    for e in &detail.entries {
        let post = e.post.as_ref().expect("closed turn has post-images");
        let kind = ChangeKind::between(&e.pre, post);
        let expect = match e.path.display().as_str() {
            "legacy.js" => ChangeKind::Deleted,
            "theme.css" | "src" | "src/components" | "src/components/Button.js" => {
                ChangeKind::Added
            }
            _ => ChangeKind::Modified,
        };
        assert_eq!(kind, expect, "{}", e.path);
    }
    assert_eq!(
        entry_paths(&p, turn).len(),
        want.len(),
        "show agrees with turn_end"
    );

    let status_agent = git(
        &fx.root,
        &[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignored",
        ],
    );
    assert_ne!(status_agent, status_before);

    // Rewind.
    barrier(&mut p, how, &[]);
    let plan = applied(p.rewind(turn, RewindOptions::default()).expect("rewind"));
    assert!(plan.conflicts.is_empty(), "{:?}", plan.conflicts);
    assert!(plan.skipped.is_empty(), "{:?}", plan.skipped);
    assert_eq!(plan.turns, vec![turn]);
    assert_tree(&before, &fx.tree(), "after rewind");
    assert!(String::from_utf8(fx.read("index.html"))
        .unwrap()
        .contains("My Site — draft ✓"));
    assert_eq!(fx.read(".env"), ENV.as_bytes());
    assert!(!fx.abs("theme.css").exists() && !fx.abs("src").exists());
    assert_eq!(
        git(
            &fx.root,
            &[
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--ignored"
            ]
        ),
        status_before,
        "git status after rewind"
    );

    // The daemon would now see events for every path the rewind wrote; they
    // must not look like changes to anything.
    let touched: Vec<String> = plan.actions.iter().map(|a| a.path.display()).collect();
    let touched: Vec<&str> = touched.iter().map(|s| s.as_str()).collect();
    barrier(&mut p, how, &touched);

    // Redo gives the agent's tree back.
    let _ = applied(p.redo(RewindOptions::default()).expect("redo"));
    assert_tree(&after, &fx.tree(), "after redo");
    assert_eq!(
        git(
            &fx.root,
            &[
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--ignored"
            ]
        ),
        status_agent,
        "git status after redo"
    );

    // And rewinding again still works after the redo.
    barrier(&mut p, how, &touched);
    let _ = applied(
        p.rewind(turn, RewindOptions::default())
            .expect("second rewind"),
    );
    assert_tree(&before, &fx.tree(), "after second rewind");

    drop(p);
    assert_tree(&git_before, &fx.git_dir(), ".git after everything");
}

#[test]
fn seed_scenario_rewind_is_exact_with_full_scans() {
    seed_scenario(Barrier::Scan);
}

#[test]
fn seed_scenario_rewind_is_exact_with_path_events() {
    seed_scenario(Barrier::Events);
}
