//! The labelled benchmark's data and its score. Daily row counts of tables that behave
//! like real ones (weekly patterns, quiet weekends, days without a load, month-end peaks,
//! holidays, tens of rows a day, steady growth), and load times at three cadences for
//! freshness. Faults are injected as labelled windows after a learning period; the
//! learning period carries unlabelled pollution (holidays, outages, a replayed load) that
//! a detector has to learn through. Everything is deterministic from a seed.

use std::ops::RangeInclusive;

use chrono::{Datelike, Days, NaiveDate};

use super::synthetic::Rng;

/// Faults are injected from this day on: every detector has had ten weeks to learn.
pub const FIRST_LABELLED_DAY: usize = 70;
/// Days between one fault window and the next, at least: each fault is its own event,
/// not a run of trouble.
pub const MIN_GAP_DAYS: usize = 10;
pub const SHORT_TABLE_DAYS: usize = 182;
/// Long enough for month ends and holidays to come round again.
pub const LONG_TABLE_DAYS: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    /// Orders or sessions: each weekday its own level, a quieter weekend.
    BusinessWeek,
    /// A back-office table that barely moves at the weekend.
    WeekendQuiet,
    /// A batch that does not run on Sundays or holidays: a day of zero rows is normal.
    NoSundayLoad,
    /// Tens of rows a day, where counting noise alone is a large share of the day.
    Small,
    /// A finance table whose last day or two of each month are well above the rest.
    MonthEnd,
    /// An event stream, much the same every day, growing or shrinking steadily.
    Trending,
}

impl TableKind {
    pub const ALL: [TableKind; 6] = [
        TableKind::BusinessWeek,
        TableKind::WeekendQuiet,
        TableKind::NoSundayLoad,
        TableKind::Small,
        TableKind::MonthEnd,
        TableKind::Trending,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            TableKind::BusinessWeek => "weekly pattern",
            TableKind::WeekendQuiet => "quiet weekends",
            TableKind::NoSundayLoad => "no load on Sundays",
            TableKind::Small => "tens of rows a day",
            TableKind::MonthEnd => "month-end peaks",
            TableKind::Trending => "trend up to 0.3%/day",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// One day at 20-60% of its usual rows.
    Drop,
    /// One day at 1.8-3 times its usual rows: a double load or a replay.
    Spike,
    /// One day with no rows at all.
    MissedLoad,
    /// Two days in a row at 40-70%.
    PartialLoad,
    /// A step up or down of 30-60% that stays to the end of the series.
    LevelShift,
}

impl FaultKind {
    pub const ALL: [FaultKind; 5] = [
        FaultKind::Drop,
        FaultKind::Spike,
        FaultKind::MissedLoad,
        FaultKind::PartialLoad,
        FaultKind::LevelShift,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            FaultKind::Drop => "one-day drop",
            FaultKind::Spike => "spike",
            FaultKind::MissedLoad => "missed load (zero day)",
            FaultKind::PartialLoad => "two-day partial load",
            FaultKind::LevelShift => "level shift to the end",
        }
    }

    /// A short name for scripts and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Drop => "drop",
            FaultKind::Spike => "spike",
            FaultKind::MissedLoad => "missed_load",
            FaultKind::PartialLoad => "partial_load",
            FaultKind::LevelShift => "level_shift",
        }
    }

    /// How many days the fault lasts; None for a level shift, which lasts to the end
    /// of the series.
    pub fn length(self) -> Option<usize> {
        match self {
            FaultKind::PartialLoad => Some(2),
            FaultKind::LevelShift => None,
            _ => Some(1),
        }
    }
}

/// Where a fault sits. A level shift's window runs to the last day of the series: the
/// day-level flags are wanted until a person accepts the new level, and the incident
/// layer folds them into one incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultWindow {
    pub kind: FaultKind,
    pub first_day: usize,
    pub last_day: usize,
}

impl FaultWindow {
    pub fn days(&self) -> RangeInclusive<i64> {
        self.first_day as i64..=self.last_day as i64
    }
}

/// What a day is in a table's normal pattern, to tell where false flags land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayKind {
    /// Loaded like a Sunday.
    Holiday,
    /// One of the last days of a month, in a table with month-end peaks.
    MonthEndPeak,
    Ordinary,
}

/// One table's rows per day, oldest first, with its labelled faults.
#[derive(Debug, Clone)]
pub struct DailyTable {
    pub name: String,
    pub kind: TableKind,
    /// The calendar date of day 0, always a Monday.
    pub start: NaiveDate,
    pub days: Vec<f64>,
    /// Drawn to carry no faults: its windows are empty, and every flag on it is false.
    pub clean: bool,
    /// In day order, none before [`FIRST_LABELLED_DAY`], none touching another.
    pub windows: Vec<FaultWindow>,
    month_end_days: u32,
}

impl DailyTable {
    pub fn date(&self, day: usize) -> NaiveDate {
        self.start + Days::new(day as u64)
    }

    pub fn day_kind(&self, day: usize) -> DayKind {
        let date = self.date(day);
        if is_holiday(date) {
            DayKind::Holiday
        } else if in_last_days_of_month(date, self.month_end_days) {
            DayKind::MonthEndPeak
        } else {
            DayKind::Ordinary
        }
    }
}

/// `count` tables, the kinds in turn, half of them 182 days and half 400, and one in
/// four clean. Every table gets a random source of its own, so a change to how one kind
/// is drawn does not reshuffle the others.
pub fn daily_tables(count: usize, seed: u64) -> Vec<DailyTable> {
    let mut seeds = Rng::new(seed);
    (0..count)
        .map(|n| {
            let kinds = TableKind::ALL.len();
            let kind = TableKind::ALL[n % kinds];
            let length = if (n / kinds).is_multiple_of(2) {
                SHORT_TABLE_DAYS
            } else {
                LONG_TABLE_DAYS
            };
            let clean = (n / (2 * kinds)).is_multiple_of(4);
            let mut rng = Rng::new(seeds.next_u64());
            daily_table(format!("t{n:03}"), kind, length, clean, &mut rng)
        })
        .collect()
}

/// How a table behaves when nothing is wrong.
struct Profile {
    /// Rows on an ordinary day at the start, before the weekday factor.
    level: f64,
    /// Monday to Sunday, as a share of `level`.
    weekdays: [f64; 7],
    /// Compound growth per day (0.003 is +0.3% a day).
    trend: f64,
    /// Day-to-day variation on top of the counting noise, as a share of the day.
    noise: f64,
    /// The last this many days of each month are `month_end_factor` times the usual.
    month_end_days: u32,
    month_end_factor: f64,
}

impl Profile {
    fn draw(kind: TableKind, rng: &mut Rng) -> Profile {
        let mut weekdays = [1.0; 7];
        for factor in &mut weekdays {
            *factor = rng.between(0.9, 1.1);
        }
        let mut profile = Profile {
            level: 10f64.powf(rng.between(2.5, 5.5)),
            weekdays,
            trend: rng.between(-0.001, 0.001),
            noise: rng.between(0.02, 0.08),
            month_end_days: 0,
            month_end_factor: 1.0,
        };
        match kind {
            TableKind::BusinessWeek => {
                for factor in &mut profile.weekdays[..5] {
                    *factor = rng.between(0.75, 1.25);
                }
                profile.weekdays[5] = rng.between(0.3, 0.7);
                profile.weekdays[6] = rng.between(0.2, 0.6);
            }
            TableKind::WeekendQuiet => {
                profile.weekdays[5] = rng.between(0.03, 0.15);
                profile.weekdays[6] = rng.between(0.03, 0.15);
            }
            TableKind::NoSundayLoad => {
                profile.weekdays[5] = rng.between(0.4, 1.0);
                profile.weekdays[6] = 0.0;
            }
            TableKind::Small => {
                profile.level = rng.between(10.0, 80.0);
                profile.noise = rng.between(0.0, 0.05);
                profile.weekdays[5] = rng.between(0.5, 1.0);
                profile.weekdays[6] = rng.between(0.5, 1.0);
            }
            TableKind::MonthEnd => {
                profile.weekdays[5] = rng.between(0.3, 0.9);
                profile.weekdays[6] = rng.between(0.3, 0.9);
                profile.month_end_days = 1 + rng.below(2) as u32;
                profile.month_end_factor = rng.between(1.5, 2.5);
            }
            TableKind::Trending => {
                profile.level = 10f64.powf(rng.between(3.5, 6.5));
                profile.trend = rng.between(-0.003, 0.003);
            }
        }
        profile
    }

    /// The rows a day should have before noise. A holiday is loaded like a Sunday.
    fn expected(&self, start: NaiveDate, day: usize) -> f64 {
        let date = start + Days::new(day as u64);
        let weekday = if is_holiday(date) {
            self.weekdays[6]
        } else {
            self.weekdays[day % 7]
        };
        let month_end = if in_last_days_of_month(date, self.month_end_days) {
            self.month_end_factor
        } else {
            1.0
        };
        self.level * weekday * month_end * (1.0 + self.trend).powi(day as i32)
    }
}

fn daily_table(
    name: String,
    kind: TableKind,
    length: usize,
    clean: bool,
    rng: &mut Rng,
) -> DailyTable {
    // Day 0 is a Monday between mid-October and mid-December 2023, so Christmas falls
    // inside the learning period, and comes round again in some long tables.
    let first_monday = NaiveDate::from_ymd_opt(2023, 10, 16).expect("a valid date");
    let start = first_monday + Days::new(7 * rng.below(10) as u64);
    let profile = Profile::draw(kind, rng);
    let expected: Vec<f64> = (0..length)
        .map(|day| profile.expected(start, day))
        .collect();
    let mut days: Vec<f64> = expected
        .iter()
        .map(|&rows| {
            let wobble = (1.0 + profile.noise * rng.normal()).max(0.0);
            rng.poisson(rows * wobble)
        })
        .collect();
    // Unlabelled trouble in the learning period: outages and a replayed load, which
    // a detector must not learn as normal.
    for _ in 0..rng.below(3) {
        let day = rng.below(FIRST_LABELLED_DAY);
        days[day] = (days[day] * rng.between(0.0, 0.3)).round();
    }
    if rng.chance(0.3) {
        let day = rng.below(FIRST_LABELLED_DAY);
        days[day] *= 2.0;
    }
    let windows = if clean {
        Vec::new()
    } else {
        inject_faults(&mut days, &expected, start, rng)
    };
    DailyTable {
        name,
        kind,
        start,
        days,
        clean,
        windows,
        month_end_days: profile.month_end_days,
    }
}

/// Breaks `days` after the learning period and returns where. One in three tables gets
/// a level shift, last, because its window runs to the end of the series.
fn inject_faults(
    days: &mut [f64],
    expected: &[f64],
    start: NaiveDate,
    rng: &mut Rng,
) -> Vec<FaultWindow> {
    let length = days.len();
    // A fault goes on a day the table normally loads and that is no holiday: a fault on
    // a holiday would be two surprises at once, and nobody can miss a load never made.
    let breakable = |day: usize| expected[day] > 0.0 && !is_holiday(start + Days::new(day as u64));
    // At least four weeks of ordinary days before the shift and four weeks of the new
    // level after it.
    let shift_room = length - FIRST_LABELLED_DAY - 8 * 7;
    let shift_day = if rng.chance(1.0 / 3.0) {
        let from = FIRST_LABELLED_DAY + 4 * 7 + rng.below(shift_room);
        (from..length).find(|&day| breakable(day))
    } else {
        None
    };
    let point_faults_end = shift_day.map_or(length, |day| day - MIN_GAP_DAYS);

    let mut windows = Vec::new();
    let mut from = FIRST_LABELLED_DAY + rng.below(14);
    loop {
        // Drawn from the first four kinds: the point faults.
        let kind = FaultKind::ALL[rng.below(4)];
        let span = kind.length().expect("a point fault");
        let Some(first_day) = (from..point_faults_end.saturating_sub(span - 1))
            .find(|&day| (day..day + span).all(breakable))
        else {
            break;
        };
        let window = apply_fault(days, kind, first_day, rng);
        windows.push(window);
        from = window.last_day + 1 + MIN_GAP_DAYS + rng.below(21);
    }
    if let Some(first_day) = shift_day {
        windows.push(apply_fault(days, FaultKind::LevelShift, first_day, rng));
    }
    windows
}

/// Breaks `days` with one fault of `kind` from `first_day`, in the benchmark's shapes
/// (see [`FaultKind`]; the factor drawn from `rng`, each day its own but a level
/// shift's), and returns its window. A level shift runs to the last day of `days`.
pub fn apply_fault(
    days: &mut [f64],
    kind: FaultKind,
    first_day: usize,
    rng: &mut Rng,
) -> FaultWindow {
    let last_day = match kind.length() {
        Some(length) => first_day + length - 1,
        None => days.len() - 1,
    };
    let window = &mut days[first_day..=last_day];
    if kind == FaultKind::LevelShift {
        let factor = if rng.chance(0.5) {
            rng.between(1.3, 1.6)
        } else {
            rng.between(0.4, 0.7)
        };
        for day in window {
            *day = (*day * factor).round();
        }
    } else {
        for day in window {
            let factor = match kind {
                FaultKind::Drop => rng.between(0.2, 0.6),
                FaultKind::Spike => rng.between(1.8, 3.0),
                FaultKind::MissedLoad => 0.0,
                FaultKind::PartialLoad => rng.between(0.4, 0.7),
                FaultKind::LevelShift => unreachable!("shifted above"),
            };
            *day = (*day * factor).round();
        }
    }
    FaultWindow {
        kind,
        first_day,
        last_day,
    }
}

/// A small calendar for the years the tables span: the days around Christmas and New
/// Year, and Easter's Friday and Monday.
pub fn is_holiday(date: NaiveDate) -> bool {
    let fixed = matches!(
        (date.month(), date.day()),
        (1, 1) | (12, 24) | (12, 25) | (12, 26) | (12, 31)
    );
    let easter_sundays = [(2023, 4, 9), (2024, 3, 31), (2025, 4, 20), (2026, 4, 5)];
    let easter = easter_sundays.iter().any(|&(year, month, day)| {
        let sunday = NaiveDate::from_ymd_opt(year, month, day).expect("a valid date");
        date == sunday - Days::new(2) || date == sunday + Days::new(1)
    });
    fixed || easter
}

/// Whether `date` is one of the last `days` days of its month (never, for zero).
fn in_last_days_of_month(date: NaiveDate, days: u32) -> bool {
    days > 0 && (date + Days::new(u64::from(days))).month() != date.month()
}

/// How often a table's loads land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cadence {
    /// A continuous stream: a load every few minutes, day and night.
    Stream,
    /// An hourly batch at a fixed minute past each hour, give or take a few minutes.
    Hourly,
    /// The same, with no loads at night.
    HourlyDaytime,
    /// A nightly batch.
    Daily,
}

impl Cadence {
    pub const ALL: [Cadence; 4] = [
        Cadence::Stream,
        Cadence::Hourly,
        Cadence::HourlyDaytime,
        Cadence::Daily,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            Cadence::Stream => "continuous stream",
            Cadence::Hourly => "hourly batch",
            Cadence::HourlyDaytime => "hourly, none at night",
            Cadence::Daily => "daily batch",
        }
    }

    /// Days of load times generated: enough after the learning period for several
    /// stalls at the spacing [`stall`] leaves between them.
    fn days(self) -> i64 {
        match self {
            Cadence::Stream => 28,
            Cadence::Hourly | Cadence::HourlyDaytime => 70,
            Cadence::Daily => 180,
        }
    }
}

pub const MINUTE: i64 = 60;
pub const HOUR: i64 = 60 * MINUTE;
pub const DAY: i64 = 24 * HOUR;
/// Load times start here: 2024-01-01 00:00 UTC, a Monday.
pub const LOADS_START: i64 = 1_704_067_200;
/// Freshness is not judged in the first two weeks: the cadence is being learned.
pub const FRESHNESS_LEARNING: i64 = 14 * DAY;

/// One table's load times with the stretches its writer stalled.
#[derive(Debug, Clone)]
pub struct LoadSeries {
    pub name: String,
    pub cadence: Cadence,
    /// When each load landed, Unix seconds at whole minutes (the monitor reads minutes of
    /// a timestamp column), oldest first, distinct.
    pub load_times: Vec<i64>,
    /// Checks are judged from here, after the learning period, to `last_check`.
    pub first_check: i64,
    pub last_check: i64,
    /// Where a flag is wanted, in order: from when the first load the stall swallowed
    /// was due (the cadence is exceeded from then on) to when the writer's next load
    /// landed. The end is inclusive because a check at that very second is given only
    /// the loads before it, so it still sees the stall.
    pub stalls: Vec<RangeInclusive<i64>>,
}

/// `count` load series, the cadences in turn, each with stalls after the learning
/// period.
pub fn load_series(count: usize, seed: u64) -> Vec<LoadSeries> {
    let mut seeds = Rng::new(seed);
    (0..count)
        .map(|n| {
            let cadence = Cadence::ALL[n % Cadence::ALL.len()];
            let mut rng = Rng::new(seeds.next_u64());
            let end = LOADS_START + cadence.days() * DAY;
            let (mut load_times, interval) = schedule(cadence, end, &mut rng);
            let first_check = LOADS_START + FRESHNESS_LEARNING;
            let stalls = stall(
                &mut load_times,
                cadence,
                interval,
                first_check,
                end,
                &mut rng,
            );
            LoadSeries {
                name: format!("l{n:03}"),
                cadence,
                load_times,
                first_check,
                last_check: end,
                stalls,
            }
        })
        .collect()
}

/// A healthy writer's load times up to `end`, and its usual interval in seconds.
fn schedule(cadence: Cadence, end: i64, rng: &mut Rng) -> (Vec<i64>, i64) {
    let mut times = Vec::new();
    let interval = match cadence {
        Cadence::Stream => {
            let every = rng.between(2.0, 8.0) * MINUTE as f64;
            let mut at = LOADS_START as f64;
            while at < end as f64 {
                times.push(at as i64);
                at += every * rng.between(0.5, 1.5);
            }
            every as i64
        }
        Cadence::Hourly | Cadence::HourlyDaytime => {
            let past_the_hour = rng.below(60) as i64 * MINUTE;
            let (first_hour, last_hour) = if cadence == Cadence::HourlyDaytime {
                (5 + rng.below(3) as i64, 20 + rng.below(3) as i64)
            } else {
                (0, 23)
            };
            for hour in 0..(end - LOADS_START) / HOUR {
                if (first_hour..=last_hour).contains(&(hour % 24)) {
                    let jitter = rng.between(-3.0, 3.0) * MINUTE as f64;
                    times.push(LOADS_START + hour * HOUR + past_the_hour + jitter as i64);
                }
            }
            HOUR
        }
        Cadence::Daily => {
            let at = rng.between(1.0, 6.0) * HOUR as f64;
            for day in 0..(end - LOADS_START) / DAY {
                let jitter = rng.between(-20.0, 20.0) * MINUTE as f64;
                times.push(LOADS_START + day * DAY + (at + jitter) as i64);
            }
            DAY
        }
    };
    for time in &mut times {
        *time -= time.rem_euclid(MINUTE);
    }
    times.retain(|&time| (LOADS_START..end).contains(&time));
    times.sort_unstable();
    times.dedup();
    (times, interval)
}

/// Stalls the writer now and then after `first_check`: each time, right after a load,
/// no loads for several times the usual interval. Removes the swallowed loads and
/// returns where flags are wanted (see [`LoadSeries::stalls`]).
fn stall(
    times: &mut Vec<i64>,
    cadence: Cadence,
    interval: i64,
    first_check: i64,
    end: i64,
    rng: &mut Rng,
) -> Vec<RangeInclusive<i64>> {
    // How long a stall lasts, in usual intervals, and the typical time between stalls:
    // from half of it to one and a half times it.
    let (shortest, longest, spacing) = match cadence {
        Cadence::Stream => (5.0, 30.0, 2 * DAY),
        Cadence::Hourly | Cadence::HourlyDaytime => (3.0, 10.0, 8 * DAY),
        Cadence::Daily => (2.0, 4.0, 30 * DAY),
    };
    let mut stalls = Vec::new();
    let mut from = first_check + rng.below(spacing as usize) as i64;
    while let Some(last_load) = times.iter().position(|&time| time >= from) {
        let stalled_until =
            times[last_load] + (interval as f64 * rng.between(shortest, longest)) as i64;
        if stalled_until >= end {
            break;
        }
        let swallowed = times[last_load + 1..]
            .iter()
            .take_while(|&&time| time < stalled_until)
            .count();
        if swallowed == 0 {
            // The stall fell inside a pause the table takes anyway (a night): no load
            // was due, so there is nothing to see. Try again further on.
            from = times[last_load] + 1;
            continue;
        }
        let due = times[last_load + 1];
        times.drain(last_load + 1..last_load + 1 + swallowed);
        let resumed = times.get(last_load + 1).copied().unwrap_or(end);
        stalls.push(due..=resumed);
        from = resumed + spacing / 2 + rng.below(spacing as usize) as i64;
    }
    stalls
}

/// Pooled window precision and recall over many series. A window (a fault's days, a
/// stall's check times) is caught when any flag falls inside it. Precision is the share
/// of flags that fall inside some window, so every flag outside the windows counts
/// against it, however many windows were caught.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowScore {
    pub windows: usize,
    pub caught: usize,
    pub flags: usize,
    pub flags_in_windows: usize,
}

impl WindowScore {
    /// Adds one series: its windows and the points (days, check times) flagged in it.
    /// Returns which of the windows were caught, in the order given.
    pub fn add(&mut self, windows: &[RangeInclusive<i64>], flagged: &[i64]) -> Vec<bool> {
        let mut caught = vec![false; windows.len()];
        for point in flagged {
            let mut inside = false;
            for (window, caught) in windows.iter().zip(&mut caught) {
                if window.contains(point) {
                    *caught = true;
                    inside = true;
                }
            }
            self.flags += 1;
            self.flags_in_windows += usize::from(inside);
        }
        self.windows += windows.len();
        self.caught += caught.iter().filter(|&&c| c).count();
        caught
    }

    pub fn false_flags(&self) -> usize {
        self.flags - self.flags_in_windows
    }

    /// Zero when nothing was flagged.
    pub fn precision(&self) -> f64 {
        ratio(self.flags_in_windows, self.flags)
    }

    /// Zero when there were no windows.
    pub fn recall(&self) -> f64 {
        ratio(self.caught, self.windows)
    }

    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daily_tables_are_the_same_from_the_same_seed() {
        let a = daily_tables(24, 5);
        let b = daily_tables(24, 5);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.days, y.days);
            assert_eq!(x.windows, y.windows);
        }
        let c = daily_tables(24, 6);
        assert!(a.iter().zip(&c).any(|(x, y)| x.days != y.days));
    }

    #[test]
    fn tables_start_on_a_monday_with_the_promised_lengths_and_kinds() {
        let tables = daily_tables(48, 5);
        for table in &tables {
            assert_eq!(table.start.weekday(), chrono::Weekday::Mon);
            assert!([SHORT_TABLE_DAYS, LONG_TABLE_DAYS].contains(&table.days.len()));
            assert!(table.days.iter().all(|&d| d >= 0.0 && d.fract() == 0.0));
        }
        for kind in TableKind::ALL {
            assert_eq!(tables.iter().filter(|t| t.kind == kind).count(), 8);
        }
        let sundays_off = tables
            .iter()
            .find(|t| t.kind == TableKind::NoSundayLoad)
            .unwrap();
        assert!(sundays_off
            .days
            .iter()
            .skip(6)
            .step_by(7)
            .all(|&d| d == 0.0));
    }

    #[test]
    fn windows_come_after_the_learning_period_in_order_with_gaps() {
        let tables = daily_tables(120, 9);
        for table in tables.iter().filter(|t| !t.clean) {
            assert!(!table.windows.is_empty(), "{}", table.name);
            assert!(table.windows[0].first_day >= FIRST_LABELLED_DAY);
            for pair in table.windows.windows(2) {
                assert!(pair[1].first_day > pair[0].last_day + MIN_GAP_DAYS);
            }
            for (i, window) in table.windows.iter().enumerate() {
                assert!(window.first_day <= window.last_day);
                assert!(window.last_day < table.days.len());
                let is_last = i + 1 == table.windows.len();
                if window.kind == FaultKind::LevelShift {
                    assert!(is_last && window.last_day == table.days.len() - 1);
                }
            }
        }
        let kinds: Vec<FaultKind> = tables
            .iter()
            .flat_map(|t| t.windows.iter().map(|w| w.kind))
            .collect();
        assert!(FaultKind::ALL.iter().all(|kind| kinds.contains(kind)));
    }

    #[test]
    fn clean_tables_carry_no_windows() {
        let tables = daily_tables(120, 9);
        let clean: Vec<&DailyTable> = tables.iter().filter(|t| t.clean).collect();
        assert_eq!(clean.len(), 36);
        assert!(clean.iter().all(|t| t.windows.is_empty()));
        for kind in TableKind::ALL {
            assert!(clean.iter().any(|t| t.kind == kind));
        }
    }

    #[test]
    fn a_missed_load_is_a_zero_day_and_a_holiday_is_a_sunday() {
        let tables = daily_tables(120, 9);
        for table in &tables {
            for window in &table.windows {
                if window.kind == FaultKind::MissedLoad {
                    assert_eq!(table.days[window.first_day], 0.0);
                }
            }
        }
        let christmas = NaiveDate::from_ymd_opt(2023, 12, 25).unwrap();
        assert!(is_holiday(christmas));
        assert!(is_holiday(NaiveDate::from_ymd_opt(2024, 3, 29).unwrap()));
        assert!(!is_holiday(
            NaiveDate::from_ymd_opt(2024, 3, 31).unwrap() + Days::new(2)
        ));
        for table in tables.iter().filter(|t| t.kind == TableKind::NoSundayLoad) {
            let day = (christmas - table.start).num_days() as usize;
            assert_eq!(table.day_kind(day), DayKind::Holiday);
            assert_eq!(table.days[day], 0.0, "{}", table.name);
        }
    }

    #[test]
    fn one_fault_breaks_only_its_window_and_a_level_shift_runs_to_the_end() {
        let mut rng = Rng::new(4);
        for kind in FaultKind::ALL {
            let mut days = vec![1000.0; 30];
            let window = apply_fault(&mut days, kind, 10, &mut rng);
            let last = kind.length().map_or(29, |length| 10 + length - 1);
            assert_eq!(
                (window.kind, window.first_day, window.last_day),
                (kind, 10, last)
            );
            for (day, &rows) in days.iter().enumerate() {
                let broken = (10..=last).contains(&day);
                assert_eq!(rows != 1000.0, broken, "{kind:?} day {day}: {rows}");
            }
            if kind == FaultKind::LevelShift {
                // One step, the same on every day after it.
                assert!(days[10..].iter().all(|&rows| rows == days[10]));
            }
        }
    }

    #[test]
    fn month_end_peaks_are_the_last_days_of_the_month() {
        let date = |m, d| NaiveDate::from_ymd_opt(2024, m, d).unwrap();
        assert!(in_last_days_of_month(date(2, 29), 1));
        assert!(!in_last_days_of_month(date(2, 28), 1));
        assert!(in_last_days_of_month(date(2, 28), 2));
        assert!(!in_last_days_of_month(date(2, 29), 0));
    }

    #[test]
    fn load_series_are_the_same_from_the_same_seed() {
        let a = load_series(8, 3);
        let b = load_series(8, 3);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.load_times, y.load_times);
            assert_eq!(x.stalls, y.stalls);
        }
    }

    #[test]
    fn stalls_come_after_the_learning_period_and_hold_no_loads() {
        for series in load_series(16, 3) {
            assert!(!series.stalls.is_empty(), "{}", series.name);
            assert!(series.load_times.windows(2).all(|w| w[0] < w[1]));
            assert!(series.load_times.iter().all(|t| t % MINUTE == 0));
            assert!(series.stalls[0].start() >= &series.first_check);
            for pair in series.stalls.windows(2) {
                assert!(pair[0].end() < pair[1].start());
            }
            for stall in &series.stalls {
                assert!(stall.end() <= &series.last_check);
                // Nothing lands inside a stall but the load that ends it.
                let inside = series
                    .load_times
                    .iter()
                    .filter(|t| stall.contains(t))
                    .count();
                assert!(inside <= 1, "{}: {stall:?}", series.name);
            }
        }
    }

    #[test]
    fn a_window_is_caught_by_any_flag_inside_it_and_flags_outside_cost_precision() {
        let mut score = WindowScore::default();
        // Two windows; days 11 and 12 fall in the first, day 30 in none; the second
        // window (40..=45) is missed.
        let caught = score.add(&[10..=12, 40..=45], &[11, 12, 30]);
        assert_eq!(caught, vec![true, false]);
        assert_eq!(
            score,
            WindowScore {
                windows: 2,
                caught: 1,
                flags: 3,
                flags_in_windows: 2,
            }
        );
        assert_eq!(score.false_flags(), 1);
        assert!((score.precision() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(score.recall(), 0.5);
        assert!((score.f1() - 4.0 / 7.0).abs() < 1e-12);

        // A clean series: no windows, every flag is false; scores pool across series.
        let caught = score.add(&[], &[5]);
        assert!(caught.is_empty());
        assert_eq!((score.windows, score.flags, score.false_flags()), (2, 4, 2));
        assert_eq!(score.precision(), 0.5);

        // A window's first and last points count; nothing flagged is zero, not NaN.
        let mut edges = WindowScore::default();
        edges.add(&[3..=4, 8..=8], &[4, 8]);
        assert_eq!((edges.caught, edges.false_flags()), (2, 0));
        assert_eq!(WindowScore::default().precision(), 0.0);
        assert_eq!(WindowScore::default().f1(), 0.0);
    }
}
