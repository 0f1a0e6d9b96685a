use super::*;

fn user(text: &str) -> Result<Layer, SettingsError> {
    parse(
        Path::new("/home/u/.config/ckpt/config.toml"),
        Source::User,
        text,
    )
}

#[test]
fn defaults_are_the_key_table() {
    let s = Settings::default();
    assert_eq!(s.retention_turns(), 100);
    assert_eq!(s.retention_days(), 14);
    assert_eq!(s.store_budget_bytes(), None);
    assert_eq!(s.max_file_bytes(), 16 << 20);
    assert!(s.excludes().is_empty());
    assert_eq!(s.barrier_timeout(), Duration::from_secs(2));
    assert_eq!(s.workcopy_run_timeout(), Duration::from_secs(300));
    assert_eq!(s.workcopy_max_files(), 10_000);
    assert_eq!(s.workcopy_max_bytes(), 256 << 20);
    assert!(s.entries().iter().all(|e| e.sources == [Source::Default]));
}

#[test]
fn later_layers_win_and_lists_add_up() {
    let u = user("[retention]\nturns = 50\ndays = 3\n[capture]\nexcludes = [\"*.log\"]\n").unwrap();
    let p = parse(
        Path::new("/p/.ckpt/config.toml"),
        Source::Project,
        "retention.turns = 20\ncapture.excludes = [\"build/\"]\n",
    )
    .unwrap();
    let env = env_layer(|n| (n == "CKPT_RETENTION_DAYS").then(|| "9".to_string())).unwrap();
    let s = resolve(&[&u, &p, &env]);
    assert_eq!(s.retention_turns(), 20);
    assert_eq!(s.entry(key::RETENTION_TURNS).sources, [Source::Project]);
    assert_eq!(s.retention_days(), 9);
    assert_eq!(s.entry(key::RETENTION_DAYS).sources, [Source::Env]);
    assert_eq!(s.excludes(), ["*.log", "build/"]);
    assert_eq!(
        s.entry(key::CAPTURE_EXCLUDES).sources,
        [Source::User, Source::Project]
    );
    assert_eq!(s.entry(key::BARRIER_TIMEOUT_MS).sources, [Source::Default]);
}

#[test]
fn a_bad_file_names_its_line_and_key() {
    let e = user("# mine\n[retention]\nturns = \"many\"\n").unwrap_err();
    assert_eq!(e.line, Some(3));
    assert_eq!(e.key.as_deref(), Some("retention.turns"));
    let shown = e.to_string();
    assert!(
        shown.starts_with(
            "/home/u/.config/ckpt/config.toml:3: retention.turns: expected a whole number of turns"
        ),
        "{shown}"
    );

    let e = user("[retention]\nturns = 5\n\n[retention]\nturnz = 1\n").unwrap_err();
    assert_eq!(e.line, Some(4), "a duplicate table is a TOML error: {e}");

    let e = user("[retention]\nturns = 5\nturnz = 1\n").unwrap_err();
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(3), Some("retention.turnz"))
    );
    assert!(e.message.contains("unknown key"), "{e}");

    let e = user("[capture]\nmax_file_mib = 0\n").unwrap_err();
    assert!(e.message.contains("from 1"), "{e}");

    let e = user("[capture]\nexcludes = [1]\n").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("capture.excludes"));

    let e = user("turns = 1\n").unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (Some(1), Some("turns")));

    let e = user("[retention\n").unwrap_err();
    assert_eq!((e.line, e.key.as_deref()), (Some(1), None));
}

#[test]
fn a_bad_variable_names_itself() {
    let e = env_layer(|n| (n == "CKPT_STORE_BUDGET_MIB").then(|| "lots".to_string())).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("CKPT_STORE_BUDGET_MIB (store.budget_mib): expected"),
        "{e}"
    );
    let l = env_layer(|n| (n == "CKPT_CAPTURE_EXCLUDES").then(|| "a, b/,".to_string())).unwrap();
    assert_eq!(
        l.values[key::CAPTURE_EXCLUDES],
        Value::Patterns(vec!["a".into(), "b/".into()])
    );
}

#[test]
fn a_cached_file_is_read_again_only_when_it_changed_and_keeps_the_last_good() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let mut f = CachedFile::new(path.clone(), Source::User);
    assert!(f.refresh(), "the first look counts as a change");
    assert!(f.layer().is_none() && f.error().is_none());
    assert!(!f.refresh());

    std::fs::write(&path, "retention.turns = 7\n").unwrap();
    assert!(f.refresh());
    assert_eq!(
        f.layer().unwrap().values[key::RETENTION_TURNS],
        Value::Int(7)
    );
    assert!(!f.refresh(), "an unchanged file is not parsed again");

    std::fs::write(&path, "retention.turns = -7\n").unwrap();
    assert!(f.refresh());
    assert_eq!(f.error().unwrap().line, Some(1));
    assert_eq!(
        f.layer().unwrap().values[key::RETENTION_TURNS],
        Value::Int(7),
        "the last good parse stays"
    );

    std::fs::remove_file(&path).unwrap();
    assert!(f.refresh());
    assert!(f.layer().is_none() && f.error().is_none());
}

/// The README's table of settings says what [`KEYS`] says, row by row.
#[test]
fn readme_lists_every_key() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md at the workspace root");
    let rows: Vec<String> = readme
        .lines()
        .filter(|l| {
            l.starts_with("| `") && (l.contains("` | integer") || l.contains("` | list of"))
        })
        .map(String::from)
        .collect();
    let expected: Vec<String> = KEYS
        .iter()
        .map(|k| {
            format!(
                "| `{}` | {} | {} | `{}` | {} |",
                k.name,
                k.kind.describe(),
                k.default_value(),
                k.env_var(),
                k.doc
            )
        })
        .collect();
    assert_eq!(rows, expected, "README.md's settings table");
}
