//! Collected samples, the table of medians with ckpt/git ratios, the
//! targets of issue 4 with met/missed, and the JSON file.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::{json, Value};

pub const SYSTEMS: [&str; 3] = ["ckpt", "git-fresh", "git-kept"];

#[derive(Serialize, Clone)]
pub struct Sample {
    pub scenario: String,
    pub op: String,
    pub system: String,
    pub rep: usize,
    pub secs: f64,
}

#[derive(Serialize, Clone)]
pub struct Metric {
    pub scenario: String,
    pub name: String,
    pub system: String,
    pub value: f64,
    pub unit: String,
}

#[derive(Serialize, Clone)]
pub struct Failure {
    pub scenario: String,
    pub system: String,
    pub kind: String,
    pub rep: usize,
    pub message: String,
}

#[derive(Default)]
pub struct Results {
    pub samples: Vec<Sample>,
    pub metrics: Vec<Metric>,
    pub failures: Vec<Failure>,
    pub notes: Vec<String>,
}

pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

impl Results {
    pub fn time(&mut self, scenario: &str, op: &str, system: &str, rep: usize, d: Duration) {
        self.samples.push(Sample {
            scenario: scenario.into(),
            op: op.into(),
            system: system.into(),
            rep,
            secs: d.as_secs_f64(),
        });
    }

    pub fn metric(&mut self, scenario: &str, name: &str, system: &str, value: f64, unit: &str) {
        self.metrics.push(Metric {
            scenario: scenario.into(),
            name: name.into(),
            system: system.into(),
            value,
            unit: unit.into(),
        });
    }

    pub fn fail(&mut self, scenario: &str, system: &str, kind: &str, rep: usize, message: String) {
        self.failures.push(Failure {
            scenario: scenario.into(),
            system: system.into(),
            kind: kind.into(),
            rep,
            message,
        });
    }

    pub fn note(&mut self, n: String) {
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    pub fn failure(&self, scenario: &str, system: &str) -> Option<&Failure> {
        self.failures
            .iter()
            .find(|f| f.scenario == scenario && f.system == system)
    }

    /// Median seconds of an operation.
    pub fn median_time(&self, scenario: &str, op: &str, system: &str) -> Option<f64> {
        if self.failure(scenario, system).is_some() {
            return None;
        }
        median(
            self.samples
                .iter()
                .filter(|s| s.scenario == scenario && s.op == op && s.system == system)
                .map(|s| s.secs)
                .collect(),
        )
    }

    /// Median of a metric.
    pub fn median_metric(&self, scenario: &str, name: &str, system: &str) -> Option<f64> {
        if self.failure(scenario, system).is_some() {
            return None;
        }
        median(
            self.metrics
                .iter()
                .filter(|m| m.scenario == scenario && m.name == name && m.system == system)
                .map(|m| m.value)
                .collect(),
        )
    }

    fn count(&self, scenario: &str, op: &str, system: &str) -> usize {
        self.samples
            .iter()
            .filter(|s| s.scenario == scenario && s.op == op && s.system == system)
            .count()
    }
}

/// What a table row shows.
#[derive(Clone, Copy)]
enum Kind {
    Time,
    Metric(Unit),
}

#[derive(Clone, Copy)]
enum Unit {
    MiB,
    KiB,
    Percent,
    Ms,
    Count,
}

struct Row {
    scenario: &'static str,
    key: &'static str,
    label: &'static str,
    kind: Kind,
}

const fn t(scenario: &'static str, key: &'static str, label: &'static str) -> Row {
    Row {
        scenario,
        key,
        label,
        kind: Kind::Time,
    }
}

const fn m(scenario: &'static str, key: &'static str, label: &'static str, u: Unit) -> Row {
    Row {
        scenario,
        key,
        label,
        kind: Kind::Metric(u),
    }
}

const ROWS: &[Row] = &[
    t("connect", "spawn", "process spawn only (--version)"),
    t("connect", "connect", "ckptctl status round trip"),
    t("watch", "watch", "watch: baseline / first snapshot"),
    m("watch", "baseline store", "watch: store size", Unit::MiB),
    m(
        "watch",
        "baseline store / tree",
        "watch: store / tree size",
        Unit::Percent,
    ),
    m(
        "watch",
        "peak RSS after baseline",
        "watch: daemon peak RSS",
        Unit::MiB,
    ),
    t("idle", "turn-start", "idle: turn-start"),
    t("idle", "turn-end", "idle: turn-end"),
    t("small", "turn-start", "small: turn-start"),
    t("small", "turn-end", "small: turn-end"),
    t("small", "rewind", "small: rewind"),
    t("small", "redo", "small: redo"),
    t("scaffold", "rewind", "scaffold: rewind 200 dirs"),
    t("scaffold", "next turn", "scaffold: next turn"),
    t("fulltree", "turn-end", "fulltree: turn-end"),
    t("fulltree", "rewind", "fulltree: rewind"),
    t("bigfile", "turn-end", "bigfile: turn-end"),
    t("bigfile", "rewind", "bigfile: rewind 10 turns"),
    m(
        "bigfile",
        "store growth/turn",
        "bigfile: store growth/turn",
        Unit::KiB,
    ),
    m(
        "bigfile",
        "store growth/turn without WAL",
        "  (without WAL)",
        Unit::KiB,
    ),
    t("blame", "blame", "blame: 5,000 lines, 100 turns"),
    t("forget", "forget", "unwatch, dropping history"),
    m(
        "daemon",
        "peak RSS",
        "daemon peak RSS (end of run)",
        Unit::MiB,
    ),
    m("daemon", "idle CPU", "daemon idle CPU", Unit::Ms),
    m(
        "daemon",
        "idle wake-ups",
        "daemon idle context switches",
        Unit::Count,
    ),
    t(
        "scale/watch",
        "watch",
        "10x watch: baseline / first snapshot",
    ),
    m(
        "scale/watch",
        "baseline store / tree",
        "10x watch: store / tree size",
        Unit::Percent,
    ),
    m(
        "scale/watch",
        "peak RSS after baseline",
        "10x watch: daemon peak RSS",
        Unit::MiB,
    ),
    t("scale/idle", "turn-start", "10x idle: turn-start"),
    t("scale/idle", "turn-end", "10x idle: turn-end"),
    t("scale/small", "turn-start", "10x small: turn-start"),
    t("scale/small", "turn-end", "10x small: turn-end"),
    t("scale/small", "rewind", "10x small: rewind"),
    t("scale/small", "redo", "10x small: redo"),
    t("scale/scaffold", "rewind", "10x scaffold: rewind 200 dirs"),
    t("scale/scaffold", "next turn", "10x scaffold: next turn"),
    t("scale/forget", "forget", "10x unwatch, dropping history"),
    m(
        "scale/daemon",
        "peak RSS",
        "10x daemon peak RSS (end of run)",
        Unit::MiB,
    ),
    m("scale/daemon", "idle CPU", "10x daemon idle CPU", Unit::Ms),
    m(
        "scale/daemon",
        "idle wake-ups",
        "10x daemon idle context switches",
        Unit::Count,
    ),
];

impl Row {
    fn value(&self, r: &Results, system: &str) -> Option<f64> {
        match self.kind {
            Kind::Time => r.median_time(self.scenario, self.key, system),
            Kind::Metric(_) => r.median_metric(self.scenario, self.key, system),
        }
    }

    fn format(&self, v: f64) -> String {
        match self.kind {
            Kind::Time => fmt_secs(v),
            Kind::Metric(Unit::MiB) => format!("{:.1} MiB", v / (1u64 << 20) as f64),
            Kind::Metric(Unit::KiB) => format!("{:.0} KiB", v / 1024.0),
            Kind::Metric(Unit::Percent) => format!("{:.1} %", v * 100.0),
            Kind::Metric(Unit::Ms) => format!("{v:.1} ms"),
            Kind::Metric(Unit::Count) => format!("{v:.0}"),
        }
    }

    fn cell(&self, r: &Results, system: &str) -> String {
        if let Some(f) = r.failure(self.scenario, system) {
            return f.kind.clone();
        }
        match self.value(r, system) {
            Some(v) => self.format(v),
            None => "-".into(),
        }
    }
}

fn fmt_secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.3}", a / b),
        _ => "-".into(),
    }
}

/// The table of medians.
pub fn table(r: &Results) -> String {
    let mut lines = vec![vec![
        "scenario / operation (median)".to_string(),
        "ckpt".into(),
        "git-fresh".into(),
        "git-kept".into(),
        "ckpt/git-fresh".into(),
        "ckpt/git-kept".into(),
    ]];
    for row in ROWS {
        let cells: Vec<String> = SYSTEMS.iter().map(|s| row.cell(r, s)).collect();
        if cells.iter().all(|c| c == "-") {
            continue;
        }
        let v: Vec<Option<f64>> = SYSTEMS.iter().map(|s| row.value(r, s)).collect();
        let mut line = vec![row.label.to_string()];
        line.extend(cells);
        line.push(ratio(v[0], v[1]));
        line.push(ratio(v[0], v[2]));
        lines.push(line);
    }
    let widths: Vec<usize> = (0..lines[0].len())
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (n, l) in lines.iter().enumerate() {
        let mut s = String::new();
        for (i, c) in l.iter().enumerate() {
            if i == 0 {
                let _ = write!(s, "| {:<w$} ", c, w = widths[i]);
            } else {
                let _ = write!(s, "| {:>w$} ", c, w = widths[i]);
            }
        }
        s.push('|');
        out.push_str(&s);
        out.push('\n');
        if n == 0 {
            let sep: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    if i == 0 {
                        format!("|{}", "-".repeat(w + 2))
                    } else {
                        format!("|{}:", "-".repeat(w + 1))
                    }
                })
                .collect();
            out.push_str(&sep.concat());
            out.push_str("|\n");
        }
    }
    out
}

#[derive(Serialize)]
pub struct Target {
    pub target: String,
    pub wanted: String,
    pub measured: String,
    /// "met", "missed", or "unknown" (not measured, or a system was wrong).
    pub status: String,
}

fn target(name: &str, wanted: &str, measured: String, ok: Option<bool>) -> Target {
    Target {
        target: name.into(),
        wanted: wanted.into(),
        measured,
        status: match ok {
            Some(true) => "met",
            Some(false) => "missed",
            None => "unknown",
        }
        .into(),
    }
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn x(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.2}x")).unwrap_or_else(|| "-".into())
}

/// Issue 4's targets, evaluated on this run's medians.
pub fn targets(r: &Results) -> Vec<Target> {
    let mt = |s: &str, o: &str, sys: &str| r.median_time(s, o, sys);
    let mm = |s: &str, n: &str, sys: &str| r.median_metric(s, n, sys);
    let div = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let mut out = Vec::new();

    let ck = mt("idle", "turn-start", "ckpt");
    let speed = div(mt("idle", "turn-start", "git-kept"), ck);
    out.push(target(
        "idle turn-start vs git-kept",
        ">= 15x faster",
        format!("{} faster", x(speed)),
        speed.map(|s| s >= 15.0),
    ));
    let vs_connect = div(ck, mt("connect", "connect", "ckpt"));
    out.push(target(
        "idle turn-start vs bare status round trip",
        "<= 3x",
        x(vs_connect),
        vs_connect.map(|s| s <= 3.0),
    ));

    for (scen, op) in [
        ("idle", "turn-start"),
        ("idle", "turn-end"),
        ("small", "turn-start"),
        ("small", "turn-end"),
        ("small", "rewind"),
    ] {
        let grow = |sys: &str| div(mt(&format!("scale/{scen}"), op, sys), mt(scen, op, sys));
        let g = grow("ckpt");
        out.push(target(
            &format!("scale: {scen} {op}, 10x tree / 1x tree"),
            "ckpt <= 1.3x (git grows)",
            format!(
                "ckpt {}, git-fresh {}, git-kept {}",
                x(g),
                x(grow("git-fresh")),
                x(grow("git-kept"))
            ),
            g.map(|g| g <= 1.3),
        ));
    }

    let s = div(
        mt("small", "rewind", "git-fresh"),
        mt("small", "rewind", "ckpt"),
    );
    out.push(target(
        "small rewind vs git-fresh",
        ">= 50x faster",
        format!("{} faster", x(s)),
        s.map(|s| s >= 50.0),
    ));

    let best = |scen: &str, op: &str| min_opt(mt(scen, op, "git-fresh"), mt(scen, op, "git-kept"));
    let f = div(
        mt("fulltree", "turn-end", "ckpt"),
        best("fulltree", "turn-end"),
    );
    out.push(target(
        "fulltree turn-end vs git's snapshot (faster variant)",
        "<= 0.5x",
        x(f),
        f.map(|f| f <= 0.5),
    ));
    let f = div(best("fulltree", "rewind"), mt("fulltree", "rewind", "ckpt"));
    out.push(target(
        "fulltree rewind vs git (faster variant)",
        ">= 3x faster",
        format!("{} faster", x(f)),
        f.map(|f| f >= 3.0),
    ));

    let g = min_opt(
        mm("bigfile", "store growth/turn", "git-fresh"),
        mm("bigfile", "store growth/turn", "git-kept"),
    );
    let b = div(mm("bigfile", "store growth/turn", "ckpt"), g);
    out.push(target(
        "bigfile store growth per turn vs git",
        "<= 0.6x",
        x(b),
        b.map(|b| b <= 0.6),
    ));

    // Issue 19: "well under a second".
    let b = mt("blame", "blame", "ckpt");
    out.push(target(
        "blame: 5,000-line file, 100 turns",
        "< 0.5 s",
        b.map(fmt_secs).unwrap_or_else(|| "-".into()),
        b.map(|b| b < 0.5),
    ));

    // Only the 1x tree: the 10x tree is ten identical copies, which any
    // content-addressed store dedups.
    let v = mm("watch", "baseline store / tree", "ckpt");
    out.push(target(
        "baseline store size",
        "<= 20% of the tree",
        v.map(|v| format!("{:.1} %", v * 100.0))
            .unwrap_or_else(|| "-".into()),
        v.map(|v| v <= 0.2),
    ));

    let rss = mm("scale/daemon", "peak RSS", "ckpt");
    out.push(target(
        "daemon peak RSS at 10x tree",
        "< 64 MiB",
        rss.map(|v| format!("{:.1} MiB", v / (1u64 << 20) as f64))
            .unwrap_or_else(|| "-".into()),
        rss.map(|v| v < 64.0 * (1u64 << 20) as f64),
    ));
    for scen in ["daemon", "scale/daemon"] {
        let cpu = mm(scen, "idle CPU", "ckpt");
        let wake = mm(scen, "idle wake-ups", "ckpt");
        let secs = mm(scen, "idle seconds", "ckpt").unwrap_or(0.0);
        out.push(target(
            &format!("{scen}: idle, no periodic wake-ups"),
            "~0 CPU, <= 1 context switch",
            format!(
                "{} ms CPU, {} context switches in {secs:.0} s",
                cpu.map(|c| format!("{c:.1}")).unwrap_or_else(|| "-".into()),
                wake.map(|c| format!("{c:.0}"))
                    .unwrap_or_else(|| "-".into()),
            ),
            match (cpu, wake) {
                (Some(c), Some(w)) => Some(c <= 10.0 && w <= 1.0),
                _ => None,
            },
        ));
    }
    out
}

pub fn targets_text(ts: &[Target]) -> String {
    let mut s = String::new();
    for t in ts {
        let _ = writeln!(
            s,
            "  [{:^7}] {}: want {}, got {}",
            t.status, t.target, t.wanted, t.measured
        );
    }
    s
}

/// Everything: meta, all samples, metrics, failures, notes, the medians
/// table and the targets.
pub fn write_json(path: &Path, meta: Value, r: &Results, ts: &[Target]) -> Result<()> {
    let rows: Vec<Value> = ROWS
        .iter()
        .map(|row| {
            let mut o = serde_json::Map::new();
            o.insert("scenario".into(), row.scenario.into());
            o.insert("op".into(), row.key.into());
            o.insert("label".into(), row.label.into());
            for s in SYSTEMS {
                o.insert(s.into(), json!(row.value(r, s)));
                o.insert(
                    format!("{s} samples"),
                    json!(match row.kind {
                        Kind::Time => r.count(row.scenario, row.key, s),
                        Kind::Metric(_) => 0,
                    }),
                );
            }
            Value::Object(o)
        })
        .collect();
    let doc = json!({
        "meta": meta,
        "medians": rows,
        "targets": ts,
        "failures": r.failures,
        "notes": r.notes,
        "metrics": r.metrics,
        "samples": r.samples,
    });
    let text = serde_json::to_string_pretty(&doc)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
