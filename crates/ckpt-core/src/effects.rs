//! What a rewind cannot undo: the rules that name the shell commands
//! whose effects live outside the project tree (a push, a publish, a
//! database write…). Every rule is one row of [`RULES`]: its name, its
//! category, why a rewind does not undo it, and the test of one simple
//! command. A command line is split into simple commands first
//! (`&&`, `||`, `;`, `|`, subshells), wrappers are taken off (`sudo`,
//! `env X=Y`, `nohup`, `timeout`…) and `bash -c '…'` is read inside.
//!
//! ```
//! let e = ckpt_core::effects::classify("cd x && sudo git push -f origin main", "/p".as_ref());
//! assert_eq!(e[0].name, "git_force_push");
//! ```

use std::path::{Component, Path, PathBuf};

use ckpt_types::EffectCategory as C;

/// One rule of the table.
pub struct Rule {
    /// Its name (and the name of its test).
    pub name: &'static str,
    pub category: C,
    /// Why a rewind does not undo it, in a line.
    pub reason: &'static str,
    test: fn(&Call) -> bool,
}

/// One simple command: the program's base name and its arguments.
struct Call<'a> {
    prog: &'a str,
    args: &'a [String],
    root: &'a Path,
}

impl Call<'_> {
    /// The arguments that are not options.
    fn words(&self) -> impl Iterator<Item = &str> {
        self.args
            .iter()
            .map(String::as_str)
            .filter(|a| !a.starts_with('-'))
    }
    fn sub(&self) -> Option<&str> {
        self.words().next()
    }
    fn has(&self, flags: &[&str]) -> bool {
        self.args.iter().any(|a| {
            flags
                .iter()
                .any(|f| a == f || (f.starts_with("--") && a.starts_with(&format!("{f}="))))
        })
    }
    fn is(&self, progs: &[&str]) -> bool {
        progs.contains(&self.prog)
    }
    fn sub_in(&self, progs: &[&str], subs: &[&str]) -> bool {
        self.is(progs) && self.sub().is_some_and(|s| subs.contains(&s))
    }
    /// `git`'s subcommand and its arguments, past git's own options.
    fn git(&self) -> Option<(&str, &[String])> {
        if self.prog != "git" {
            return None;
        }
        let mut i = 0;
        while let Some(a) = self.args.get(i) {
            match a.as_str() {
                "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
                a if a.starts_with('-') => i += 1,
                sub => return Some((sub, &self.args[i + 1..])),
            }
        }
        None
    }
    fn git_sub(&self, subs: &[&str]) -> bool {
        self.git().is_some_and(|(s, _)| subs.contains(&s))
    }
    fn outside(&self, p: &str) -> bool {
        outside(self.root, p)
    }
}

/// Every rule, in the order they are tried (a command can match several).
pub const RULES: &[Rule] = &[
    Rule {
        name: "git_force_push",
        category: C::Push,
        reason: "it rewrote or deleted the remote's history, which others may have fetched",
        test: |c| {
            c.git().is_some_and(|(s, rest)| {
                s == "push"
                    && rest.iter().any(|a| {
                        matches!(a.as_str(), "-f" | "--force" | "--mirror" | "--delete" | "-d")
                            || a.starts_with("--force-with-lease")
                            || (a.starts_with('+') && a.len() > 1)
                    })
            })
        },
    },
    Rule {
        name: "git_push",
        category: C::Push,
        reason: "the commits are on the remote now, where others may fetch them",
        test: |c| c.git_sub(&["push"]),
    },
    Rule {
        name: "git_reset",
        category: C::GitState,
        reason: "it moved the repository's HEAD and index, which ckpt never touches: a rewind restores files only",
        test: |c| c.git_sub(&["reset"]),
    },
    Rule {
        name: "git_clean",
        category: C::GitState,
        reason: "it deleted untracked files, and those ckpt excludes (.ckptignore, caches) cannot come back",
        test: |c| {
            c.git().is_some_and(|(s, rest)| {
                s == "clean" && !rest.iter().any(|a| a == "-n" || a == "--dry-run")
            })
        },
    },
    Rule {
        name: "git_checkout",
        category: C::GitState,
        reason: "it switched the repository's HEAD: a rewind restores files, not the branch",
        test: |c| {
            c.git_sub(&["switch"])
                || c.git()
                    .is_some_and(|(s, rest)| s == "checkout" && !rest.iter().any(|a| a == "--"))
        },
    },
    Rule {
        name: "git_stash",
        category: C::GitState,
        reason: "the stash lives in the repository: a rewind neither brings it back nor drops it",
        test: |c| {
            c.git().is_some_and(|(s, rest)| {
                s == "stash"
                    && !rest
                        .first()
                        .is_some_and(|a| a == "list" || a == "show")
            })
        },
    },
    Rule {
        name: "git_commit",
        category: C::GitState,
        reason: "new commits moved the branch: a rewind restores files, not HEAD",
        test: |c| c.git_sub(&["commit", "merge", "cherry-pick", "revert", "am", "pull"]),
    },
    Rule {
        name: "git_rebase",
        category: C::GitState,
        reason: "it rewrote the branch's history, which ckpt does not capture",
        test: |c| c.git_sub(&["rebase", "filter-branch", "filter-repo"]),
    },
    Rule {
        name: "git_ref_delete",
        category: C::GitState,
        reason: "it deleted or renamed refs, which ckpt does not capture",
        test: |c| {
            c.git().is_some_and(|(s, rest)| {
                let flag = |f: &[&str]| rest.iter().any(|a| f.contains(&a.as_str()));
                (s == "branch" && flag(&["-D", "-d", "--delete", "-m", "-M", "--move"]))
                    || (s == "tag" && flag(&["-d", "--delete"]))
                    || (s == "update-ref" && flag(&["-d"]))
                    || (s == "reflog" && flag(&["expire", "delete"]))
            })
        },
    },
    Rule {
        name: "npm_publish",
        category: C::Publish,
        reason: "the package is on the registry; a published version cannot be taken back and reused",
        test: |c| {
            c.sub_in(
                &["npm", "pnpm", "yarn", "bun"],
                &["publish", "unpublish", "deprecate", "dist-tag"],
            ) || (c.is(&["yarn"]) && c.args.len() > 1 && c.args[0] == "npm" && c.args[1] == "publish")
        },
    },
    Rule {
        name: "cargo_publish",
        category: C::Publish,
        reason: "the crate is on crates.io; a published version can be yanked, never replaced",
        test: |c| c.sub_in(&["cargo"], &["publish", "yank", "owner"]),
    },
    Rule {
        name: "python_publish",
        category: C::Publish,
        reason: "the package is on PyPI; a published version cannot be uploaded again",
        test: |c| {
            c.sub_in(&["twine"], &["upload", "register"])
                || c.sub_in(&["poetry", "uv", "flit", "hatch", "pdm"], &["publish"])
                || (c.is(&["python", "python3"])
                    && c.args.windows(3).any(|w| w[0] == "-m" && w[1] == "twine" && w[2] == "upload"))
        },
    },
    Rule {
        name: "gem_publish",
        category: C::Publish,
        reason: "the gem is on RubyGems; a published version cannot be pushed again",
        test: |c| c.sub_in(&["gem"], &["push", "yank", "owner"]),
    },
    Rule {
        name: "other_publish",
        category: C::Publish,
        reason: "the artifact is on its registry",
        test: |c| {
            c.sub_in(&["mvn", "mvnw", "./mvnw"], &["deploy", "release:perform"])
                || c.sub_in(&["gradle", "gradlew"], &["publish"])
                || (c.is(&["dotnet"]) && c.args.starts_with(&["nuget".into(), "push".into()]))
        },
    },
    Rule {
        name: "curl_write",
        category: C::Network,
        reason: "it sent data to a server, which keeps what it did with it",
        test: |c| {
            c.is(&["curl"])
                && (c.has(&[
                    "-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--json",
                    "-F", "--form", "-T", "--upload-file",
                ]) || c.args.iter().enumerate().any(|(i, a)| {
                    let method = match a.as_str() {
                        "-X" | "--request" => c.args.get(i + 1).map(String::as_str),
                        a => a.strip_prefix("-X").or_else(|| a.strip_prefix("--request=")),
                    };
                    method.is_some_and(|m| !m.is_empty() && !m.eq_ignore_ascii_case("GET") && !m.eq_ignore_ascii_case("HEAD"))
                }))
        },
    },
    Rule {
        name: "wget_write",
        category: C::Network,
        reason: "it sent data to a server, which keeps what it did with it",
        test: |c| {
            c.is(&["wget"])
                && (c.has(&["--post-data", "--post-file", "--body-data", "--body-file"])
                    || c.args.iter().any(|a| {
                        a.strip_prefix("--method=")
                            .is_some_and(|m| !m.eq_ignore_ascii_case("GET") && !m.eq_ignore_ascii_case("HEAD"))
                    }))
        },
    },
    Rule {
        name: "httpie_write",
        category: C::Network,
        reason: "it sent data to a server, which keeps what it did with it",
        test: |c| {
            c.is(&["http", "https", "xh", "xhs"])
                && c.sub().is_some_and(|m| {
                    ["POST", "PUT", "PATCH", "DELETE"].contains(&m.to_ascii_uppercase().as_str())
                })
        },
    },
    Rule {
        name: "gh_write",
        category: C::Network,
        reason: "it changed the forge (a pull request, an issue, a release…), outside the tree",
        test: |c| {
            if !c.is(&["gh", "glab"]) {
                return false;
            }
            let w: Vec<&str> = c.words().collect();
            let writes = [
                "create", "merge", "close", "comment", "edit", "delete", "review", "ready",
                "reopen", "upload", "rename", "archive", "run", "lock", "transfer",
            ];
            match w.as_slice() {
                ["api", ..] => {
                    c.has(&["-f", "-F", "--field", "--raw-field", "--input"])
                        || c.args.windows(2).any(|p| {
                            (p[0] == "-X" || p[0] == "--method") && !p[1].eq_ignore_ascii_case("GET")
                        })
                }
                [_, verb, ..] => writes.contains(verb),
                _ => false,
            }
        },
    },
    Rule {
        name: "ssh_command",
        category: C::Remote,
        reason: "it ran a command on another machine",
        test: |c| {
            if !c.is(&["ssh"]) {
                return false;
            }
            // Options that take a value, from ssh(1).
            let valued = "BbcDEeFIiJLlmOoPpQRSWw";
            let mut words = 0;
            let mut i = 0;
            while let Some(a) = c.args.get(i) {
                if let Some(f) = a.strip_prefix('-') {
                    let takes = f.len() == 1 && valued.contains(f);
                    i += if takes { 2 } else { 1 };
                } else {
                    words += 1;
                    i += 1;
                }
            }
            words >= 2
        },
    },
    Rule {
        name: "copy_to_remote",
        category: C::Remote,
        reason: "it copied files to another machine",
        test: |c| {
            c.is(&["scp", "rsync", "sftp"])
                && c.words().last().is_some_and(|dest| {
                    dest.starts_with("rsync://")
                        || dest
                            .split_once(':')
                            .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
                })
        },
    },
    Rule {
        name: "database_client",
        category: C::Database,
        reason: "what it wrote lives in the database server, outside the tree",
        test: |c| {
            c.is(&[
                "psql", "pgcli", "mysql", "mariadb", "mycli", "mysqladmin", "redis-cli",
                "valkey-cli", "mongo", "mongosh", "mongoimport", "mongorestore", "cqlsh",
                "clickhouse-client", "sqlcmd", "influx", "pg_restore", "dropdb", "createdb",
            ])
        },
    },
    Rule {
        name: "sqlite_outside",
        category: C::Database,
        reason: "the database file is outside the project, where ckpt does not capture it",
        test: |c| c.is(&["sqlite3", "sqlite", "duckdb"]) && c.sub().is_some_and(|db| c.outside(db)),
    },
    Rule {
        name: "container",
        category: C::Container,
        reason: "containers, images, volumes and registries live outside the tree",
        test: |c| {
            if c.is(&["docker-compose", "podman-compose"]) {
                return !c.sub().is_some_and(|s| READ_ONLY_COMPOSE.contains(&s));
            }
            if !c.is(&["docker", "podman", "nerdctl"]) {
                return false;
            }
            let w: Vec<&str> = c.words().collect();
            match w.as_slice() {
                ["compose", s, ..] => !READ_ONLY_COMPOSE.contains(s),
                [s, ..] => !READ_ONLY_DOCKER.contains(s),
                [] => false,
            }
        },
    },
    Rule {
        name: "kubectl_write",
        category: C::Cluster,
        reason: "it changed the cluster's state, outside the tree",
        test: |c| {
            c.sub_in(
                &["kubectl", "oc", "k"],
                &[
                    "apply", "create", "delete", "patch", "replace", "scale", "rollout", "edit",
                    "label", "annotate", "set", "drain", "cordon", "uncordon", "taint", "exec",
                    "run", "expose", "autoscale", "cp",
                ],
            )
        },
    },
    Rule {
        name: "helm_write",
        category: C::Cluster,
        reason: "it changed the cluster's releases, outside the tree",
        test: |c| {
            c.sub_in(
                &["helm"],
                &["install", "upgrade", "uninstall", "delete", "rollback", "push"],
            )
        },
    },
    Rule {
        name: "terraform_apply",
        category: C::Infra,
        reason: "it changed real infrastructure (and its remote state)",
        test: |c| {
            c.sub_in(
                &["terraform", "tofu", "terragrunt"],
                &["apply", "destroy", "import", "state", "taint", "untaint", "force-unlock"],
            ) || c.sub_in(&["pulumi"], &["up", "destroy", "import", "cancel"])
        },
    },
    Rule {
        name: "cloud_write",
        category: C::Infra,
        reason: "it changed cloud resources, outside the tree",
        test: |c| {
            let w: Vec<&str> = c.words().collect();
            let verb = |v: &str| {
                const PREFIXES: &[&str] = &[
                    "create", "delete", "put-", "update", "run-", "terminate", "start", "stop",
                    "modify", "attach", "detach", "invoke", "deploy", "register", "deregister",
                    "set", "remove", "upload", "reboot",
                ];
                PREFIXES.iter().any(|p| v.starts_with(p))
            };
            match (c.prog, w.as_slice()) {
                ("aws", ["s3", op, ..]) => ["cp", "mv", "sync", "rm", "rb", "mb"].contains(op),
                ("aws", [_, op, ..]) => verb(op),
                ("gcloud" | "az", _) => w.iter().skip(1).any(|v| verb(v)),
                ("vercel" | "netlify" | "fly" | "flyctl" | "firebase" | "wrangler" | "heroku", _) => {
                    w.iter().any(|v| matches!(*v, "deploy" | "publish" | "release"))
                        || (c.prog == "vercel" && c.has(&["--prod"]))
                }
                _ => false,
            }
        },
    },
    Rule {
        name: "system_packages",
        category: C::System,
        reason: "it changed the machine's packages, outside the tree",
        test: |c| {
            c.sub_in(
                &["apt", "apt-get", "dnf", "yum", "zypper", "brew", "port", "snap", "apk", "choco", "winget"],
                &["install", "remove", "purge", "upgrade", "uninstall", "reinstall", "add", "del", "autoremove"],
            ) || (c.is(&["pacman"]) && c.args.iter().any(|a| a.starts_with("-S") || a.starts_with("-R") || a.starts_with("-U")))
        },
    },
    Rule {
        name: "global_install",
        category: C::System,
        reason: "it installed or removed a tool for the whole machine, outside the tree",
        test: |c| {
            (c.is(&["npm", "pnpm", "yarn", "bun"]) && c.has(&["-g", "--global"]))
                || (c.is(&["yarn"]) && c.sub() == Some("global"))
                || c.sub_in(&["cargo"], &["install", "uninstall"])
                || c.sub_in(&["go"], &["install"])
                || c.sub_in(&["pipx", "gem"], &["install", "uninstall"])
                || (c.sub_in(&["pip", "pip3"], &["install", "uninstall"]) && c.has(&["--user", "--break-system-packages"]))
        },
    },
    Rule {
        name: "services",
        category: C::System,
        reason: "it changed the machine's services or scheduled jobs",
        test: |c| {
            c.sub_in(
                &["systemctl", "launchctl"],
                &[
                    "start", "stop", "restart", "reload", "enable", "disable", "mask", "kill",
                    "daemon-reload", "load", "unload", "bootstrap", "bootout", "kickstart",
                ],
            ) || (c.is(&["service"]) && c.args.len() >= 2)
                || (c.is(&["crontab"]) && !c.has(&["-l"]))
        },
    },
    Rule {
        name: "redirect_outside",
        category: C::OutsideWrite,
        reason: "it wrote a file outside the project, where ckpt does not capture it",
        test: |c| {
            c.args.iter().enumerate().any(|(i, a)| {
                let op = a.trim_start_matches(['0', '1', '2', '&']);
                match op.strip_prefix(">>").or_else(|| op.strip_prefix('>')) {
                    Some("") => c.args.get(i + 1).is_some_and(|p| c.outside(p)),
                    Some(p) => !p.starts_with('&') && c.outside(p),
                    None => false,
                }
            })
        },
    },
    Rule {
        name: "write_outside",
        category: C::OutsideWrite,
        reason: "it wrote, moved or deleted files outside the project, where ckpt does not capture them",
        test: |c| {
            let dest_last = ["cp", "mv", "install", "ln", "rsync", "tee"];
            let any_path = [
                "rm", "rmdir", "mkdir", "touch", "chmod", "chown", "chgrp", "truncate", "unlink",
                "shred", "tee",
            ];
            if c.is(&dest_last) && c.prog != "tee" {
                let target = c.args.windows(2).find(|w| w[0] == "-t").map(|w| w[1].as_str());
                return target.or_else(|| c.words().last()).is_some_and(|d| c.outside(d));
            }
            if c.is(&any_path) {
                return c.words().any(|p| c.outside(p));
            }
            if c.is(&["dd"]) {
                return c.args.iter().any(|a| a.strip_prefix("of=").is_some_and(|p| c.outside(p)));
            }
            if c.is(&["sed", "perl"]) && c.args.iter().any(|a| a.starts_with("-i") || a.starts_with("-pi")) {
                return c.words().skip(1).any(|p| c.outside(p));
            }
            false
        },
    },
];

const READ_ONLY_DOCKER: &[&str] = &[
    "ps", "images", "inspect", "logs", "version", "info", "search", "history", "top", "stats",
    "events", "port", "diff", "help",
];
const READ_ONLY_COMPOSE: &[&str] = &["ps", "logs", "config", "ls", "images", "top", "version"];

/// Paths outside the root that no one's state lives in: writing them is
/// no effect worth a warning.
const SCRATCH: &[&str] = &[
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/fd",
    "/proc/self",
    "/tmp",
    "/var/tmp",
];

/// Whether `p` (as a command names it, relative to the root) is outside
/// `root` and not scratch space. `~` and `$HOME` are outside: the core
/// does not know where home is.
fn outside(root: &Path, p: &str) -> bool {
    if p.is_empty() || p.starts_with('-') || p.contains("://") {
        return false;
    }
    if p.starts_with('~') || p.starts_with("$HOME") || p.starts_with("${HOME}") {
        return true;
    }
    let mut norm = PathBuf::new();
    for comp in root.join(p).components() {
        match comp {
            Component::ParentDir => {
                norm.pop();
            }
            Component::CurDir => {}
            other => norm.push(other),
        }
    }
    !norm.starts_with(root) && !SCRATCH.iter().any(|s| norm.starts_with(s))
}

/// The rules `command` matches (each once, in table order), read as a
/// shell would run it with `root` as its directory.
pub fn classify(command: &str, root: &Path) -> Vec<&'static Rule> {
    let mut out: Vec<&'static Rule> = Vec::new();
    for argv in simple_commands(command, 0) {
        let Some((prog, args)) = argv.split_first() else {
            continue;
        };
        let prog = prog.rsplit('/').next().unwrap_or(prog);
        let call = Call { prog, args, root };
        for r in RULES {
            if (r.test)(&call) && !out.iter().any(|o| o.name == r.name) {
                out.push(r);
            }
        }
    }
    out.sort_by_key(|r| RULES.iter().position(|x| x.name == r.name));
    // A force-push is a push: say it once, as the stronger.
    if out.iter().any(|r| r.name == "git_force_push") {
        out.retain(|r| r.name != "git_push");
    }
    out
}

/// Shell operators that end a simple command.
const SEPARATORS: &[&str] = &[
    "&&", "||", ";", "|", "&", "|&", "(", ")", "{", "}", "!", ";;",
];

/// How deep `bash -c '…'` is read inside itself.
const MAX_DEPTH: usize = 4;

/// The simple commands of a command line, wrappers taken off, `sh -c`
/// scripts read as their own lines. Each line is split on its own when
/// every line is whole (a newline ends a command); a quote that spans lines
/// makes the whole text one line.
fn simple_commands(command: &str, depth: usize) -> Vec<Vec<String>> {
    let lines: Option<Vec<Vec<String>>> = command.lines().map(shlex::split).collect();
    let words: Vec<String> = match lines {
        Some(lines) => lines
            .into_iter()
            .flat_map(|mut l| {
                l.push(";".into());
                l
            })
            .collect(),
        // Unbalanced quotes: the plain words are the best guess.
        None => match shlex::split(command) {
            Some(w) => w,
            None => command.split_whitespace().map(str::to_string).collect(),
        },
    };
    let mut out = Vec::new();
    let mut cur: Vec<String> = Vec::new();
    let end = |cur: &mut Vec<String>, out: &mut Vec<Vec<String>>| {
        if !cur.is_empty() {
            out.extend(unwrap(std::mem::take(cur), depth));
        }
    };
    for w in words {
        if SEPARATORS.contains(&w.as_str()) {
            end(&mut cur, &mut out);
            continue;
        }
        let mut w = w.as_str();
        while let Some(rest) = w.strip_prefix('(') {
            w = rest;
        }
        let mut closes = false;
        while let Some(rest) = w.strip_suffix([';', ')']) {
            w = rest;
            closes = true;
        }
        if !w.is_empty() {
            cur.push(w.to_string());
        }
        if closes {
            end(&mut cur, &mut out);
        }
    }
    end(&mut cur, &mut out);
    out
}

/// Takes wrappers off a simple command (`sudo`, `env X=Y`, assignments,
/// `nohup`, `timeout 5`…); a shell's `-c` script is read as commands.
fn unwrap(mut argv: Vec<String>, depth: usize) -> Vec<Vec<String>> {
    loop {
        let Some(first) = argv.first() else {
            return vec![];
        };
        let prog = first.rsplit('/').next().unwrap_or(first).to_string();
        let skip = match prog.as_str() {
            _ if is_assignment(first) => 1,
            "sudo" | "doas" => {
                1 + options(
                    &argv[1..],
                    &["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t"],
                )
            }
            "env" => {
                let mut n = 1 + options(&argv[1..], &["-u", "-C", "-S"]);
                while argv.get(n).is_some_and(|a| is_assignment(a)) {
                    n += 1;
                }
                n
            }
            "nice" | "ionice" => 1 + options(&argv[1..], &["-n", "-c"]),
            "timeout" => {
                let n = 1 + options(&argv[1..], &["-s", "-k", "--signal", "--kill-after"]);
                n + 1
            }
            "nohup" | "time" | "command" | "exec" | "builtin" | "caffeinate" => 1,
            "stdbuf" | "chronic" => 1 + options(&argv[1..], &[]),
            "bash" | "sh" | "zsh" | "dash" | "ksh" | "fish" => {
                let script = argv
                    .iter()
                    .position(|a| a.starts_with('-') && !a.starts_with("--") && a.ends_with('c'))
                    .and_then(|i| argv.get(i + 1));
                return match script {
                    Some(s) if depth < MAX_DEPTH => simple_commands(s, depth + 1),
                    _ => vec![argv],
                };
            }
            "eval" if depth < MAX_DEPTH => return simple_commands(&argv[1..].join(" "), depth + 1),
            _ => return vec![argv],
        };
        argv.drain(..skip.min(argv.len()));
    }
}

/// `NAME=value`.
fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
            && !name.starts_with(|ch: char| ch.is_ascii_digit())
    })
}

/// How many leading words of `args` are options (with the values of those
/// in `valued`).
fn options(args: &[String], valued: &[&str]) -> usize {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            return i + 1;
        }
        if !a.starts_with('-') {
            break;
        }
        i += if valued.contains(&a.as_str()) { 2 } else { 1 };
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matched(command: &str) -> Vec<&'static str> {
        classify(command, Path::new("/work/proj"))
            .iter()
            .map(|r| r.name)
            .collect()
    }

    /// One test per rule, named after it: commands it must flag, then
    /// commands it must not.
    macro_rules! rule_tests {
        ($($name:ident: [$($yes:literal),+ $(,)?] [$($no:literal),+ $(,)?];)*) => {
            $(
                #[test]
                fn $name() {
                    for yes in [$($yes),+] {
                        assert!(matched(yes).contains(&stringify!($name)), "{yes:?} is {:?}", matched(yes));
                    }
                    for no in [$($no),+] {
                        assert!(!matched(no).contains(&stringify!($name)), "{no:?} is {:?}", matched(no));
                    }
                }
            )*
            const TESTED: &[&str] = &[$(stringify!($name)),*];
        };
    }

    rule_tests! {
        git_force_push: ["git push --force origin main", "git push -f", "git push origin +main", "git push --force-with-lease"] ["git push origin main", "git fetch --force"];
        git_push: ["git push origin main", "cd sub && git -C .. push"] ["git pull --ff-only origin", "git push -f"];
        git_reset: ["git reset --hard HEAD~1", "git reset HEAD^"] ["git status", "echo git reset"];
        git_clean: ["git clean -fdx"] ["git clean -n", "git status"];
        git_checkout: ["git checkout main", "git switch -c topic"] ["git checkout -- src/a.rs", "git log"];
        git_stash: ["git stash", "git stash pop"] ["git stash list", "git status"];
        git_commit: ["git commit -am fix", "git merge topic", "git pull"] ["git diff", "git log --oneline"];
        git_rebase: ["git rebase -i HEAD~3"] ["git log", "git show HEAD"];
        git_ref_delete: ["git branch -D old", "git tag -d v1"] ["git branch", "git tag v1"];
        npm_publish: ["npm publish", "pnpm publish --access public", "yarn npm publish"] ["npm install", "npm run publish-docs"];
        cargo_publish: ["cargo publish", "cargo yank --version 1.0.0"] ["cargo build", "cargo test publish"];
        python_publish: ["twine upload dist/*", "poetry publish", "python -m twine upload dist/*"] ["twine check dist/*", "poetry build"];
        gem_publish: ["gem push x-1.0.gem"] ["gem build x.gemspec", "gem list"];
        other_publish: ["mvn deploy", "./gradlew publish", "dotnet nuget push x.nupkg"] ["mvn test", "dotnet build"];
        curl_write: ["curl -X POST https://api", "curl -d a=b https://api", "curl -T f https://up", "curl -XPUT u", "curl --json '{}' u"] ["curl https://example.com", "curl -X GET u", "curl -o out.html u"];
        wget_write: ["wget --post-data=a=b u", "wget --method=DELETE u"] ["wget u", "wget --method=GET u"];
        httpie_write: ["http POST api.example/x a=b", "xh put u"] ["http GET u", "http u"];
        gh_write: ["gh pr create --fill", "gh release create v1", "gh api -X POST repos/o/r/issues", "gh api repos/o/r/issues -f title=x"] ["gh pr view 1", "gh api repos/o/r"];
        ssh_command: ["ssh host rm -rf /srv/app", "ssh -p 22 -i key user@host 'systemctl restart app'"] ["ssh host", "ssh -p 22 host"];
        copy_to_remote: ["scp dist.tar host:/srv", "rsync -a build/ user@host:/var/www", "rsync a rsync://host/mod"] ["scp host:/etc/x ./x", "rsync -a src/ dst/"];
        database_client: ["psql -c 'DROP TABLE users' db", "redis-cli FLUSHALL", "mysql -e 'insert into t values (1)'"] ["pg_dump2 x", "echo psql"];
        sqlite_outside: ["sqlite3 /var/lib/app.db 'delete from t'", "sqlite3 ~/app.db"] ["sqlite3 app.db 'delete from t'", "sqlite3 /work/proj/data/app.db"];
        container: ["docker push me/app", "docker run --rm -it img", "docker compose up -d", "podman rm c1", "docker-compose down"] ["docker ps", "docker compose logs", "docker images"];
        kubectl_write: ["kubectl apply -f k8s/", "kubectl delete pod x"] ["kubectl get pods", "kubectl describe pod x"];
        helm_write: ["helm upgrade --install app chart/"] ["helm template chart/", "helm list"];
        terraform_apply: ["terraform apply -auto-approve", "tofu destroy", "pulumi up --yes"] ["terraform plan", "terraform fmt"];
        cloud_write: ["aws s3 cp f s3://b/f", "aws ec2 terminate-instances --instance-ids i-1", "gcloud run deploy svc", "vercel --prod"] ["aws s3 ls", "aws ec2 describe-instances", "gcloud config list"];
        system_packages: ["apt-get install -y jq", "brew install jq", "pacman -Syu"] ["apt-cache search jq", "brew list"];
        global_install: ["npm install -g typescript", "cargo install ripgrep", "go install x@latest", "pip install --user x"] ["npm install typescript", "cargo build", "pip install -r requirements.txt"];
        services: ["systemctl restart nginx", "crontab f", "service nginx reload"] ["systemctl status nginx", "crontab -l"];
        redirect_outside: ["echo x > /etc/hosts", "echo x >> ~/.bashrc", "cat a >/home/u/out", "echo x > ../other/f"] ["echo x > out.txt", "echo x > /dev/null", "make 2>&1 > build.log", "echo x > /tmp/scratch"];
        write_outside: ["cp build/app /usr/local/bin/", "rm -rf ~/.cache/x", "mv f ../elsewhere/", "tee -a /etc/x", "sed -i s/a/b/ /etc/conf", "dd if=img of=/dev/sdb"] ["cp a b", "rm -rf build", "mkdir -p /work/proj/x", "cp x /tmp/y"];
    }

    #[test]
    fn every_rule_has_its_test() {
        for r in RULES {
            assert!(TESTED.contains(&r.name), "rule {} has no test", r.name);
        }
        assert_eq!(TESTED.len(), RULES.len());
    }

    #[test]
    fn commands_are_split_and_unwrapped_as_a_shell_runs_them() {
        let cases = [
            ("npm test && git push", &["git_push"][..]),
            ("make; git push origin main", &["git_push"]),
            ("cat log | psql db", &["database_client"]),
            ("sudo -u deploy git push", &["git_push"]),
            ("env GIT_SSH=x FOO=1 git push", &["git_push"]),
            ("FOO=1 git push", &["git_push"]),
            ("bash -c 'cd x && git push --force'", &["git_force_push"]),
            ("sh -lc \"npm publish\"", &["npm_publish"]),
            ("(cd sub && git push)", &["git_push"]),
            ("timeout 60 kubectl apply -f x", &["kubectl_write"]),
            ("nohup docker run img &", &["container"]),
            (
                "git commit -m 'x' && git push -f",
                &["git_force_push", "git_commit"],
            ),
            ("cargo test\ngit push", &["git_push"]),
            ("/usr/bin/git push", &["git_push"]),
            ("echo 'git push' # a note", &[]),
            ("grep -r 'git push' .", &[]),
            ("echo \"unbalanced", &[]),
        ];
        for (cmd, want) in cases {
            let mut got = matched(cmd);
            got.sort_unstable();
            let mut want = want.to_vec();
            want.sort_unstable();
            assert_eq!(got, want, "{cmd:?}");
        }
    }
}
