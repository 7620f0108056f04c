//! `dataward doctor [--config FILE] [--send-test]`: everything a config needs, checked
//! one line at a time with ✓ or ✗ and, for a ✗, what to do. Nothing is written to a
//! warehouse, nothing is scanned (each monitor's query is planned with `EXPLAIN`), and
//! no alert is sent unless `--send-test` asks.
//!
//! One file per kind of check: [`files`] (permissions), [`warehouses`] (reachable with
//! the credentials named), [`monitors`] (tables, columns, plans), [`lineage`]
//! (manifest, catalog, notes), [`endpoints`] (orchestrator, alert destinations),
//! [`engine`] (the engine's socket), [`state`] (team state on PostgreSQL: the lock, the
//! lease, who leads). Exit 0 when every line is ✓, 1 otherwise.

mod endpoints;
mod engine;
mod files;
mod lineage;
mod monitors;
mod openlineage;
mod state;
mod warehouses;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::config::Config;
use crate::sanitize;

pub struct DoctorOptions {
    pub config: PathBuf,
    pub data_dir: PathBuf,
    /// Send a test alert to every destination (and resolve it at once).
    pub send_test: bool,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub ok: bool,
    /// What was checked: `warehouse shop`, `monitor raw.orders`.
    pub what: String,
    /// What was found.
    pub detail: String,
    /// For a ✗: what to do.
    pub fix: Option<String>,
}

impl Line {
    pub fn ok(what: impl Into<String>, detail: impl Into<String>) -> Line {
        Line {
            ok: true,
            what: what.into(),
            detail: detail.into(),
            fix: None,
        }
    }

    pub fn bad(what: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Line {
        Line {
            ok: false,
            what: what.into(),
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Runs every check, prints the table, exit 0 when all are ✓.
pub fn run(options: &DoctorOptions) -> anyhow::Result<ExitCode> {
    let lines = check(options);
    print!(
        "{}",
        sanitize::for_terminal_multiline(&render(&options.config, &lines))
    );
    Ok(if lines.iter().all(|l| l.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Every line of the report, in order.
pub fn check(options: &DoctorOptions) -> Vec<Line> {
    let mut lines = Vec::new();
    let config = match load(&options.config) {
        Ok(config) => {
            lines.push(Line::ok(
                "config",
                format!(
                    "{} loads: {} warehouse{}, {} monitor{}",
                    options.config.display(),
                    config.warehouse.len(),
                    plural(config.warehouse.len()),
                    config.monitor.len(),
                    plural(config.monitor.len()),
                ),
            ));
            config
        }
        Err(e) => {
            lines.push(Line::bad(
                "config",
                format!("{e:#}"),
                "correct the line named (config.example.toml documents every key), or make \
                 one with `dataward init --dbt-project DIR`",
            ));
            // Without a config only the data directory and the engine can be looked at.
            lines.extend(files::data_dir(&options.data_dir));
            lines.extend(engine::check(&options.data_dir));
            return lines;
        }
    };
    lines.extend(files::check(&config, &options.data_dir));
    lines.extend(state::check(&config));
    let reachable = warehouses::check(&config, &mut lines);
    lines.extend(monitors::check(&config, &reachable));
    lines.extend(lineage::check(&config));
    lines.extend(openlineage::check(&config));
    lines.extend(endpoints::check(
        &config,
        &options.data_dir,
        options.send_test,
    ));
    lines.extend(engine::check(&options.data_dir));
    lines
}

/// The config as the engine reads it, but a path it names that is missing is left to
/// the line that checks that path (the whole config is not refused for it).
fn load(path: &Path) -> anyhow::Result<Config> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    Config::parse(&text, path)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The table: a mark, what, and the detail; each ✗ with its fix below it.
pub fn render(config: &Path, lines: &[Line]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "dataward doctor: {}", config.display());
    let width = lines
        .iter()
        .map(|l| l.what.chars().count())
        .max()
        .unwrap_or(0)
        .min(32);
    for line in lines {
        let mark = if line.ok { "✓" } else { "✗" };
        let _ = writeln!(
            out,
            "{mark} {:<width$}  {}",
            line.what,
            one_line(&line.detail)
        );
        if let Some(fix) = &line.fix {
            let _ = writeln!(out, "  {:<width$}  → {}", "", one_line(fix));
        }
    }
    let bad = lines.iter().filter(|l| !l.ok).count();
    let _ = writeln!(
        out,
        "{} ✓, {bad} ✗{}",
        lines.len() - bad,
        if bad == 0 { ": all good" } else { "" }
    );
    out
}

/// Text from outside (a server's message, a table name) on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_marks_each_line_and_gives_a_fix_for_each_cross() {
        let lines = vec![
            Line::ok("warehouse shop", "reachable"),
            Line::bad(
                "monitor raw.orders",
                "42P01: relation\n\"raw.orders\" does not exist",
                "build it",
            ),
        ];
        let text = render(Path::new("c.toml"), &lines);
        assert_eq!(
            text,
            "dataward doctor: c.toml\n\
             ✓ warehouse shop      reachable\n\
             ✗ monitor raw.orders  42P01: relation \"raw.orders\" does not exist\n\
             \x20                     → build it\n\
             1 ✓, 1 ✗\n"
        );
    }
}
