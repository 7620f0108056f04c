//! `dataward backtest --monitor NAME --inject`: a monitored table's own history replayed
//! with faults of each kind the labelled benchmark knows, one fault per copy, to measure
//! before anyone is paged what the volume check would have caught on this table and how
//! many false alarms it would have raised.
//!
//! The history is read as `dataward check` reads it (the monitor's warehouse, timestamp
//! column and lookback), less today, which is still loading. It is judged once as it is:
//! those flags are real incidents or false alarms, and only a person can tell which.
//! Then each fault kind is injected at up to [`POSITIONS`] places spread over the judged
//! days, each on a weekday of its own, and every copy is judged whole. A fault is caught
//! when a day of its window is flagged; a flag anywhere else is a false alarm. Days
//! flagged as it is count as neither: they say nothing about the fault.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use chrono::{Days, NaiveDate};
use serde::Serialize;

use super::checks::{Windows, DEFAULT_LOOKBACK};
use super::thousands;
use crate::config::{CheckKind, Config, MonitorConfig};
use crate::detect::labelled::{apply_fault, FaultKind, FaultWindow, WindowScore};
use crate::detect::synthetic::Rng;
use crate::detect::volume::{self, Calendar};
use crate::detect::Verdict;
use crate::sanitize;
use crate::warehouse::{self, DayCount, Relation};

/// The days the volume check learns each weekday from before it judges one
/// ([`volume::MIN_WEEKS`] weeks): no fault goes there.
pub const WARM_UP_DAYS: usize = 7 * volume::MIN_WEEKS;
/// Places each fault kind is injected at, at most: one per weekday.
pub const POSITIONS: usize = 7;
/// The faults' sizes are drawn from the benchmark's ranges with this seed, so the same
/// history always gives the same report.
const SEED: u64 = 20_240_511;

/// Runs the injected backtest of the monitor named `name` in the config at
/// `config_path`. Exit 2 on a config or history it cannot use, 3 when the warehouse
/// cannot be read.
pub fn run(config_path: &Path, name: &str, json: bool) -> Result<ExitCode> {
    let config = Config::load(config_path)?;
    let at = config_path.display();
    let monitor = config
        .monitor
        .iter()
        .find(|m| Config::monitor_name(m) == name)
        .ok_or_else(|| match config.monitor_names() {
            names if names.is_empty() => anyhow!("{at}: no monitor named {name:?}; it has none"),
            names => anyhow!(
                "{at}: no monitor named {name:?}; its monitors are {}",
                names.join(", ")
            ),
        })?;
    if !monitor.checks.contains(&CheckKind::Volume) {
        bail!(
            "{at}: monitor {name} ({}) has no volume check, which is what the injected \
             backtest replays; add \"volume\" to its checks",
            monitor.table
        );
    }
    let Some(column) = monitor.timestamp_column.as_deref() else {
        bail!(
            "{at}: monitor {name} ({}) has no timestamp_column to count rows per day by",
            monitor.table
        );
    };
    let relation = Relation::parse(&monitor.table)?;
    let source = warehouse::open(&config, &monitor.warehouse)?;
    let now = crate::clock::Clock::wall().now();
    let windows = Windows::of(monitor, now);
    let counts = match source.daily_counts(&relation, column, windows.first_day, windows.cutoff) {
        Ok(counts) => counts,
        Err(e) => {
            let message = format!(
                "warehouse {}: cannot read the daily counts of {} for monitor {name}: {e}",
                monitor.warehouse, monitor.table
            );
            eprintln!("dataward: {}", sanitize::for_terminal_multiline(&message));
            return Ok(ExitCode::from(3));
        }
    };
    let (first, days) = complete_days(&counts, now.date_naive());
    let needed = WARM_UP_DAYS + longest_fault();
    if days.len() < needed {
        let lookback = monitor
            .lookback
            .clone()
            .unwrap_or_else(|| format!("{}d", DEFAULT_LOOKBACK.as_secs() / 86_400));
        bail!(
            "monitor {name} ({}): {} complete days of rows in its lookback ({lookback}); \
             injecting faults needs at least {needed}: {WARM_UP_DAYS} for the volume check \
             to learn each weekday, then {} for a fault",
            monitor.table,
            days.len(),
            longest_fault()
        );
    }
    // The holidays only: the incidents and accepted levels the state database keeps
    // are not read, so the replay needs no data directory.
    let calendar = Calendar {
        holidays: &monitor.holidays,
        ..Calendar::default()
    };
    let replay = replay(&days, first, &calendar)
        .map_err(|e| anyhow!("monitor {name} ({}): {e}", monitor.table))?;
    if json {
        print_json(&replay, name, monitor)?;
    } else {
        print_text(&replay, name, monitor);
    }
    Ok(ExitCode::SUCCESS)
}

/// The days the longest point fault lasts (a two-day partial load).
fn longest_fault() -> usize {
    FaultKind::ALL
        .iter()
        .filter_map(|kind| kind.length())
        .max()
        .unwrap_or(1)
}

/// A table's complete days, oldest first: from the first day with rows (before it the
/// table was empty or did not exist) to yesterday. Today is still loading. Empty when
/// no day before today has rows.
pub fn complete_days(counts: &[DayCount], today: NaiveDate) -> (NaiveDate, Vec<f64>) {
    let first = counts
        .iter()
        .map(|c| c.day)
        .filter(|day| *day < today)
        .min()
        .unwrap_or(today);
    let pairs: Vec<(NaiveDate, u64)> = counts.iter().map(|c| (c.day, c.rows)).collect();
    let days = match today.checked_sub_days(Days::new(1)) {
        Some(yesterday) => volume::fill_days(&pairs, first, yesterday),
        None => Vec::new(),
    };
    (first, days)
}

/// Where faults of `kind` go in a series of `len` days: up to [`POSITIONS`] first days,
/// in order, each near the middle of its share of the days after the warm-up, each on a
/// weekday none of the others is on, and every day of its window `usable`. A level shift
/// needs only its first day usable. Empty when no window fits.
pub fn positions(len: usize, kind: FaultKind, usable: impl Fn(usize) -> bool) -> Vec<usize> {
    let span = kind.length().unwrap_or(1);
    // Possible first days: WARM_UP_DAYS .. WARM_UP_DAYS + room.
    let room = (len + 1).saturating_sub(WARM_UP_DAYS + span);
    let wanted = POSITIONS.min(room);
    let mut chosen: Vec<usize> = Vec::new();
    for share in 0..wanted {
        let target = WARM_UP_DAYS + (2 * share + 1) * room / (2 * wanted);
        // The nearest free first day: the target, one after, one before, two after...
        let found = (0..room)
            .flat_map(|off| [Some(target + off), target.checked_sub(off)])
            .flatten()
            .filter(|&day| (WARM_UP_DAYS..WARM_UP_DAYS + room).contains(&day))
            .find(|&day| {
                chosen.iter().all(|&other| other.abs_diff(day) % 7 != 0)
                    && (day..day + span).all(&usable)
            });
        chosen.extend(found);
    }
    chosen.sort_unstable();
    chosen
}

/// What one fault kind did across its copies of the history.
#[derive(Debug, Clone)]
pub struct KindReplay {
    pub kind: FaultKind,
    /// Each fault injected, in day order, and whether it was caught.
    pub windows: Vec<(FaultWindow, bool)>,
    /// Pooled over the copies: its false flags are the false alarms.
    pub score: WindowScore,
    /// Judged days outside the faults' windows, over every copy.
    pub table_days: usize,
}

/// A history judged as it is, then with each fault kind injected.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The date of day 0.
    pub first: NaiveDate,
    /// Complete days in the history.
    pub days: usize,
    /// The days flagged before anything was injected, with their verdicts.
    pub flags_as_is: Vec<(usize, Verdict)>,
    /// In [`FaultKind::ALL`] order.
    pub kinds: Vec<KindReplay>,
}

impl Replay {
    pub fn injected(&self) -> usize {
        self.kinds.iter().map(|k| k.score.windows).sum()
    }

    pub fn caught(&self) -> usize {
        self.kinds.iter().map(|k| k.score.caught).sum()
    }

    pub fn false_alarms(&self) -> usize {
        self.kinds.iter().map(|k| k.score.false_flags()).sum()
    }

    pub fn table_days(&self) -> usize {
        self.kinds.iter().map(|k| k.table_days).sum()
    }

    pub fn false_alarms_per_1000_days(&self) -> f64 {
        1000.0 * self.false_alarms() as f64 / self.table_days().max(1) as f64
    }

    fn date(&self, day: usize) -> NaiveDate {
        volume::date_at(self.first, day)
    }

    /// A word for scripts and the sentence a person reads.
    pub fn verdict(&self) -> (&'static str, String) {
        let missed: Vec<String> = self
            .kinds
            .iter()
            .filter(|k| k.score.caught < k.score.windows)
            .map(|k| {
                format!(
                    "{} caught {} of {}",
                    k.kind.describe(),
                    k.score.caught,
                    k.score.windows
                )
            })
            .collect();
        let false_alarms = self.false_alarms();
        let alarms = format!(
            "{false_alarms} false alarm{} ({:.1} per 1,000 table-days)",
            if false_alarms == 1 { "" } else { "s" },
            self.false_alarms_per_1000_days()
        );
        match (missed.is_empty(), false_alarms == 0) {
            (true, true) => (
                "ok",
                "every injected fault caught, no false alarm".to_string(),
            ),
            (false, true) => (
                "misses_faults",
                format!("misses faults: {}; no false alarm", missed.join(", ")),
            ),
            (true, false) => (
                "false_alarms",
                format!("every injected fault caught, but {alarms}"),
            ),
            (false, false) => (
                "misses_faults_and_false_alarms",
                format!("misses faults: {}; and {alarms}", missed.join(", ")),
            ),
        }
    }
}

/// Judges `days` (day 0 is `first`) as it is, then a copy per fault kind and
/// [`positions`] place, each with one fault. A fault goes on a judged day with rows
/// that is no holiday and was not flagged as it is. Errors when a kind finds no such
/// place.
pub fn replay(days: &[f64], first: NaiveDate, calendar: &Calendar) -> Result<Replay> {
    let as_is = volume::judge_all(days, first, calendar);
    let flagged_as_is = |day: usize| as_is[day].kind.is_breach();
    let usable = |day: usize| {
        days[day] > 0.0
            && !calendar.holidays.contains(&volume::date_at(first, day))
            && !flagged_as_is(day)
    };
    let judged = days.len().saturating_sub(WARM_UP_DAYS);
    let mut rng = Rng::new(SEED);
    let mut kinds = Vec::new();
    for kind in FaultKind::ALL {
        let starts = positions(days.len(), kind, usable);
        if starts.is_empty() {
            bail!(
                "no judged day could take a {}: every one is empty, a holiday or flagged as it is",
                kind.describe()
            );
        }
        let mut replayed = KindReplay {
            kind,
            windows: Vec::new(),
            score: WindowScore::default(),
            table_days: 0,
        };
        for start in starts {
            let mut copy = days.to_vec();
            let window = apply_fault(&mut copy, kind, start, &mut rng);
            let flagged: Vec<i64> = volume::judge_all(&copy, first, calendar)
                .iter()
                .enumerate()
                .filter(|(day, v)| v.kind.is_breach() && !flagged_as_is(*day))
                .map(|(day, _)| day as i64)
                .collect();
            let caught = replayed.score.add(&[window.days()], &flagged)[0];
            replayed.windows.push((window, caught));
            replayed.table_days += judged - (window.last_day + 1 - window.first_day);
        }
        kinds.push(replayed);
    }
    Ok(Replay {
        first,
        days: days.len(),
        flags_as_is: as_is
            .iter()
            .enumerate()
            .filter(|(_, v)| v.kind.is_breach())
            .map(|(day, v)| (day, *v))
            .collect(),
        kinds,
    })
}

fn print_text(replay: &Replay, name: &str, monitor: &MonitorConfig) {
    let date = |day| replay.date(day).format("%Y-%m-%d %a").to_string();
    println!(
        "monitor {}: table {} in warehouse {}, with injected faults",
        sanitize::for_terminal(name),
        sanitize::for_terminal(&monitor.table),
        sanitize::for_terminal(&monitor.warehouse)
    );
    println!(
        "history: {} complete days from {} to {}; the first {WARM_UP_DAYS} learn each weekday, {} judged",
        replay.days,
        date(0),
        date(replay.days - 1),
        replay.days - WARM_UP_DAYS
    );
    if replay.flags_as_is.is_empty() {
        println!("flags on the history as it is: none");
    } else {
        println!(
            "flags on the history as it is: {} (real incidents or false alarms; no fault goes on them)",
            replay.flags_as_is.len()
        );
        for (day, v) in &replay.flags_as_is {
            let expected = v
                .expected
                .map(|r| format!("{}..{}", thousands(r.low), thousands(r.high)))
                .unwrap_or_else(|| "-".to_string());
            println!(
                "!! {}  {:<5} {:>12}  expected {expected}",
                date(*day),
                v.kind.as_str(),
                thousands(v.observed)
            );
        }
    }
    println!();
    println!(
        "   {:<24} {:>8} {:>7} {:>7} {:>13}",
        "fault", "injected", "caught", "recall", "false alarms"
    );
    for k in &replay.kinds {
        println!(
            "{} {:<24} {:>8} {:>7} {:>7.3} {:>13}",
            if k.score.caught < k.score.windows {
                "!!"
            } else {
                "  "
            },
            k.kind.describe(),
            k.score.windows,
            k.score.caught,
            k.score.recall(),
            k.score.false_flags()
        );
    }
    let (injected, caught) = (replay.injected(), replay.caught());
    println!(
        "   {:<24} {:>8} {:>7} {:>7.3} {:>13}",
        "all",
        injected,
        caught,
        caught as f64 / injected.max(1) as f64,
        replay.false_alarms()
    );
    for k in &replay.kinds {
        for (window, _) in k.windows.iter().filter(|(_, caught)| !caught) {
            let span = if window.first_day == window.last_day {
                date(window.first_day)
            } else {
                format!("{} to {}", date(window.first_day), date(window.last_day))
            };
            println!("missed: {} on {span}", k.kind.describe());
        }
    }
    println!();
    println!(
        "false alarms: {} in {} judged table-days outside the faults ({:.1} per 1,000)",
        replay.false_alarms(),
        thousands(replay.table_days() as f64),
        replay.false_alarms_per_1000_days()
    );
    let (_, verdict) = replay.verdict();
    println!("verdict: {verdict}");
}

/// One line of `dataward backtest --inject --json`: a fault kind.
#[derive(Debug, Serialize)]
struct KindLine {
    fault: &'static str,
    name: &'static str,
    injected: usize,
    caught: usize,
    recall: f64,
    false_alarms: usize,
    windows: Vec<WindowLine>,
}

#[derive(Debug, Serialize)]
struct WindowLine {
    first_day: String,
    last_day: String,
    caught: bool,
}

/// The last line of `dataward backtest --inject --json`.
#[derive(Debug, Serialize)]
struct SummaryLine<'a> {
    summary: Summary<'a>,
}

#[derive(Debug, Serialize)]
struct Summary<'a> {
    monitor: &'a str,
    table: &'a str,
    warehouse: &'a str,
    first_day: String,
    last_day: String,
    days: usize,
    judged_days: usize,
    flags_as_is: Vec<FlagLine>,
    injected: usize,
    caught: usize,
    recall: f64,
    false_alarms: usize,
    table_days: usize,
    false_alarms_per_1000_days: f64,
    verdict: &'static str,
}

#[derive(Debug, Serialize)]
struct FlagLine {
    day: String,
    verdict: &'static str,
    observed: f64,
    expected_low: Option<f64>,
    expected_high: Option<f64>,
}

fn print_json(replay: &Replay, name: &str, monitor: &MonitorConfig) -> Result<()> {
    let date = |day| replay.date(day).to_string();
    for k in &replay.kinds {
        let line = KindLine {
            fault: k.kind.as_str(),
            name: k.kind.describe(),
            injected: k.score.windows,
            caught: k.score.caught,
            recall: k.score.recall(),
            false_alarms: k.score.false_flags(),
            windows: k
                .windows
                .iter()
                .map(|(window, caught)| WindowLine {
                    first_day: date(window.first_day),
                    last_day: date(window.last_day),
                    caught: *caught,
                })
                .collect(),
        };
        println!("{}", sanitize::json(&line, false)?);
    }
    let (injected, caught) = (replay.injected(), replay.caught());
    let summary = Summary {
        monitor: name,
        table: &monitor.table,
        warehouse: &monitor.warehouse,
        first_day: date(0),
        last_day: date(replay.days - 1),
        days: replay.days,
        judged_days: replay.days - WARM_UP_DAYS,
        flags_as_is: replay
            .flags_as_is
            .iter()
            .map(|(day, v)| FlagLine {
                day: date(*day),
                verdict: v.kind.as_str(),
                observed: v.observed,
                expected_low: v.expected.map(|r| r.low),
                expected_high: v.expected.map(|r| r.high),
            })
            .collect(),
        injected,
        caught,
        recall: caught as f64 / injected.max(1) as f64,
        false_alarms: replay.false_alarms(),
        table_days: replay.table_days(),
        false_alarms_per_1000_days: replay.false_alarms_per_1000_days(),
        verdict: replay.verdict().0,
    };
    println!("{}", sanitize::json(&SummaryLine { summary }, false)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::synthetic::{weekly_series, SeriesShape};

    fn all(_: usize) -> bool {
        true
    }

    #[test]
    fn faults_go_after_the_warm_up_spread_out_each_on_a_weekday_of_its_own() {
        for kind in FaultKind::ALL {
            let len = 97;
            let starts = positions(len, kind, all);
            assert_eq!(starts.len(), POSITIONS, "{kind:?}: {starts:?}");
            let span = kind.length().unwrap_or(1);
            assert!(starts[0] >= WARM_UP_DAYS, "{kind:?}: {starts:?}");
            assert!(starts[POSITIONS - 1] + span <= len, "{kind:?}: {starts:?}");
            let mut weekdays: Vec<usize> = starts.iter().map(|s| s % 7).collect();
            weekdays.sort_unstable();
            weekdays.dedup();
            assert_eq!(weekdays.len(), POSITIONS, "{kind:?}: {starts:?}");
            // Spread over the judged days: a share of 76 / 7 days each, give or take
            // three days to find a free weekday.
            for pair in starts.windows(2) {
                assert!(pair[1] - pair[0] >= 4, "{kind:?}: {starts:?}");
            }
            assert!(starts[0] <= WARM_UP_DAYS + 9, "{kind:?}: {starts:?}");
            assert!(
                starts[POSITIONS - 1] + span >= len - 9,
                "{kind:?}: {starts:?}"
            );
        }
    }

    #[test]
    fn a_fault_window_never_covers_a_day_that_cannot_take_one() {
        let len = 97;
        let blocked = |day: usize| day.is_multiple_of(5) || day == 40;
        let starts = positions(len, FaultKind::PartialLoad, |day| !blocked(day));
        assert_eq!(starts.len(), POSITIONS, "{starts:?}");
        for start in starts {
            assert!(!blocked(start) && !blocked(start + 1), "{start}");
        }
        // Nothing usable: nowhere to go.
        assert!(positions(len, FaultKind::Drop, |_| false).is_empty());
    }

    #[test]
    fn a_short_history_has_room_for_as_many_faults_as_days_after_the_warm_up() {
        assert!(positions(WARM_UP_DAYS + 1, FaultKind::PartialLoad, all).is_empty());
        assert_eq!(
            positions(WARM_UP_DAYS + 2, FaultKind::PartialLoad, all),
            vec![WARM_UP_DAYS]
        );
        assert_eq!(
            positions(WARM_UP_DAYS + 3, FaultKind::Drop, all),
            vec![WARM_UP_DAYS, WARM_UP_DAYS + 1, WARM_UP_DAYS + 2]
        );
        assert!(positions(WARM_UP_DAYS, FaultKind::LevelShift, all).is_empty());
    }

    #[test]
    fn today_is_left_out_and_the_history_starts_with_its_first_rows() {
        let day = |n| NaiveDate::from_ymd_opt(2024, 5, n).unwrap();
        let count = |d, rows| DayCount {
            day: d,
            rows,
            before_cutoff: rows,
            at_midnight: 0,
        };
        let counts = [count(day(3), 7), count(day(5), 9), count(day(8), 2)];
        assert_eq!(
            complete_days(&counts, day(8)),
            (day(3), vec![7.0, 0.0, 9.0, 0.0, 0.0])
        );
        // Rows only today: no complete day yet.
        assert_eq!(complete_days(&counts[2..], day(8)), (day(8), vec![]));
    }

    fn monday() -> NaiveDate {
        NaiveDate::from_ymd_opt(2024, 1, 1).unwrap()
    }

    #[test]
    fn a_clean_weekly_table_catches_zero_days_and_shifts_and_raises_no_false_alarm() {
        let days = weekly_series(&SeriesShape {
            days: 97,
            level: 10_000.0,
            weekend_factor: 0.45,
            noise: 0.03,
            trend_per_week: 0.0,
            seed: 3,
        });
        let replay = replay(&days, monday(), &Calendar::default()).unwrap();
        assert!(replay.flags_as_is.is_empty(), "{:?}", replay.flags_as_is);
        let kinds: Vec<FaultKind> = replay.kinds.iter().map(|k| k.kind).collect();
        assert_eq!(kinds, FaultKind::ALL);
        for k in &replay.kinds {
            assert_eq!(k.score.windows, POSITIONS, "{:?}", k.kind);
            assert_eq!(k.score.false_flags(), 0, "{:?}", k.kind);
        }
        for kind in [
            FaultKind::MissedLoad,
            FaultKind::LevelShift,
            FaultKind::Spike,
        ] {
            let k = replay.kinds.iter().find(|k| k.kind == kind).unwrap();
            assert_eq!(k.score.caught, POSITIONS, "{kind:?}: {:?}", k.windows);
        }
        // Each point fault's copy judges the days outside its window: 76 less its length.
        let drop = &replay.kinds[0];
        assert_eq!(drop.table_days, POSITIONS * (97 - WARM_UP_DAYS - 1));
    }

    #[test]
    fn a_day_flagged_as_it_is_takes_no_fault_and_is_never_a_false_alarm() {
        let mut days = weekly_series(&SeriesShape {
            days: 97,
            level: 10_000.0,
            weekend_factor: 0.45,
            noise: 0.03,
            trend_per_week: 0.0,
            seed: 3,
        });
        // An outage the table really had, on a Wednesday in the judged part.
        days[51] = 0.0;
        let replay = replay(&days, monday(), &Calendar::default()).unwrap();
        let flagged: Vec<usize> = replay.flags_as_is.iter().map(|(day, _)| *day).collect();
        assert_eq!(flagged, vec![51]);
        for k in &replay.kinds {
            assert_eq!(k.score.false_flags(), 0, "{:?}", k.kind);
            for (window, _) in &k.windows {
                if k.kind != FaultKind::LevelShift {
                    assert!(!window.days().contains(&51), "{:?}: {window:?}", k.kind);
                } else {
                    assert_ne!(window.first_day, 51);
                }
            }
        }
    }
}
