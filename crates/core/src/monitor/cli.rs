//! `dataward check` and `dataward backtest`: what the command line calls, so main.rs
//! stays a parser.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use chrono::{Datelike, NaiveDate};
use serde::Serialize;

use super::poller::{Explained, PollCost, Poller, Sender};
use super::{thousands, Health, Observation};
use crate::approve::quiet::{quiet_at, Quiet};
use crate::config::{parse_duration, Config};
use crate::detect::labelled::WindowScore;
use crate::detect::{self, volume, VerdictKind};
use crate::progress::Throttle;
use crate::sanitize;

/// One line of `dataward check --json`.
#[derive(Debug, Serialize)]
pub struct CheckLine<'a> {
    pub monitor: &'a str,
    pub table: &'a str,
    pub check: &'a str,
    pub verdict: &'a str,
    pub observed: Option<f64>,
    pub expected_low: Option<f64>,
    pub expected_high: Option<f64>,
    /// The usual value the band is built around.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_baseline: Option<f64>,
    pub health: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<&'a str>,
    /// row_count, null_rate: why the baseline is learned from dataward's own polls
    /// rather than the table's days ("no timestamp_column").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_polls: Option<&'a str>,
    /// volume: the day judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub day: Option<&'a str>,
    /// volume only, with `day`: that day is today, counted up to the time of the check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
    /// null_rate: measured over the rows loaded at or after this time (UTC), not the
    /// whole table; absent when the whole table was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<crate::clock::Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'a str>,
    /// volume: the days short but not yet built by the table's job, so not judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_built: Option<&'a str>,
    /// The monitor pages nobody now (a snooze, a maintenance window): a breach under
    /// it is shown but does not fail the exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiet: Option<QuietLine>,
}

/// Until when a monitor is quiet, and why, as `check --json` prints it.
#[derive(Debug, Serialize)]
pub struct QuietLine {
    pub until: crate::clock::Timestamp,
    pub why: String,
}

impl<'a> CheckLine<'a> {
    pub fn from_observation(o: &'a Observation) -> CheckLine<'a> {
        CheckLine {
            monitor: &o.monitor,
            table: &o.table,
            check: o.check.as_str(),
            verdict: o.verdict.as_str(),
            observed: o.value,
            expected_low: o.expected.map(|r| r.low),
            expected_high: o.expected.map(|r| r.high),
            expected_baseline: o.expected.map(|r| r.baseline),
            health: o.health.as_str(),
            column: o.detail.column.as_deref(),
            from_polls: o.detail.from_polls.as_deref(),
            day: o.detail.day.as_deref(),
            // Said with the day it qualifies: a volume check that ran.
            partial: o.detail.day.is_some().then_some(o.detail.partial),
            since: o.detail.since,
            score: o.detail.score,
            message: o.detail.message.as_deref(),
            not_built: o.detail.not_built.as_deref(),
            quiet: None,
        }
    }
}

/// Runs the monitors in the config: once (`--once`), or on their schedules until
/// stopped. Exit 1 when any check of the last poll is in breach (its monitor not
/// snoozed nor in a maintenance window), 3 when none is but some check could not run.
pub fn check(
    config_path: &Path,
    once: bool,
    json: bool,
    explain: bool,
    data_dir: &Path,
) -> Result<ExitCode> {
    let config = Config::load(config_path)?;
    if config.monitor.is_empty() {
        // Nothing to run would otherwise read as "all ok".
        bail!(
            "{}: no [[monitor]] to run; add one (see config.example.toml)",
            config_path.display()
        );
    }
    let mut poller = Poller::from_config(&config)?;
    let mut beside = Beside::default();
    let start = Instant::now();
    // The first poll reads every table's whole lookback: on a large estate it takes a
    // while, so it says how far it got on stderr (stdout stays the verdicts).
    poller.set_progress(Some(first_poll_progress()));
    let polled = poll(&poller, &config.monitor, data_dir, &mut beside)?;
    poller.set_progress(None);
    let quiet = quiet_of(&config, data_dir, &polled.0)?;
    let observations = print_poll(&config.monitor, polled, &quiet, json, explain)?;
    if once {
        return Ok(exit_code(&observations, &quiet));
    }
    let every: Vec<Duration> = config
        .monitor
        .iter()
        .map(|m| parse_duration(&m.every))
        .collect::<Result<_>>()?;
    let mut next_due: Vec<Instant> = every.iter().map(|every| start + *every).collect();
    loop {
        let now = Instant::now();
        let due: Vec<usize> = (0..next_due.len())
            .filter(|&i| next_due[i] <= now)
            .collect();
        let monitors: Vec<_> = due.iter().map(|&i| config.monitor[i].clone()).collect();
        for &i in &due {
            next_due[i] = now + every[i];
        }
        if !monitors.is_empty() {
            let polled = poll(&poller, &monitors, data_dir, &mut beside)?;
            let quiet = quiet_of(&config, data_dir, &polled.0)?;
            print_poll(&monitors, polled, &quiet, json, explain)?;
        }
        let Some(next) = next_due.iter().min() else {
            return Ok(ExitCode::SUCCESS);
        };
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

/// The engine `check` last found beside it, if any, so it says so once per engine.
#[derive(Default)]
struct Beside(Option<String>);

/// One poll of `monitors`. The state database has one writer: with no engine on
/// `data_dir`, `check` is it, under the engine's lock while it stores what it read (as
/// the engine would), and only then, so an engine can start while the warehouse is
/// read. Beside a running engine (which polls and stores on its own) it judges against
/// a copy of the engine's history and stores nothing, so the engine's rows and
/// baselines are as the engine wrote them.
fn poll(
    poller: &Poller,
    monitors: &[crate::config::MonitorConfig],
    data_dir: &Path,
    beside: &mut Beside,
) -> Result<(Vec<Observation>, Vec<PollCost>, Vec<Explained>)> {
    let db = data_dir.join("dataward.db");
    if !db.exists() {
        // A first check creates the state database, as the engine would.
        if let Ok(lock) = crate::store::EngineLock::try_acquire(data_dir)? {
            lock.open_state()?;
        }
    }
    let now = crate::clock::Clock::wall().now();
    let read = poller.read(&crate::store::open_read_only(&db)?, monitors, now)?;
    let (cost, explained) = (read.cost(), read.explained());
    let observations = match crate::store::EngineLock::try_acquire(data_dir)? {
        Ok(lock) => {
            beside.0 = None;
            read.store(&lock.open_state()?)?
        }
        Err(engine) => {
            if beside.0.as_ref() != Some(&engine) {
                eprintln!(
                    "dataward check: an engine ({engine}) serves {}; these verdicts are judged \
                     against its history and not stored (it stores its own polls)",
                    data_dir.display()
                );
                beside.0 = Some(engine);
            }
            read.store(&crate::store::scratch_copy(&db)?)?
        }
    };
    Ok((observations, cost, explained))
}

/// "first poll: 37 of 120 tables" on stderr (see [`Throttle`]).
fn first_poll_progress() -> super::poller::Progress {
    let throttle = std::sync::Mutex::new(Throttle::new(Instant::now()));
    std::sync::Arc::new(move |done: usize, total: usize| {
        let due =
            throttle
                .lock()
                .expect("progress lock")
                .due(Instant::now(), done as u64, total as u64);
        if due {
            eprintln!("first poll: {done} of {total} tables");
        }
    })
}

/// Why each observation's monitor pages nobody now, if it does not: the snoozes the
/// state database holds (an engine's, or an earlier `check`'s data directory) and the
/// config's maintenance windows, as the engine judges them.
fn quiet_of(
    config: &Config,
    data_dir: &Path,
    observations: &[Observation],
) -> Result<Vec<Option<Quiet>>> {
    use crate::store::quiet::QuietStore;
    let db = data_dir.join("dataward.db");
    let snoozes = if db.exists() {
        crate::store::open_read_only(&db)?.running_snoozes()?
    } else {
        Vec::new()
    };
    let now = crate::clock::Timestamp::from_utc(crate::clock::Clock::wall().now());
    Ok(observations
        .iter()
        .map(|o| quiet_at(config, &snoozes, &o.monitor, &o.table, now))
        .collect())
}

/// 1 on any breach (but one whose monitor is quiet: snoozed, or in a maintenance
/// window); else 3 when some check could not run (unreachable, failed login,
/// timeout, a missing table), since "ok" would claim what nobody measured; else 0.
fn exit_code(observations: &[Observation], quiet: &[Option<Quiet>]) -> ExitCode {
    let loud_breach = observations
        .iter()
        .zip(quiet)
        .any(|(o, quiet)| o.verdict.is_breach() && quiet.is_none());
    if loud_breach {
        ExitCode::from(1)
    } else if observations.iter().any(|o| o.health != Health::Ok) {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

/// A poll's verdicts, then (with `--json` or `--explain`) what it cost each warehouse,
/// then (with `--explain`) every statement it sent.
fn print_poll(
    monitors: &[crate::config::MonitorConfig],
    (observations, costs, explained): (Vec<Observation>, Vec<PollCost>, Vec<Explained>),
    quiet: &[Option<Quiet>],
    json: bool,
    explain: bool,
) -> Result<Vec<Observation>> {
    print_observations(&observations, quiet, json)?;
    if explain {
        print_explained(monitors, &explained, &costs, json)?;
    }
    if json {
        for cost in &costs {
            let mut line = serde_json::to_value(cost)?;
            if cost.scanned_bytes.is_none() {
                line["scanned"] = "not reported".into();
            }
            println!(
                "{}",
                sanitize::json(&serde_json::json!({ "poll": line }), false)?
            );
        }
    }
    Ok(observations)
}

/// What sent each statement, as `--explain` heads it.
fn sender_text(monitors: &[crate::config::MonitorConfig], sender: &Sender) -> String {
    match sender {
        Sender::Session => "session (opened for the poll, closed after it)".to_string(),
        Sender::Catalog { schema, tables } => format!(
            "columns of {} in schema {}",
            tables.join(", "),
            schema.as_deref().unwrap_or("(default)")
        ),
        Sender::Monitor(index) => match monitors.get(*index) {
            Some(monitor) => format!(
                "monitor {} (table {}: {})",
                Config::monitor_name(monitor),
                monitor.table,
                monitor
                    .checks
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => format!("monitor #{index}"),
        },
    }
}

/// Every statement a poll sent, as SQL a person can read and run again: a comment
/// naming the warehouse and what sent it, each statement ended by `;` and the rows it
/// returned. With `json`, one `{"statement": ...}` object per statement instead.
fn print_explained(
    monitors: &[crate::config::MonitorConfig],
    explained: &[Explained],
    costs: &[PollCost],
    json: bool,
) -> Result<()> {
    for e in explained {
        let sender = sender_text(monitors, &e.sender);
        if json {
            for sent in &e.log.sent {
                let line = serde_json::json!({ "statement": {
                    "warehouse": e.warehouse,
                    "for": sender,
                    "sql": sent.sql,
                    "rows": sent.rows,
                    "scanned_bytes": sent.scanned_bytes,
                }});
                println!("{}", sanitize::json(&line, false)?);
            }
            continue;
        }
        println!(
            "-- {}: {}",
            sanitize::for_terminal(&e.warehouse),
            sanitize::for_terminal(&sender)
        );
        for sent in &e.log.sent {
            println!("{};", sanitize::for_terminal_multiline(sent.sql.trim()));
            println!("--   {} rows returned", sent.rows);
        }
    }
    if !json {
        for cost in costs {
            println!(
                "-- poll cost, warehouse {}: {}",
                sanitize::for_terminal(&cost.warehouse),
                cost.summary()
            );
        }
    }
    Ok(())
}

fn print_observations(
    observations: &[Observation],
    quiet: &[Option<Quiet>],
    json: bool,
) -> Result<()> {
    let subject = |o: &Observation| match &o.detail.column {
        Some(column) => format!("{}.{}", o.table, column),
        None => o.table.clone(),
    };
    // The table column fits the longest name printed (at least 28 wide).
    let width = observations
        .iter()
        .map(|o| sanitize::for_terminal(&subject(o)).chars().count())
        .max()
        .unwrap_or(0)
        .max(28);
    for (o, quiet) in observations.iter().zip(quiet) {
        if json {
            let mut line = CheckLine::from_observation(o);
            line.quiet = quiet.as_ref().map(|q| QuietLine {
                until: q.until(),
                why: q.why(),
            });
            println!("{}", sanitize::json(&line, false)?);
            continue;
        }
        let subject = subject(o);
        let status = if o.health != Health::Ok {
            format!("{} (health)", o.health.as_str())
        } else {
            o.verdict.as_str().to_string()
        };
        let marker = if o.verdict.is_breach() || o.health != Health::Ok {
            "!!"
        } else {
            "  "
        };
        let quiet = quiet
            .as_ref()
            .map(|q| {
                format!(
                    "  (quiet until {}: {})",
                    q.until(),
                    sanitize::for_terminal(&q.why())
                )
            })
            .unwrap_or_default();
        println!(
            "{marker} {:<width$} {:<10} {:<12} {}  expected {}{quiet}",
            sanitize::for_terminal(&subject),
            o.check.as_str(),
            status,
            sanitize::for_terminal(&o.observed_text()),
            o.expected_text()
        );
    }
    Ok(())
}

/// One line of `dataward backtest --json`.
#[derive(Debug, Serialize)]
pub struct BacktestLine {
    pub date: String,
    pub value: f64,
    pub verdict: &'static str,
    pub expected_low: Option<f64>,
    pub expected_high: Option<f64>,
    pub score: Option<f64>,
}

/// Runs a detector over a `date,value` history and prints the verdict for every row.
/// `monitor` is the detector: "volume" (daily, same weekday in prior weeks) or
/// "row_count" (each value against the ones before it). With `labels`, the flags are
/// then scored against the windows that file labels for this CSV (see
/// [`read_windows`]), as the labelled benchmark scores them.
pub fn backtest(csv: &Path, monitor: &str, labels: Option<&Path>, json: bool) -> Result<ExitCode> {
    let text =
        std::fs::read_to_string(csv).with_context(|| format!("cannot read {}", csv.display()))?;
    let rows = parse_history(&text).map_err(|e| anyhow!("{}: {e}", csv.display()))?;
    // Read before any output, so a bad labels file never follows a printed table.
    let windows = labels.map(|labels| read_windows(labels, csv)).transpose()?;
    let lines = match monitor {
        "volume" => backtest_volume(&rows),
        "row_count" => backtest_row_count(&rows),
        other => bail!("--monitor {other:?}: backtests know \"volume\" and \"row_count\""),
    };
    if json {
        for line in &lines {
            println!("{}", sanitize::json(line, false)?);
        }
    } else {
        print_backtest_table(&lines);
    }
    if let Some(windows) = windows {
        let flagged: Vec<i64> = rows
            .iter()
            .zip(&lines)
            .filter(|(_, line)| VerdictKind::parse(line.verdict).is_breach())
            .map(|((date, _), _)| i64::from(date.num_days_from_ce()))
            .collect();
        let mut score = WindowScore::default();
        score.add(&windows, &flagged);
        if json {
            println!(
                "{}",
                serde_json::json!({ "score": {
                    "windows": score.windows,
                    "caught": score.caught,
                    "flags": score.flags,
                    "flags_in_windows": score.flags_in_windows,
                    "precision": score.precision(),
                    "recall": score.recall(),
                    "f1": score.f1(),
                }})
            );
        } else {
            println!(
                "scored: {}/{} windows caught (recall {:.3}); {}/{} flagged days inside a window (precision {:.3}); F1 {:.3}",
                score.caught,
                score.windows,
                score.recall(),
                score.flags_in_windows,
                score.flags,
                score.precision(),
                score.f1()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The windows a labels file gives `csv`: a JSON object from each CSV file's name to
/// its list of `["first_day", "last_day"]` windows (an empty list: a series with no
/// fault). Days as day numbers, for [`WindowScore`]. Errors name the file, the CSV and
/// the window.
pub fn read_windows(labels: &Path, csv: &Path) -> Result<Vec<RangeInclusive<i64>>> {
    let text = std::fs::read_to_string(labels)
        .with_context(|| format!("cannot read {}", labels.display()))?;
    let all: BTreeMap<String, Vec<[String; 2]>> = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "{}: {e} (expected {{\"file.csv\": [[\"2024-05-11\", \"2024-05-12\"], ...]}})",
            labels.display()
        )
    })?;
    let name = csv
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| anyhow!("{}: not a file name", csv.display()))?;
    let windows = all.get(name).ok_or_else(|| {
        anyhow!(
            "{}: no windows for {name:?} (an empty list marks a series with no fault)",
            labels.display()
        )
    })?;
    windows
        .iter()
        .enumerate()
        .map(|(i, [first, last])| {
            let at = || format!("{}: {name:?} window {}", labels.display(), i + 1);
            let day = |text: &str| {
                NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
                    .map(|d| i64::from(d.num_days_from_ce()))
                    .map_err(|_| anyhow!("{}: {text:?} is not a date like 2024-05-11", at()))
            };
            let (first, last) = (day(first)?, day(last)?);
            if last < first {
                bail!("{}: its last day comes before its first", at());
            }
            Ok(first..=last)
        })
        .collect()
}

/// `date,value` rows; the header is required, dates strictly increase. Errors name
/// the line.
pub fn parse_history(text: &str) -> Result<Vec<(NaiveDate, f64)>> {
    let mut lines = text.lines().enumerate();
    let header = lines
        .next()
        .map(|(_, h)| h.trim().to_ascii_lowercase().replace(' ', ""))
        .unwrap_or_default();
    if header != "date,value" {
        bail!("line 1: expected the header `date,value`, found {header:?}");
    }
    let mut rows: Vec<(NaiveDate, f64)> = Vec::new();
    for (index, line) in lines {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (date, value) = line
            .split_once(',')
            .ok_or_else(|| anyhow!("line {number}: expected `date,value`, found {line:?}"))?;
        let date = NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d").map_err(|_| {
            anyhow!(
                "line {number}: {:?} is not a date like 2024-05-11",
                date.trim()
            )
        })?;
        let value: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| anyhow!("line {number}: {:?} is not a count", value.trim()))?;
        if let Some((previous, _)) = rows.last() {
            if date <= *previous {
                bail!("line {number}: {date} does not come after {previous}; rows must be in date order, one per day");
            }
        }
        rows.push((date, value));
    }
    if rows.is_empty() {
        bail!("no rows after the header");
    }
    Ok(rows)
}

fn line(date: NaiveDate, v: detect::Verdict) -> BacktestLine {
    BacktestLine {
        date: date.to_string(),
        value: v.observed,
        verdict: v.kind.as_str(),
        expected_low: v.expected.map(|r| r.low),
        expected_high: v.expected.map(|r| r.high),
        score: v.score,
    }
}

/// Days missing from the file are zero-volume days in the baseline; only the input
/// rows are reported. Judged as the monitor judges, one day at a time with clean
/// baselines: a breach in the file is not learned from.
fn backtest_volume(rows: &[(NaiveDate, f64)]) -> Vec<BacktestLine> {
    let first = rows[0].0;
    let last = rows[rows.len() - 1].0;
    let mut days = vec![0.0; (last - first).num_days() as usize + 1];
    for (date, value) in rows {
        days[(*date - first).num_days() as usize] = *value;
    }
    let verdicts = volume::judge_all(&days, first, &volume::Calendar::default());
    rows.iter()
        .map(|(date, _)| line(*date, verdicts[(*date - first).num_days() as usize]))
        .collect()
}

/// Each value against the clean values before it, as the row_count monitor does.
fn backtest_row_count(rows: &[(NaiveDate, f64)]) -> Vec<BacktestLine> {
    let mut clean = Vec::new();
    rows.iter()
        .map(|(date, value)| {
            let v = detect::row_count(&clean, *value);
            if !v.kind.is_breach() {
                clean.push(*value);
            }
            line(*date, v)
        })
        .collect()
}

fn print_backtest_table(lines: &[BacktestLine]) {
    println!(
        "   {:<10} {:<4} {:>12} {:<9} {:>25} {:>7}",
        "date", "day", "value", "verdict", "expected", "score"
    );
    for l in lines {
        let breach = VerdictKind::parse(l.verdict).is_breach();
        let expected = match (l.expected_low, l.expected_high) {
            (Some(low), Some(high)) => format!("{}..{}", thousands(low), thousands(high)),
            _ => "-".to_string(),
        };
        let weekday = NaiveDate::parse_from_str(&l.date, "%Y-%m-%d")
            .map(|d| d.format("%a").to_string())
            .unwrap_or_default();
        println!(
            "{} {:<10} {:<4} {:>12} {:<9} {:>25} {:>7}",
            if breach { "!!" } else { "  " },
            l.date,
            weekday,
            thousands(l.value),
            l.verdict,
            expected,
            l.score.map(|s| format!("{s:+.1}")).unwrap_or_default()
        );
    }
    let breaches = lines
        .iter()
        .filter(|l| VerdictKind::parse(l.verdict).is_breach())
        .count();
    println!("{breaches} of {} days in breach (marked !!)", lines.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_poll_counts_its_tables_up_to_all_of_them_and_the_next_tells_nothing() {
        // The poller tells of each table read, up to all of them.
        let dir = tempfile::tempdir().unwrap();
        let db = rusqlite::Connection::open(dir.path().join("wh.db")).unwrap();
        db.execute_batch("CREATE TABLE a (x); CREATE TABLE b (x); CREATE TABLE c (x);")
            .unwrap();
        let mut text = String::from("[warehouse.w]\nkind = \"sqlite\"\npath = \"wh.db\"\n");
        for table in ["a", "b", "c"] {
            text.push_str(&format!(
                "[[monitor]]\nwarehouse = \"w\"\ntable = \"{table}\"\nchecks = [\"row_count\"]\n"
            ));
        }
        let path = dir.path().join("c.toml");
        std::fs::write(&path, text).unwrap();
        let config = Config::load(&path).unwrap();
        let mut poller = Poller::from_config(&config).unwrap();
        let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = heard.clone();
        poller.set_progress(Some(std::sync::Arc::new(move |done, total| {
            into.lock().unwrap().push((done, total));
        })));
        let state = crate::store::open(&dir.path().join("dataward.db")).unwrap();
        poller
            .poll(&state, &config.monitor, crate::clock::Clock::wall().now())
            .unwrap();
        let mut first = std::mem::take(&mut *heard.lock().unwrap());
        first.sort();
        assert_eq!(first, [(1, 3), (2, 3), (3, 3)]);

        // The next `check --once` (a new process, a new poller) on the same state
        // database is not a first poll: it tells nothing "first poll" would say.
        let mut poller = Poller::from_config(&config).unwrap();
        let into = heard.clone();
        poller.set_progress(Some(std::sync::Arc::new(move |done, total| {
            into.lock().unwrap().push((done, total));
        })));
        poller
            .poll(&state, &config.monitor, crate::clock::Clock::wall().now())
            .unwrap();
        assert_eq!(*heard.lock().unwrap(), [], "the second poll is not a first");
    }

    #[test]
    fn history_needs_a_header_and_names_bad_lines() {
        let err = parse_history("2024-01-01,5\n").unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("header"), "{err}");
        let err = parse_history("date,value\n2024-01-01,5\n2024-01-02,abc\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3"), "{err}");
        let err = parse_history("date,value\n2024-01-02,5\n2024-01-01,6\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 3") && err.contains("date order"),
            "{err}"
        );
        assert_eq!(
            parse_history("date,value\n2024-01-01,5\n").unwrap().len(),
            1
        );
    }

    #[test]
    fn volume_backtest_fills_missing_days_with_zero() {
        let d = |n| NaiveDate::from_ymd_opt(2024, 1, n).unwrap();
        // Five Mondays of 100 and one Tuesday: the Tuesdays missing from the file are
        // zero-volume days in its baseline, not skipped (so it is judged, not learning).
        let rows: Vec<_> = [1, 8, 15, 22, 29]
            .iter()
            .map(|&n| (d(n), 100.0))
            .chain([(d(30), 0.0)])
            .collect();
        let lines = backtest_volume(&rows);
        assert_eq!(lines.len(), rows.len());
        assert_eq!(lines[3].verdict, "ok");
        assert_eq!(lines[4].verdict, "ok");
        assert_eq!(lines[5].verdict, "ok");
        assert_eq!(lines[5].expected_low, Some(0.0));
    }
}
