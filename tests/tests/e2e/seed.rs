//! The seed scenario of the core issue, end to end through `ckptctl`: an
//! agent turn made of real shell commands is rewound byte-for-byte, the
//! user's own uncommitted work survives, and `.git` is never touched.

use ckpt_e2e::*;

fn styles_212() -> String {
    (1..=212)
        .map(|i| {
            format!(
                ".rule-{i} {{ color: #{:06x}; padding: {}px; }}\n",
                i * 4099,
                i % 17
            )
        })
        .collect()
}

const INDEX: &str = r#"<!doctype html>
<html>
<head>
  <title>Shop</title>
  <link rel="stylesheet" href="styles.css">
</head>
<body><div id="app"></div><script src="app.js"></script></body>
</html>
"#;

#[test]
fn seed_scenario_rewinds_the_agent_turn_exactly() {
    let env = Env::new();
    let _d = env.start_daemon();
    let styles = styles_212();
    assert_eq!(styles.lines().count(), 212);
    let proj = env.git_repo(
        "shop",
        &[
            ("index.html", INDEX.as_bytes()),
            ("styles.css", styles.as_bytes()),
            (
                "app.js",
                b"document.getElementById('app').textContent = 'hi';\n",
            ),
            ("legacy.js", b"// old code nobody uses\nvar x = 1;\n"),
            (".gitignore", b".env\n"),
        ],
    );
    std::fs::write(
        proj.join(".env"),
        "API_URL=https://api.example.com\nSECRET=s3cr3t\n",
    )
    .unwrap();
    // The user's own uncommitted work, before any agent runs.
    sh(&proj, "sed -i 's#<title>Shop</title>#<title>My Shop</title>#' index.html && echo '# notes' > notes.md");

    let watched = env.ctl_json(&proj, &["watch"]);
    assert_eq!(watched["already"], false);
    let before = snapshot_work(&proj);
    let git_before = snapshot_git(&proj);

    let started = env.ctl_json(
        &proj,
        &[
            "turn-start",
            "--label",
            "restyle the shop",
            "--agent",
            "claude",
        ],
    );
    assert_eq!(started["turn"], 1);
    assert_eq!(
        started["project"],
        proj.canonicalize().unwrap().to_str().unwrap()
    );

    // The agent's turn, all through real tools.
    sh(
        &proj,
        r#"
        for i in $(seq 1 41); do echo ".n$i { margin: ${i}px; }"; done > styles.css
        sed -i 's#<link rel="stylesheet" href="styles.css">#&\n  <link rel="stylesheet" href="theme.css">#' index.html
        printf 'export const app = () => 42;\n' > .app.js.tmp && mv .app.js.tmp app.js
        sed -i 's#^API_URL=.*#API_URL=http://localhost:8080#' .env
        cp styles.css theme.css && echo ':root { --accent: teal; }' >> theme.css
        rm legacy.js
        mkdir -p src/components/ui && echo 'export default 1;' > src/components/ui/button.js
        "#,
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("styles.css"))
            .unwrap()
            .lines()
            .count(),
        41
    );
    let after = snapshot_work(&proj);

    let ended = env.ctl_json(&proj, &["turn-end"]);
    let entries = ended["turn"]["entries"].as_array().unwrap();
    let kind_of = |path: &str| {
        entries
            .iter()
            .find(|e| e["path"] == path)
            .map(|e| e["change"].as_str().unwrap().to_string())
    };
    for p in ["styles.css", "index.html", "app.js", ".env"] {
        assert_eq!(
            kind_of(p).as_deref(),
            Some("modified"),
            "{p} in {entries:#?}"
        );
    }
    for p in [
        "theme.css",
        "src",
        "src/components",
        "src/components/ui",
        "src/components/ui/button.js",
    ] {
        assert_eq!(kind_of(p).as_deref(), Some("added"), "{p} in {entries:#?}");
    }
    assert_eq!(kind_of("legacy.js").as_deref(), Some("deleted"));
    assert_eq!(
        kind_of("notes.md"),
        None,
        "the user's file is not the agent's"
    );
    assert!(entries.iter().all(|e| {
        let p = e["path"].as_str().unwrap();
        !p.starts_with(".git/") && !p.starts_with(".ckpt-")
    }));

    // The human view names the same things.
    let shown = env.ctl_ok(&proj, &["show", "1"]);
    assert!(
        shown.contains("M  styles.css") && shown.contains("D  legacy.js"),
        "{shown}"
    );
    assert!(shown.contains("A  src/components/ui/button.js"), "{shown}");
    let diff = env.ctl_ok(&proj, &["diff", "1", "index.html"]);
    assert!(
        diff.contains("+  <link rel=\"stylesheet\" href=\"theme.css\">"),
        "{diff}"
    );
    assert!(
        !diff.contains("styles.css\n+++"),
        "diff limited to the path: {diff}"
    );

    let rewound = env.ctl_json(&proj, &["rewind", "1"]);
    assert_eq!(rewound["outcome"], "applied");
    assert_same_tree("after rewind", &before, &snapshot_work(&proj));
    assert_same_tree(".git after rewind", &git_before, &snapshot_git(&proj));
    // The user's own work is there, byte for byte.
    let index = std::fs::read_to_string(proj.join("index.html")).unwrap();
    assert!(index.contains("<title>My Shop</title>") && !index.contains("theme.css"));
    assert_eq!(
        std::fs::read_to_string(proj.join("notes.md")).unwrap(),
        "# notes\n"
    );
    assert_eq!(
        std::fs::read_to_string(proj.join("styles.css")).unwrap(),
        styles
    );
    assert!(std::fs::read_to_string(proj.join(".env"))
        .unwrap()
        .contains("api.example.com"));

    let redone = env.ctl_json(&proj, &["redo"]);
    assert_eq!(redone["outcome"], "applied");
    assert_same_tree("after redo", &after, &snapshot_work(&proj));
    assert_same_tree(".git after redo", &git_before, &snapshot_git(&proj));

    // The log says what happened.
    let log = env.ctl_json(&proj, &["log"]);
    let turns = log["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0]["label"], "restyle the shop");
    assert_eq!(turns[0]["agent"], "claude");
    assert_eq!(turns[0]["status"], "closed", "redo brings the turn back");
}
