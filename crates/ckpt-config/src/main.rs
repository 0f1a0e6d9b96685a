//! `ckpt-config`, run as `ckptctl config …` (with that command line as it
//! is): shows every setting with where it comes from, gets, sets and
//! unsets one, and opens a config file in the user's editor. An executable
//! of its own so that `toml_edit` and the editor stay out of what a hook
//! call links; the key table is `ckpt-settings`'.
//!
//! ```sh
//! ckptctl config                                # every value and its source
//! ckptctl config set retention.turns 300        # the user's file, comments kept
//! ckptctl config set capture.excludes '*.log,tmp/' --project
//! ckptctl config --edit --project               # $VISUAL / $EDITOR, checked after
//! ```

mod edit;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};

use ckpt_proto::{ProjectList, Request};
use ckpt_settings::{Layer, Settings, SettingsError, Source};
use ckptctl::cli::{FamilyCli, Global};
use ckptctl::commands::{Cli, Command, Ctx};

/// Settings: every value and where it comes from (default, user file,
/// project file, env).
#[derive(Parser, Debug)]
#[command(name = "ckptctl config", bin_name = "ckptctl config", version)]
pub struct ConfigCli {
    #[command(flatten)]
    global: Global,
    #[command(flatten)]
    args: ConfigArgs,
}

#[derive(clap::Args, Debug)]
pub struct ConfigArgs {
    /// Open the file in $VISUAL (else $EDITOR, else vi), then check it.
    #[arg(long)]
    edit: bool,
    /// The project's file (`.ckpt/config.toml` in the root of -C's
    /// project) instead of yours.
    #[arg(long, global = true)]
    project: bool,
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Subcommand, Debug)]
enum Action {
    /// Print KEY's effective value.
    Get {
        /// A key, as `ckptctl config` lists them (`retention.turns`).
        key: String,
    },
    /// Set KEY in your file (--project: the project's); the rest of the
    /// file, comments included, stays as it is.
    Set {
        /// A key, as `ckptctl config` lists them.
        key: String,
        /// A number, or for a list, patterns separated by commas.
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
    /// Remove KEY from your file (--project: the project's).
    Unset {
        /// A key, as `ckptctl config` lists them.
        key: String,
    },
}

impl FamilyCli for ConfigCli {
    type Action = ConfigArgs;
    fn split(self) -> (Global, ConfigArgs) {
        (self.global, self.args)
    }
}

fn main() -> ExitCode {
    // SAFETY: at start-up, before any thread exists.
    unsafe { ckptctl::default_sigpipe() };
    let cli = Cli::parse();
    let json = cli.global.json;
    let result = match cli.command {
        Command::Config(f) => {
            let (g, args) = f.parse::<ConfigCli>(&cli.global);
            Ctx::new(g).and_then(|ctx| run(&ctx, args))
        }
        _ => Err(anyhow::anyhow!(
            "ckpt-config runs only `ckptctl config …`; run the rest with ckptctl"
        )),
    };
    ckptctl::exit_code(result, json)
}

fn run(ctx: &Ctx, args: ConfigArgs) -> anyhow::Result<u8> {
    match (&args.action, args.edit) {
        (Some(_), true) => bail!("--edit opens the whole file: give it no get, set or unset"),
        (None, true) => edit::edit(&target(ctx, args.project)?),
        (None, false) => show(ctx),
        (Some(Action::Get { key }), _) => get(ctx, key),
        (Some(Action::Set { key, value }), _) => {
            let file = target(ctx, args.project)?;
            edit::set(&file, ckpt_settings_key(key)?, Some(value))?;
            if !ctx.g.quiet {
                println!("{key} set in {}", file.display());
            }
            Ok(0)
        }
        (Some(Action::Unset { key }), _) => {
            let file = target(ctx, args.project)?;
            edit::set(&file, ckpt_settings_key(key)?, None)?;
            if !ctx.g.quiet {
                println!("{key} unset in {}", file.display());
            }
            Ok(0)
        }
    }
}

fn ckpt_settings_key(name: &str) -> anyhow::Result<&'static ckpt_settings::Key> {
    ckpt_settings::find(name).with_context(|| {
        let known: Vec<&str> = ckpt_settings::KEYS.iter().map(|k| k.name).collect();
        format!("unknown key `{name}`; the keys are {}", known.join(", "))
    })
}

/// The file `set`, `unset` and `--edit` change.
fn target(ctx: &Ctx, project: bool) -> anyhow::Result<PathBuf> {
    if project {
        let root = project_root(ctx)?.with_context(|| {
            format!(
                "{} is not inside a watched project (run `ckptctl watch` there first)",
                ctx.dir.display()
            )
        })?;
        return Ok(ckpt_settings::project_file(&root));
    }
    ckpt_settings::user_file().context("cannot tell the config directory (no home directory)")
}

/// The root of the watched project containing `-C`'s directory, as the
/// daemon knows it.
fn project_root(ctx: &Ctx) -> anyhow::Result<Option<PathBuf>> {
    let list: ProjectList = ctx.ask(&Request::Projects)?;
    let dir = std::fs::canonicalize(&ctx.dir).unwrap_or_else(|_| ctx.dir.clone());
    Ok(list
        .projects
        .iter()
        .map(|p| p.root.as_path().to_path_buf())
        .filter(|root| dir.starts_with(root))
        .max_by_key(|root| root.as_os_str().len()))
}

/// Every layer as this process sees it, and what is wrong with any.
struct Loaded {
    settings: Settings,
    files: Vec<(Source, PathBuf)>,
    errors: Vec<SettingsError>,
}

fn load(ctx: &Ctx) -> anyhow::Result<Loaded> {
    let mut files = Vec::new();
    if let Some(f) = ckpt_settings::user_file() {
        files.push((Source::User, f));
    }
    let root = project_root(ctx).unwrap_or_else(|e| {
        eprintln!("ckptctl: {e:#}; the project's file is left out");
        None
    });
    if let Some(root) = root {
        files.push((Source::Project, ckpt_settings::project_file(&root)));
    }
    let mut layers: Vec<Layer> = Vec::new();
    let mut errors = Vec::new();
    for (source, path) in &files {
        match ckpt_settings::read_file(path, *source) {
            Ok(layer) => layers.extend(layer),
            Err(e) => errors.push(e),
        }
    }
    match ckpt_settings::env_layer(|n| std::env::var(n).ok()) {
        Ok(env) => layers.push(env),
        Err(e) => errors.push(e),
    }
    let settings = ckpt_settings::resolve(&layers.iter().collect::<Vec<_>>());
    Ok(Loaded {
        settings,
        files,
        errors,
    })
}

fn source_names(sources: &[Source]) -> String {
    sources
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(" + ")
}

fn show(ctx: &Ctx) -> anyhow::Result<u8> {
    let l = load(ctx)?;
    if ctx.g.json {
        let doc = serde_json::json!({
            "settings": l.settings.entries().iter().map(|e| serde_json::json!({
                "key": e.key.name,
                "value": match &e.value {
                    ckpt_settings::Value::Int(n) => serde_json::json!(n),
                    ckpt_settings::Value::Patterns(p) => serde_json::json!(p),
                },
                "sources": e.sources.iter().map(|s| s.name()).collect::<Vec<_>>(),
                "env": e.key.env_var(),
            })).collect::<Vec<_>>(),
            "files": l.files.iter().map(|(s, p)| serde_json::json!({
                "source": s.name(), "path": p, "exists": p.is_file(),
            })).collect::<Vec<_>>(),
            "errors": l.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        for (source, path) in &l.files {
            let state = if path.is_file() { "" } else { " (none)" };
            println!("# {}: {}{state}", source.name(), path.display());
        }
        let width = ckpt_settings::KEYS
            .iter()
            .map(|k| k.name.len())
            .max()
            .unwrap_or(0);
        for e in l.settings.entries() {
            println!(
                "{:width$} = {}  # {}",
                e.key.name,
                e.value,
                source_names(&e.sources)
            );
        }
    }
    for e in &l.errors {
        eprintln!("ckptctl: config error: {e}");
    }
    Ok(u8::from(!l.errors.is_empty()))
}

fn get(ctx: &Ctx, key: &str) -> anyhow::Result<u8> {
    let k = ckpt_settings_key(key)?;
    let l = load(ctx)?;
    let e = l.settings.entry(k.name);
    if ctx.g.json {
        let doc = serde_json::json!({
            "key": k.name,
            "value": match &e.value {
                ckpt_settings::Value::Int(n) => serde_json::json!(n),
                ckpt_settings::Value::Patterns(p) => serde_json::json!(p),
            },
            "sources": e.sources.iter().map(|s| s.name()).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("{}", e.value);
    }
    for e in &l.errors {
        eprintln!("ckptctl: config error: {e}");
    }
    Ok(u8::from(!l.errors.is_empty()))
}

/// `path`'s directory, made if missing.
fn parent_made(path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}
