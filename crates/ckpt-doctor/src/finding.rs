//! One finding of `doctor`: what was checked, how it stands, what was
//! found, and the command that fixes it.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Ok,
    /// Works, but worse than it could (or soon will not).
    Warn,
    /// Broken: turns are lost or rewinds cannot be trusted.
    Fail,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// What was checked: `daemon`, `service`, `inotify`, `agent codex`…
    pub check: String,
    pub level: Level,
    pub found: String,
    /// The command that fixes it (none for `ok`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    pub fn ok(check: impl Into<String>, found: impl Into<String>) -> Finding {
        Finding {
            check: check.into(),
            level: Level::Ok,
            found: found.into(),
            fix: None,
        }
    }

    pub fn warn(
        check: impl Into<String>,
        found: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            check: check.into(),
            level: Level::Warn,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn fail(
        check: impl Into<String>,
        found: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            check: check.into(),
            level: Level::Fail,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }
}

/// The human report: one line per finding, its fix below it, then a count.
pub fn print(findings: &[Finding]) {
    for f in findings {
        println!("{:<5} {}: {}", f.level.name(), f.check, f.found);
        if let Some(fix) = &f.fix {
            println!("      fix: {fix}");
        }
    }
    let count = |l: Level| findings.iter().filter(|f| f.level == l).count();
    let (warn, fail) = (count(Level::Warn), count(Level::Fail));
    println!(
        "{} check{}: {} ok, {warn} warning{}, {fail} failure{}",
        findings.len(),
        plural(findings.len()),
        count(Level::Ok),
        plural(warn),
        plural(fail)
    );
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
