//! Daily volume: rows per day, each day judged against the same weekday in prior weeks,
//! so a quiet Sunday is not an incident and a Saturday at 58% is.
//!
//! The baseline is the median of up to [`WEEKS`] prior same-weekday values and the spread
//! their scaled median absolute deviation: one bad week in the history (a holiday, an
//! outage) moves neither. The day under test is never part of its own baseline.

use std::ops::RangeInclusive;

use chrono::{Datelike, Duration, NaiveDate};
use serde::{Deserialize, Serialize};

use super::{median_and_spread, Verdict, VerdictKind};

/// How many prior same-weekday values make the baseline (eight weeks).
pub const WEEKS: usize = 8;
/// Fewer prior same-weekday values than this and the verdict is `learning`.
pub const MIN_WEEKS: usize = 3;
/// How many robust standard deviations from the baseline is a breach.
pub const THRESHOLD: f64 = 4.0;
/// The band is never narrower than this share of the baseline: eight quiet weeks can
/// have a tiny spread by chance, and a 10% wobble is not worth waking anyone for.
pub const MIN_RELATIVE_WIDTH: f64 = 0.2;

/// Calendar days from `first` to `last` inclusive, with each day's count; days with no
/// rows are zero-volume days, not skipped.
pub fn fill_days(counts: &[(NaiveDate, u64)], first: NaiveDate, last: NaiveDate) -> Vec<f64> {
    let len = (last - first).num_days() + 1;
    let mut days = vec![0.0; len.max(0) as usize];
    for (day, count) in counts {
        let offset = (*day - first).num_days();
        if (0..len).contains(&offset) {
            days[offset as usize] += *count as f64;
        }
    }
    days
}

/// The date of index `i` in a series starting at `first`.
pub fn date_at(first: NaiveDate, i: usize) -> NaiveDate {
    first + Duration::days(i as i64)
}

/// How far back a baseline looks for clean same-weekday values: past days left out
/// (breaches, incidents, holidays) are replaced by older ones, this many weeks back at most.
pub const MAX_WEEKS_BACK: usize = 2 * WEEKS;

/// Judges `days[index]` against the same weekday in the weeks before it. `days` is one
/// value per calendar day, oldest first; every earlier day may be learned from.
pub fn judge_day(days: &[f64], index: usize) -> Verdict {
    judge_in(days, &vec![true; index], index)
}

/// [`judge_day`] learning only from the days `clean` marks (indexed as `values`; only
/// the days before `index` are read).
///
/// The band is never narrower than a fifth of the baseline, nor than four Poisson
/// standard deviations: eight quiet weeks can agree by chance, and a 20-row table
/// wobbles by five rows whatever its history says.
fn judge_in(values: &[f64], clean: &[bool], index: usize) -> Verdict {
    let observed = values[index];
    let prior: Vec<f64> = (1..=MAX_WEEKS_BACK)
        .map_while(|week| index.checked_sub(7 * week))
        .filter(|&i| clean[i])
        .take(WEEKS)
        .map(|i| values[i])
        .collect();
    if prior.len() < MIN_WEEKS {
        return Verdict::learning(observed);
    }
    let (baseline, spread) = median_and_spread(&prior);
    let sigma = spread
        .max(MIN_RELATIVE_WIDTH * baseline / THRESHOLD)
        .max((baseline + 1.0).sqrt());
    let width = THRESHOLD * sigma;
    let low = (baseline - width).max(0.0);
    let high = baseline + width;
    Verdict::banded(
        observed,
        low,
        high,
        baseline,
        Some((observed - baseline) / sigma),
    )
}

/// How many days at each end of a month have a place of their own: month-end closes
/// and first-of-the-month batches land there.
pub const MONTH_EDGE_DAYS: u32 = 3;
/// How many prior months are asked about a place in the month, and how many must have
/// seen it (all of those seen must agree).
pub const MONTHS_ASKED: u32 = 3;
pub const MIN_MONTHS: usize = 2;

/// [`judge_in`] for a series whose day 0 is `first`. A day near either end of its
/// month that was unusual in the same direction in each of the months before it (the
/// last day of the month at twice a weekday, say) is judged against its weekday
/// baseline scaled by how unusual those days were, so a month-end peak is not an
/// incident every month and a missing one still is.
///
/// On one of the team's `holidays` the band reaches down to the quietest weekday's: a
/// holiday at a Sunday's volume is expected, one with no rows at all still is not.
fn judge_dated(
    values: &[f64],
    clean: &[bool],
    first: NaiveDate,
    index: usize,
    holidays: &[NaiveDate],
) -> Verdict {
    let verdict = judge_by_place(values, clean, first, index);
    if !holidays.contains(&date_at(first, index)) {
        return verdict;
    }
    let quietest_low = (1..7)
        .filter_map(|back| index.checked_sub(back))
        .filter_map(|at| judge_in(values, clean, at).expected)
        .map(|range| range.low)
        .min_by(f64::total_cmp);
    match (verdict.expected, quietest_low) {
        (Some(range), Some(low)) if low < range.low => Verdict::banded(
            verdict.observed,
            low,
            range.high,
            range.baseline,
            verdict.score,
        ),
        _ => verdict,
    }
}

/// [`judge_dated`] without the calendar: the weekday, and the place in the month.
fn judge_by_place(values: &[f64], clean: &[bool], first: NaiveDate, index: usize) -> Verdict {
    let plain = judge_in(values, clean, index);
    let (Some(effect), Some(range)) = (month_effect(values, clean, first, index), plain.expected)
    else {
        return plain;
    };
    let baseline = range.baseline * effect;
    let sigma = ((range.high - range.baseline) / THRESHOLD * effect).max((baseline + 1.0).sqrt());
    let width = THRESHOLD * sigma;
    Verdict::banded(
        plain.observed,
        (baseline - width).max(0.0),
        baseline + width,
        baseline,
        Some((plain.observed - baseline) / sigma),
    )
}

/// A day's place in its month: 1 to [`MONTH_EDGE_DAYS`] counting from the first day,
/// -1 (the last day) to -[`MONTH_EDGE_DAYS`] counting from the end; None in between.
fn place_in_month(date: NaiveDate) -> Option<i32> {
    let days_in_month = month_start(date, 1).pred_opt()?.day();
    let from_end = days_in_month - date.day();
    if from_end < MONTH_EDGE_DAYS {
        Some(-(from_end as i32) - 1)
    } else if date.day() <= MONTH_EDGE_DAYS {
        Some(date.day() as i32)
    } else {
        None
    }
}

/// The first day of the month `months_ahead` after `date`'s (negative: before).
fn month_start(date: NaiveDate, months_ahead: i32) -> NaiveDate {
    let months = date.year() * 12 + date.month0() as i32 + months_ahead;
    NaiveDate::from_ymd_opt(months.div_euclid(12), months.rem_euclid(12) as u32 + 1, 1)
        .expect("the first of a month")
}

/// The day at `place` in the month `months_ahead` after `date`'s.
fn at_place(date: NaiveDate, months_ahead: i32, place: i32) -> NaiveDate {
    let start = month_start(date, months_ahead);
    if place > 0 {
        start + Duration::days(i64::from(place) - 1)
    } else {
        month_start(date, months_ahead + 1) + Duration::days(i64::from(place))
    }
}

/// How the same place in the prior months stood against its own weekday baseline, when
/// at least [`MIN_MONTHS`] of them were all beyond the ordinary band the same way: the
/// median of those ratios. None for a day without a place, or without such a pattern.
fn month_effect(values: &[f64], clean: &[bool], first: NaiveDate, index: usize) -> Option<f64> {
    let date = date_at(first, index);
    let place = place_in_month(date)?;
    let mut ratios = Vec::new();
    for back in 1..=MONTHS_ASKED as i32 {
        let earlier = at_place(date, -back, place);
        let Ok(at) = usize::try_from((earlier - first).num_days()) else {
            break;
        };
        if let Some(range) = judge_in(values, clean, at)
            .expected
            .filter(|r| r.baseline > 0.0)
        {
            ratios.push(values[at] / range.baseline);
        }
    }
    let all_up = ratios.iter().all(|r| *r > 1.0 + MIN_RELATIVE_WIDTH);
    let all_down = ratios.iter().all(|r| *r < 1.0 - MIN_RELATIVE_WIDTH);
    (ratios.len() >= MIN_MONTHS && (all_up || all_down)).then(|| super::median(&mut ratios))
}

/// How many complete days before today [`recent`] judges, besides today so far.
pub const RECENT_DAYS: usize = 7;
/// A run of breaches in one direction over this many days is a new level people may
/// accept (see [`Shift`]); fewer is a bad day or two, not a level.
pub const MIN_SHIFT_DAYS: usize = 3;

/// What is known about a table's days besides their counts: the team's holidays, the
/// days no baseline may learn from, and the new levels people accepted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Calendar<'a> {
    /// The config's `holidays` (see [`judge_dated`]).
    pub holidays: &'a [NaiveDate],
    /// Days inside an incident on the table: whatever they held, it was not normal.
    pub excluded: &'a [RangeInclusive<NaiveDate>],
    /// The new levels people accepted, oldest first.
    pub restarts: &'a [Restart],
}

impl Calendar<'_> {
    /// A day no baseline learns from, whatever its verdict: a holiday or an incident's.
    fn leaves_out(&self, date: NaiveDate) -> bool {
        self.holidays.contains(&date) || self.excluded.iter().any(|days| days.contains(&date))
    }
}

/// A level a person accepted as the new normal: from `since` on, the days before it
/// are seen at the new level (times `ratio`), so the baseline restarts from the shift
/// without forgetting the weekly pattern it learned.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Restart {
    pub since: NaiveDate,
    pub ratio: f64,
}

impl Restart {
    fn rescale(&self, values: &mut [f64], first: NaiveDate) {
        let before = (self.since - first)
            .num_days()
            .clamp(0, values.len() as i64) as usize;
        for value in &mut values[..before] {
            *value *= self.ratio;
        }
    }
}

/// The run of breaches in one direction the newest complete days are in: since when,
/// over how many days, and how far from the baseline (the median of observed over
/// baseline: 1.6 is sixty percent more rows than usual). Days when nothing was expected
/// and nothing came (a Sunday without loads) neither break nor extend it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Shift {
    pub since: NaiveDate,
    pub days: usize,
    pub ratio: f64,
}

impl Shift {
    /// Long enough to be a level, not a bad day: what `accept` asks for.
    pub fn is_level(&self) -> bool {
        self.days >= MIN_SHIFT_DAYS
    }
}

/// Every day of a series judged in order, each against the days before it only, as a
/// replay one day at a time would judge it. A day that breached, a holiday and an
/// incident's day are left out of the baselines after it (clean baselines): an outage
/// in the history does not widen the band, and a level shift stays one breach until a
/// person accepts it, instead of slowly becoming normal.
pub fn judge_all(days: &[f64], first: NaiveDate, calendar: &Calendar) -> Vec<Verdict> {
    judge_series(days, first, calendar).verdicts
}

struct Series {
    /// Which days the baselines may learn from.
    clean: Vec<bool>,
    verdicts: Vec<Verdict>,
}

fn judge_series(days: &[f64], first: NaiveDate, calendar: &Calendar) -> Series {
    let mut values = days.to_vec();
    let mut restarts = calendar.restarts.iter().peekable();
    let mut series = Series {
        clean: Vec::with_capacity(days.len()),
        verdicts: Vec::with_capacity(days.len()),
    };
    for index in 0..days.len() {
        let date = date_at(first, index);
        while let Some(restart) = restarts.next_if(|r| r.since <= date) {
            restart.rescale(&mut values, first);
        }
        let verdict = judge_dated(&values, &series.clean, first, index, calendar.holidays);
        series
            .clean
            .push(!verdict.kind.is_breach() && !calendar.leaves_out(date));
        series.verdicts.push(verdict);
    }
    series
}

/// One day of [`recent`]: a complete day, or today so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JudgedDay {
    /// The day's index in the series.
    pub index: usize,
    /// Today up to the time of day of the measurement, judged on the rows before it.
    pub partial: bool,
    pub verdict: Verdict,
}

/// What [`recent`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recent {
    /// The last complete days and today so far, oldest first.
    pub days: Vec<JudgedDay>,
    /// The run of breaches the complete days end in, if any.
    pub shift: Option<Shift>,
}

/// The last [`RECENT_DAYS`] complete days and today so far, oldest first, each against
/// the same weekday in the weeks before it (see [`judge_all`]). Complete days are
/// judged on their whole counts (`days`). Today is judged on `so_far`, the rows before
/// the current time of day, against the same weekday's rows before the same time of
/// day: so a day that is short by midday is seen at midday, and a quiet Sunday morning
/// is compared with other Sunday mornings. Both series hold one value per calendar day,
/// oldest first, and end today; day 0 is `first`. Without `so_far` (the timestamps
/// carry no time of day) today is not judged.
pub fn recent(
    days: &[f64],
    so_far: Option<&[f64]>,
    first: NaiveDate,
    calendar: &Calendar,
) -> Recent {
    let Some(today) = days.len().checked_sub(1) else {
        return Recent::default();
    };
    let series = judge_series(&days[..today], first, calendar);
    let mut judged: Vec<JudgedDay> = (today.saturating_sub(RECENT_DAYS)..today)
        .map(|index| JudgedDay {
            index,
            partial: false,
            verdict: series.verdicts[index],
        })
        .collect();
    if let Some(so_far) = so_far {
        let mut values = so_far.to_vec();
        let today_date = date_at(first, today);
        for restart in calendar.restarts.iter().filter(|r| r.since <= today_date) {
            restart.rescale(&mut values, first);
        }
        judged.push(JudgedDay {
            index: today,
            partial: true,
            verdict: judge_dated(&values, &series.clean, first, today, calendar.holidays),
        });
    }
    Recent {
        days: judged,
        shift: current_shift(&series.verdicts, first),
    }
}

/// A day when nothing was expected and nothing out of the way came.
fn nothing_expected(verdict: &Verdict) -> bool {
    !verdict.kind.is_breach() && verdict.expected.is_some_and(|r| r.baseline <= 0.0)
}

fn current_shift(verdicts: &[Verdict], first: NaiveDate) -> Option<Shift> {
    let mut kind = None;
    let mut since = None;
    let mut ratios = Vec::new();
    for (index, verdict) in verdicts.iter().enumerate().rev() {
        if nothing_expected(verdict) {
            continue;
        }
        if !verdict.kind.is_breach() || kind.is_some_and(|k| k != verdict.kind) {
            break;
        }
        kind = Some(verdict.kind);
        since = Some(index);
        if let Some(range) = verdict.expected.filter(|r| r.baseline > 0.0) {
            ratios.push(verdict.observed / range.baseline);
        }
    }
    let days = ratios.len();
    (days > 0).then(|| Shift {
        since: date_at(first, since.expect("set with the first ratio")),
        days,
        ratio: super::median(&mut ratios),
    })
}

impl Recent {
    /// The day a volume observation is about: today so far when it breaches, else the
    /// last complete day on which rows were expected (a Sunday without loads says
    /// nothing about the table).
    pub fn headline(&self) -> Option<&JudgedDay> {
        let complete = || self.days.iter().filter(|d| !d.partial);
        self.days
            .iter()
            .find(|d| d.partial && d.verdict.kind.is_breach())
            .or_else(|| complete().rfind(|d| !nothing_expected(&d.verdict)))
            .or_else(|| complete().next_back())
    }

    /// The shift, when the headline is one of its breaches.
    pub fn headline_shift(&self) -> Option<Shift> {
        let headline = self.headline()?.verdict.kind;
        self.shift.filter(|shift| {
            headline.is_breach() && (shift.ratio > 1.0) == (headline == VerdictKind::High)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::synthetic::{weekly_series, SeriesShape};
    use crate::detect::VerdictKind;

    /// Day 0 of every test series.
    fn monday() -> NaiveDate {
        NaiveDate::from_ymd_opt(2024, 1, 1).unwrap()
    }

    /// Every day of a series from [`monday`], as the monitor judges them.
    fn all(days: &[f64]) -> Vec<Verdict> {
        judge_all(days, monday(), &Calendar::default())
    }

    /// One day of a series from [`monday`] with the team's `holidays`.
    fn judged(days: &[f64], index: usize, holidays: &[NaiveDate]) -> Verdict {
        let calendar = Calendar {
            holidays,
            ..Calendar::default()
        };
        judge_all(days, monday(), &calendar)[index]
    }

    fn shape() -> SeriesShape {
        SeriesShape {
            days: 84,
            level: 10_000.0,
            weekend_factor: 0.45,
            noise: 0.04,
            trend_per_week: 0.0,
            seed: 7,
        }
    }

    #[test]
    fn quiet_weekends_are_ok_and_a_saturday_at_58_percent_is_low() {
        let mut days = weekly_series(&shape());
        let saturday = 82; // day 0 is a Monday
        assert_eq!(
            date_at(NaiveDate::from_ymd_opt(2024, 1, 1).unwrap(), saturday)
                .format("%a")
                .to_string(),
            "Sat"
        );
        let verdicts = all(&days);
        let breaches = verdicts[28..].iter().filter(|v| v.kind.is_breach()).count();
        assert_eq!(
            breaches, 0,
            "a clean weekly pattern raised {breaches} breaches"
        );
        days[saturday] *= 0.58;
        let v = judge_day(&days, saturday);
        assert_eq!(v.kind, VerdictKind::Low, "{v:?}");
        let range = v.expected.unwrap();
        assert!(
            range.low > days[saturday] && range.baseline < 6_000.0,
            "{range:?}"
        );
        assert!(v.score.unwrap() < -THRESHOLD);
    }

    #[test]
    fn a_spike_is_high() {
        let mut days = weekly_series(&shape());
        days[80] *= 2.5;
        assert_eq!(judge_day(&days, 80).kind, VerdictKind::High);
    }

    #[test]
    fn a_stalled_writer_is_low_on_every_day_it_stays_stalled() {
        let mut days = weekly_series(&shape());
        days[75] *= 0.4;
        for day in &mut days[76..] {
            *day = 0.0;
        }
        for (i, v) in all(&days).iter().enumerate().skip(75) {
            assert_eq!(v.kind, VerdictKind::Low, "day {i}: {v:?}");
        }
    }

    #[test]
    fn a_holiday_dip_does_not_drag_the_weeks_after_it() {
        let mut days = weekly_series(&shape());
        // A Monday holiday at a fifth of normal: flagged on the day (without a holiday
        // calendar it is unusual), but the Mondays after it are judged as usual.
        days[63] *= 0.2;
        assert_eq!(judge_day(&days, 63).kind, VerdictKind::Low);
        for monday in [70, 77] {
            let v = judge_day(&days, monday);
            assert_eq!(v.kind, VerdictKind::Ok, "day {monday}: {v:?}");
        }
    }

    #[test]
    fn a_level_shift_is_one_run_that_stays_a_breach_until_accepted() {
        let mut days = weekly_series(&SeriesShape {
            days: 141,
            ..shape()
        });
        for day in &mut days[70..] {
            *day *= 1.6;
        }
        // Ten weeks on, the shift is still one run from its first day: its days are
        // breaches, so none of them teaches the baseline that the new level is normal.
        let recent = recent(&days, None, monday(), &Calendar::default());
        let shift = recent.shift.expect("a run");
        assert_eq!(shift.since, date_at(monday(), 70));
        assert_eq!(shift.days, 70);
        assert!((1.5..1.7).contains(&shift.ratio), "{shift:?}");
        assert!(shift.is_level());
        assert_eq!(recent.headline_shift(), Some(shift));
        assert!(all(&days)[70..].iter().all(|v| v.kind == VerdictKind::High));
    }

    #[test]
    fn an_accepted_level_is_the_normal_from_its_first_day_and_the_old_level_is_low() {
        let mut days = weekly_series(&SeriesShape {
            days: 141,
            ..shape()
        });
        for day in &mut days[70..] {
            *day *= 1.6;
        }
        let accepted = [Restart {
            since: date_at(monday(), 70),
            ratio: 1.6,
        }];
        let calendar = Calendar {
            restarts: &accepted,
            ..Calendar::default()
        };
        let verdicts = judge_all(&days, monday(), &calendar);
        let breaches = verdicts[70..].iter().filter(|v| v.kind.is_breach()).count();
        assert_eq!(breaches, 0, "the accepted level still alarms");
        // Before the shift nothing changed; after it, the weekly pattern is kept at
        // the new level, so a return to the old level is a drop.
        assert_eq!(verdicts[..70], all(&days)[..70]);
        days[140] /= 1.6;
        assert_eq!(
            judge_all(&days, monday(), &calendar)[140].kind,
            VerdictKind::Low
        );
        days.push(0.0); // today, not judged without a time of day
        let recent = recent(&days, None, monday(), &calendar);
        assert_eq!(recent.shift.map(|s| s.days), Some(1));
        assert!(!recent.shift.unwrap().is_level());
    }

    #[test]
    fn breach_days_stay_out_of_the_baselines_after_them() {
        // Four Monday outages in a row: in a baseline they would halve it, so a Monday
        // at half its rows would pass.
        let mut days = weekly_series(&shape());
        for monday in [49, 56, 63, 70] {
            days[monday] = 0.0;
        }
        days[77] *= 0.5;
        assert_eq!(judge_day(&days, 77).kind, VerdictKind::Ok);
        let verdicts = all(&days);
        for monday in [49, 56, 63, 70, 77] {
            assert_eq!(verdicts[monday].kind, VerdictKind::Low, "day {monday}");
        }
        let range = verdicts[77].expected.unwrap();
        assert!(range.baseline > 9_000.0, "{range:?}");
    }

    #[test]
    fn an_incidents_days_stay_out_of_the_baselines_though_each_was_in_band() {
        let mut days = weekly_series(&SeriesShape {
            days: 141,
            ..shape()
        });
        // Five Mondays at 85% while an incident was open: each inside the band.
        for monday in [98, 105, 112, 119, 126] {
            days[monday] *= 0.85;
        }
        let plain = all(&days)[133].expected.unwrap();
        let incident = [date_at(monday(), 96)..=date_at(monday(), 127)];
        let calendar = Calendar {
            excluded: &incident,
            ..Calendar::default()
        };
        let clean = judge_all(&days, monday(), &calendar)[133].expected.unwrap();
        assert!(plain.baseline < 9_000.0, "{plain:?}");
        assert!(clean.baseline > 9_500.0, "{clean:?}");
    }

    #[test]
    fn a_run_goes_on_over_days_without_loads_and_the_headline_skips_them() {
        // No loads on Sundays; the table halves from a Wednesday on.
        let mut days = weekly_series(&shape());
        for (i, day) in days.iter_mut().enumerate() {
            if i % 7 == 6 {
                *day = 0.0;
            }
        }
        for day in &mut days[72..] {
            *day *= 0.5;
        }
        // Today is index 84, a Monday: yesterday was a Sunday.
        days.push(0.0);
        let recent = recent(&days, None, monday(), &Calendar::default());
        let shift = recent.shift.expect("a run");
        assert_eq!(shift.since, date_at(monday(), 72));
        assert_eq!(shift.days, 10, "weekdays and Saturdays since: {shift:?}");
        let headline = recent.headline().unwrap();
        assert_eq!(headline.index, 82, "the Saturday, not the empty Sunday");
        assert_eq!(headline.verdict.kind, VerdictKind::Low);
    }

    #[test]
    fn a_twenty_row_table_is_quiet_at_plus_or_minus_five_and_low_at_zero() {
        // Twenty rows a day for twelve weeks: no spread at all to learn a band from.
        let mut days = vec![20.0; 84];
        for (value, expected) in [(25.0, VerdictKind::Ok), (15.0, VerdictKind::Ok)] {
            days[83] = value;
            let v = judge_day(&days, 83);
            assert_eq!(v.kind, expected, "{value} rows: {v:?}");
        }
        days[83] = 0.0;
        assert_eq!(judge_day(&days, 83).kind, VerdictKind::Low);
    }

    #[test]
    fn a_month_end_peak_seen_every_month_is_expected_and_a_missing_one_is_low() {
        // From Monday 2024-01-01: the last day of every month at twice the usual.
        let mut days = weekly_series(&SeriesShape {
            days: 152,
            ..shape()
        });
        let last_days = [30, 59, 90, 120, 151]; // Jan 31, Feb 29, Mar 31, Apr 30, May 31
        for &day in &last_days {
            assert_eq!(place_in_month(date_at(monday(), day)), Some(-1));
            days[day] *= 2.0;
        }
        // Against its weekday alone May 31 would be high; the months before say it is not.
        assert_eq!(judge_day(&days, 151).kind, VerdictKind::High);
        let v = judged(&days, 151, &[]);
        assert_eq!(v.kind, VerdictKind::Ok, "{v:?}");
        // The day before is an ordinary day, judged as one.
        assert_eq!(judged(&days, 150, &[]), judge_day(&days, 150));
        // A month end without its peak is low.
        days[151] /= 2.0;
        assert_eq!(judged(&days, 151, &[]).kind, VerdictKind::Low);
    }

    #[test]
    fn a_holiday_at_a_sundays_volume_is_expected_when_the_team_lists_it() {
        let mut days = weekly_series(&shape());
        let holiday_monday = 77; // 2024-03-18, a Monday
        days[holiday_monday] = days[holiday_monday - 1]; // the Sunday before's volume
        let holiday = [date_at(monday(), holiday_monday)];
        assert_eq!(judged(&days, holiday_monday, &[]).kind, VerdictKind::Low);
        let v = judged(&days, holiday_monday, &holiday);
        assert_eq!(v.kind, VerdictKind::Ok, "{v:?}");
        // Nothing at all on a holiday is still nothing at all.
        days[holiday_monday] = 0.0;
        assert_eq!(
            judged(&days, holiday_monday, &holiday).kind,
            VerdictKind::Low
        );
    }

    #[test]
    fn places_in_the_month_count_from_either_end() {
        let place = |y, m, d| place_in_month(NaiveDate::from_ymd_opt(y, m, d).unwrap());
        assert_eq!(place(2024, 2, 29), Some(-1));
        assert_eq!(place(2024, 2, 27), Some(-3));
        assert_eq!(place(2024, 2, 26), None);
        assert_eq!(place(2024, 3, 3), Some(3));
        assert_eq!(
            at_place(NaiveDate::from_ymd_opt(2024, 3, 31).unwrap(), -1, -1),
            NaiveDate::from_ymd_opt(2024, 2, 29).unwrap()
        );
        assert_eq!(
            at_place(NaiveDate::from_ymd_opt(2024, 1, 2).unwrap(), -1, 2),
            NaiveDate::from_ymd_opt(2023, 12, 2).unwrap()
        );
    }

    #[test]
    fn short_history_is_learning_not_a_breach() {
        let days = [100.0, 120.0, 90.0, 0.0, 100.0, 110.0, 95.0, 100.0, 5.0];
        for v in all(&days) {
            assert_eq!(v.kind, VerdictKind::Learning);
            assert!(v.expected.is_none());
        }
    }

    /// A weekday pattern with each day's rows before the cutoff a jittered `share` of
    /// the day: hourly loads read at some time of day.
    fn so_far(days: &[f64], share: f64) -> Vec<f64> {
        let mut rng = crate::detect::synthetic::Rng::new(11);
        days.iter()
            .map(|d| (d * share * rng.between(0.97, 1.03)).round())
            .collect()
    }

    fn today<'a>(judged: &'a [JudgedDay], days: &[f64]) -> &'a JudgedDay {
        let last = judged.last().unwrap();
        assert_eq!(last.index, days.len() - 1);
        assert!(last.partial);
        last
    }

    #[test]
    fn today_at_40_percent_by_midday_is_low_and_is_the_headline() {
        // 80 days from a Monday: today (index 79) is a Wednesday.
        let days = weekly_series(&SeriesShape {
            days: 80,
            ..shape()
        });
        assert_eq!(79 % 7, 2);
        let mut midday = so_far(&days, 0.5);
        midday[79] *= 0.4;
        let judged = recent(&days, Some(&midday), monday(), &Calendar::default());
        assert_eq!(judged.days.len(), RECENT_DAYS + 1);
        let now = today(&judged.days, &days);
        assert_eq!(now.verdict.kind, VerdictKind::Low, "{now:?}");
        assert_eq!(now.verdict.observed, midday[79]);
        let range = now.verdict.expected.unwrap();
        assert!(
            (4_500.0..5_500.0).contains(&range.baseline),
            "the baseline is prior Wednesdays by midday: {range:?}"
        );
        // The complete days before it are judged on their whole counts, and are fine.
        for day in &judged.days[..RECENT_DAYS] {
            assert!(!day.partial);
            assert_eq!(day.verdict.kind, VerdictKind::Ok, "{day:?}");
            assert_eq!(day.verdict.observed, days[day.index]);
        }
        assert_eq!(judged.days[0].index, 79 - RECENT_DAYS);
        assert_eq!(judged.headline(), Some(now));
    }

    #[test]
    fn a_normal_morning_is_ok_and_yesterday_is_the_headline() {
        let days = weekly_series(&SeriesShape {
            days: 80,
            ..shape()
        });
        let morning = so_far(&days, 0.375);
        let judged = recent(&days, Some(&morning), monday(), &Calendar::default());
        assert_eq!(today(&judged.days, &days).verdict.kind, VerdictKind::Ok);
        let head = judged.headline().unwrap();
        assert!(!head.partial);
        assert_eq!(head.index, 78, "yesterday");
        assert_eq!(head.verdict, judge_day(&days, 78));
    }

    #[test]
    fn a_quiet_sunday_morning_is_ok() {
        // 84 days from a Monday: today (index 83) is a Sunday, at 45% of a weekday.
        let days = weekly_series(&shape());
        let morning = so_far(&days, 0.375);
        let judged = recent(&days, Some(&morning), monday(), &Calendar::default());
        let now = today(&judged.days, &days);
        assert_eq!(now.verdict.kind, VerdictKind::Ok, "{now:?}");
        // Against a weekday morning it would have been low.
        assert!(now.verdict.observed < 0.6 * morning[80]);
    }

    #[test]
    fn a_spike_today_is_high_and_a_short_yesterday_stays_the_headline_when_today_is_fine() {
        let mut days = weekly_series(&SeriesShape {
            days: 80,
            ..shape()
        });
        let mut midday = so_far(&days, 0.5);
        midday[79] *= 2.5;
        let judged = recent(&days, Some(&midday), monday(), &Calendar::default());
        assert_eq!(today(&judged.days, &days).verdict.kind, VerdictKind::High);

        days[78] *= 0.5;
        let midday = so_far(&days, 0.5);
        let judged = recent(&days, Some(&midday), monday(), &Calendar::default());
        let head = judged.headline().unwrap();
        assert_eq!((head.index, head.verdict.kind), (78, VerdictKind::Low));
    }

    #[test]
    fn a_few_rows_early_in_the_morning_are_not_a_breach() {
        // Ten minutes past midnight: a handful of rows, one more or fewer than usual.
        let days = weekly_series(&SeriesShape {
            days: 80,
            ..shape()
        });
        let mut early: Vec<f64> = (0..80).map(|i| [3.0, 4.0, 2.0, 3.0][i % 4]).collect();
        early[79] = 1.0;
        let judged = recent(&days, Some(&early), monday(), &Calendar::default());
        assert_eq!(today(&judged.days, &days).verdict.kind, VerdictKind::Ok);
        early[79] = 5.0;
        let judged = recent(&days, Some(&early), monday(), &Calendar::default());
        assert_eq!(today(&judged.days, &days).verdict.kind, VerdictKind::Ok);
    }

    #[test]
    fn without_a_time_of_day_today_is_not_judged() {
        let days = weekly_series(&SeriesShape {
            days: 80,
            ..shape()
        });
        let judged = recent(&days, None, monday(), &Calendar::default());
        assert_eq!(judged.days.len(), RECENT_DAYS);
        assert!(judged.days.iter().all(|d| !d.partial));
        assert_eq!(judged.headline().unwrap().index, 78);
    }

    #[test]
    fn a_short_series_is_learning_throughout() {
        let days = [0.0, 0.0, 0.0, 5.0, 7.0, 6.0, 9.0, 3.0];
        let judged = recent(&days, Some(&days), monday(), &Calendar::default());
        assert_eq!(judged.days.len(), 8);
        assert!(judged
            .days
            .iter()
            .all(|d| d.verdict.kind == VerdictKind::Learning));
    }

    #[test]
    fn missing_days_are_zero() {
        let d = |n| NaiveDate::from_ymd_opt(2024, 1, n).unwrap();
        let days = fill_days(&[(d(1), 5), (d(3), 7)], d(1), d(4));
        assert_eq!(days, vec![5.0, 0.0, 7.0, 0.0]);
    }
}
