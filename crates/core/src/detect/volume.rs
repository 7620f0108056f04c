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

/// A series as the day under test sees it.
struct Seen<'a> {
    /// Every day's rows, the days before an accepted level seen at that level.
    values: &'a [f64],
    /// Which days a baseline may learn from (only the days before the day under test
    /// are read).
    clean: &'a [bool],
    /// How far the table's recent clean days strayed from their own baselines, as a
    /// robust standard deviation relative to the baseline (0 while unknown).
    spread: f64,
    /// The team's holidays.
    holidays: &'a [NaiveDate],
    /// How fast the table grows, in log rows per week (see [`growth_before`]).
    growth: f64,
}

/// `seen.values[index]` against the same weekday's clean days before it.
///
/// The band is never narrower than a fifth of the baseline, than four Poisson standard
/// deviations, nor than the table's own spread over all its recent days: eight quiet
/// weeks of one weekday can agree by chance, and a 20-row table wobbles by five rows
/// whatever its history says.
fn judge_in(seen: &Seen, index: usize) -> Verdict {
    match weekday_baseline(seen, index) {
        Some((baseline, sigma)) => against(seen.values[index], baseline, sigma),
        None => Verdict::learning(seen.values[index]),
    }
}

/// The same weekday's clean days before `index`: their median, and their spread beyond
/// counting noise, never below the table's own nor a fifth of the baseline over
/// [`THRESHOLD`]. None with fewer than [`MIN_WEEKS`] of them.
fn weekday_baseline(seen: &Seen, index: usize) -> Option<(f64, f64)> {
    let weeks: Vec<(f64, f64)> = (1..=MAX_WEEKS_BACK)
        .map_while(|week| index.checked_sub(7 * week).map(|i| (week, i)))
        .filter(|&(_, i)| seen.clean[i])
        .take(WEEKS)
        .map(|(week, i)| (week as f64, seen.values[i]))
        .collect();
    if weeks.len() < MIN_WEEKS {
        return None;
    }
    let prior: Vec<f64> = weeks
        .iter()
        .map(|(week, rows)| rows * (seen.growth * week).exp())
        .collect();
    let (baseline, spread) = median_and_spread(&prior);
    let sigma = beyond_counting(spread, baseline)
        .max(seen.spread * baseline)
        .max(MIN_RELATIVE_WIDTH * baseline / THRESHOLD);
    // A median of few values is itself uncertain (its variance is pi/2n of one value's):
    // three calm weeks must not make a band so tight the fourth breaches it.
    let uncertainty = (1.0 + std::f64::consts::FRAC_PI_2 / prior.len() as f64).sqrt();
    Some((baseline, sigma * uncertainty))
}

/// How many of the week pairs must agree on a trend's direction, and how far it must
/// move the baseline, before it is followed.
pub const TREND_AGREEMENT: f64 = 0.9;
pub const MIN_TREND_EFFECT: f64 = 0.1;
/// Whole weeks a trend is read from, at least.
pub const MIN_TREND_WEEKS: usize = 4;

/// The growth of the table's weekly rows (the log rows per week, a Theil-Sen slope over
/// up to [`WEEKS`] whole weeks before `index`), when most week pairs agree on its
/// direction, it is beyond [`THRESHOLD`] standard errors of the weeks' own wobble
/// (`noise`, relative, per day), and it moves a baseline of those weeks by a tenth or
/// more; 0 otherwise. Weekly totals, not one weekday's values: an outage or a holiday
/// moves a week by a seventh, and a level shift is a step whose week pairs disagree.
fn growth_before(values: &[f64], clean: &[bool], index: usize, noise: f64) -> f64 {
    let weeks: Vec<(f64, f64)> = (1..=WEEKS)
        .map_while(|week| index.checked_sub(7 * week).map(|start| (week, start)))
        .filter_map(|(week, start)| {
            let days = start..start + 7;
            let kept: Vec<f64> = days.filter(|&i| clean[i]).map(|i| values[i]).collect();
            // A week mostly left out (an outage, a shift not yet accepted) says nothing.
            (kept.len() >= 5).then(|| {
                (
                    week as f64,
                    7.0 * kept.iter().sum::<f64>() / kept.len() as f64,
                )
            })
        })
        .collect();
    if weeks.len() < MIN_TREND_WEEKS || weeks.iter().any(|(_, rows)| *rows <= 0.0) {
        return 0.0;
    }
    let mut slopes = Vec::new();
    for (i, (wi, ri)) in weeks.iter().enumerate() {
        for (wj, rj) in &weeks[i + 1..] {
            // Weeks back: the later week is fewer weeks back.
            slopes.push((ri.ln() - rj.ln()) / (wj - wi));
        }
    }
    let up = slopes.iter().filter(|s| **s > 0.0).count() as f64;
    let down = slopes.iter().filter(|s| **s < 0.0).count() as f64;
    let agreement = up.max(down) / slopes.len() as f64;
    let slope = super::median(&mut slopes);
    let back: Vec<f64> = weeks.iter().map(|(w, _)| *w).collect();
    let mean_back = back.iter().sum::<f64>() / back.len() as f64;
    let spread_back = back
        .iter()
        .map(|w| (w - mean_back).powi(2))
        .sum::<f64>()
        .sqrt();
    let mut totals: Vec<f64> = weeks.iter().map(|(_, rows)| *rows).collect();
    let week_noise = (noise / 7f64.sqrt()).max(1.0 / super::median(&mut totals).sqrt());
    let significant = slope.abs() > THRESHOLD * week_noise / spread_back;
    let effect = (slope * mean_back).abs();
    if agreement < TREND_AGREEMENT || effect < MIN_TREND_EFFECT || !significant {
        return 0.0;
    }
    slope
}

/// `observed` against [`THRESHOLD`] times `sigma` around `baseline`, the band widened
/// to where counting alone would put fewer than [`TAIL`] of the days: rows counted are
/// a Poisson count, skewed at tens of rows, so no rows on an eleven-row day is out of
/// range while 15 or 25 on a twenty-row day is in.
fn against(observed: f64, baseline: f64, sigma: f64) -> Verdict {
    let (counted_low, counted_high) = counting_bounds(baseline.max(1.0));
    let low = (baseline - THRESHOLD * sigma).min(counted_low).max(0.0);
    let high = (baseline + THRESHOLD * sigma).max(counted_high);
    let score_sigma = sigma.max((baseline + 1.0).sqrt());
    Verdict::banded(
        observed,
        low,
        high,
        baseline,
        Some((observed - baseline) / score_sigma),
    )
}

/// The part of a spread (a standard deviation) that counting noise of `variance` does
/// not explain: [`against`] adds the counting back as it is, a Poisson count.
fn beyond_counting(spread: f64, variance: f64) -> f64 {
    (spread * spread - variance).max(0.0).sqrt()
}

/// How unlikely a day must be to breach: a normal value beyond [`THRESHOLD`] standard
/// deviations on one side.
pub const TAIL: f64 = 3.17e-5;

/// The range a Poisson count of this `mean` stays in but for [`TAIL`] on each side:
/// fewer rows than the first is a breach, more than the second is.
fn counting_bounds(mean: f64) -> (f64, f64) {
    // Beyond a few hundred rows the distribution is normal, and the band's fifth of the
    // baseline is far wider anyway.
    if mean > 400.0 {
        let width = THRESHOLD * mean.sqrt();
        return (mean - width, mean + width);
    }
    let mut count = 0.0;
    let mut probability = (-mean).exp();
    let mut at_most = probability;
    while at_most <= TAIL {
        count += 1.0;
        probability *= mean / count;
        at_most += probability;
    }
    let low = count;
    while 1.0 - at_most > TAIL {
        count += 1.0;
        probability *= mean / count;
        at_most += probability;
    }
    (low, count)
}

/// How many days at each end of a month are its edges, where month-end closes and
/// first-of-the-month batches land: a pattern there may be only hinted at (see
/// [`judge_by_place`]). Any other day of the month (a payroll on the 15th) has a place
/// too, but it must stand out every month.
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
fn judge_dated(seen: &Seen, first: NaiveDate, index: usize) -> Verdict {
    let verdict = judge_by_place(seen, first, index);
    if !seen.holidays.contains(&date_at(first, index)) {
        return verdict;
    }
    let quietest_low = (1..7)
        .filter_map(|back| index.checked_sub(back))
        .filter_map(|at| judge_in(seen, at).expected)
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
fn judge_by_place(seen: &Seen, first: NaiveDate, index: usize) -> Verdict {
    let plain = judge_in(seen, index);
    let (Some(effect), Some((baseline, sigma)), Some(range)) = (
        month_effect(seen, first, index),
        weekday_baseline(seen, index),
        plain.expected,
    ) else {
        return plain;
    };
    let placed = against(
        plain.observed,
        baseline * effect.ratio,
        sigma * effect.ratio,
    );
    if effect.seen {
        return placed;
    }
    // Mid-month a place must stand out every month: a hint there would be any fault's.
    let Some(placed_range) = placed.expected.filter(|_| effect.edge) else {
        return plain;
    };
    // Only hinted at: either the weekday's band or the month's is expected.
    Verdict::banded(
        plain.observed,
        placed_range.low.min(range.low),
        placed_range.high.max(range.high),
        range.baseline,
        plain.score,
    )
}

/// What the prior months say about a place in the month.
struct MonthEffect {
    /// The median ratio of the days there that stood out, to their weekday baseline.
    ratio: f64,
    /// Every month asked, and at least [`MIN_MONTHS`], stood out the same way; else
    /// only some did, and the place may or may not be special.
    seen: bool,
    /// Within [`MONTH_EDGE_DAYS`] of either end of the month.
    edge: bool,
}

/// A day's place in its month: -1 (the last day) to -[`MONTH_EDGE_DAYS`] counting from
/// the end, else its day of the month (the 15th is 15).
fn place_in_month(date: NaiveDate) -> Option<i32> {
    let days_in_month = month_start(date, 1).pred_opt()?.day();
    let from_end = days_in_month - date.day();
    if from_end < MONTH_EDGE_DAYS {
        Some(-(from_end as i32) - 1)
    } else {
        Some(date.day() as i32)
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

/// How the same place in the prior months stood against its own weekday baseline: the
/// median ratio of those beyond the ordinary band, in the direction most of them took.
/// None for a day without a place, or when no month there stood out.
///
/// A month's day says nothing of its place when it was a holiday, or when the same
/// weekday a week before it stood out the same way: that is a level, or an outage,
/// not a place in the month.
fn month_effect(seen: &Seen, first: NaiveDate, index: usize) -> Option<MonthEffect> {
    let date = date_at(first, index);
    let place = place_in_month(date)?;
    let ratio_at = |at: usize| {
        judge_in(seen, at)
            .expected
            .filter(|r| r.baseline > 0.0)
            .map(|r| seen.values[at] / r.baseline)
    };
    let stands_out = |ratio: f64| (ratio - 1.0).abs() > MIN_RELATIVE_WIDTH;
    let mut ratios = Vec::new();
    for back in 1..=MONTHS_ASKED as i32 {
        let earlier = at_place(date, -back, place);
        let Ok(at) = usize::try_from((earlier - first).num_days()) else {
            break;
        };
        if seen.holidays.contains(&earlier) {
            continue;
        }
        let Some(ratio) = ratio_at(at) else {
            continue;
        };
        let week_before = at.checked_sub(7).and_then(ratio_at);
        if stands_out(ratio)
            && week_before
                .is_some_and(|before| stands_out(before) && (before > 1.0) == (ratio > 1.0))
        {
            continue;
        }
        ratios.push(ratio);
    }
    let asked = ratios.len();
    let (mut up, mut down): (Vec<f64>, Vec<f64>) = ratios
        .into_iter()
        .filter(|r| stands_out(*r))
        .partition(|r| *r > 1.0);
    let stood_out = if up.len() >= down.len() {
        &mut up
    } else {
        &mut down
    };
    if stood_out.is_empty() {
        return None;
    }
    Some(MonthEffect {
        edge: place < 0 || place <= MONTH_EDGE_DAYS as i32,
        seen: stood_out.len() == asked && asked >= MIN_MONTHS,
        ratio: super::median(stood_out),
    })
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
/// without forgetting the weekly pattern it learned. A ratio of 0 accepts a level where
/// nothing was expected (a baseline of zero, which no ratio scales): the days before
/// `since` are forgotten, and the baseline learns the new level from its first day.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Restart {
    pub since: NaiveDate,
    pub ratio: f64,
}

impl Restart {
    /// How many days of a series from `first` come before the new level.
    fn days_before(&self, first: NaiveDate, len: usize) -> usize {
        (self.since - first).num_days().clamp(0, len as i64) as usize
    }

    fn forgets(&self) -> bool {
        self.ratio.is_nan() || self.ratio <= 0.0
    }

    fn rescale(&self, values: &mut [f64], first: NaiveDate) {
        if self.forgets() {
            return;
        }
        let before = self.days_before(first, values.len());
        for value in &mut values[..before] {
            *value *= self.ratio;
        }
    }
}

/// Days a table may hold rows on before its loads begin without them being its
/// pattern: a backfill of its history, landed in a day or two.
pub const MAX_BACKFILL_DAYS: usize = 2;
/// Empty days after such a backfill that set it apart from the loads that follow.
pub const MIN_QUIET_DAYS: usize = 7;
/// Days with rows, in the week from a day on, that make that day the start of steady
/// loads (fewer when the series ends sooner: every day there must hold rows).
pub const STEADY_DAYS: usize = 3;

/// The first day of the table's own history: its first day with rows, or, when that
/// was a backfill (rows on at most [`MAX_BACKFILL_DAYS`] days) followed by
/// [`MIN_QUIET_DAYS`] or more empty days, the first day of the steady loads after it.
/// The leading empty days and the lone backfill are not a baseline: against them every
/// day of ordinary loads would be a breach. Only the start is read this way; a table
/// that has loaded steadily and then goes quiet is an outage, judged as one.
fn history_start(values: &[f64]) -> usize {
    let loaded = |i: usize| values[i] > 0.0;
    let Some(first) = (0..values.len()).find(|&i| loaded(i)) else {
        return 0;
    };
    let steady_from = |i: usize| {
        let week = i..(i + 7).min(values.len());
        let needed = STEADY_DAYS.min(week.len());
        week.filter(|&d| loaded(d)).count() >= needed
    };
    let (mut start, mut loaded_days, mut quiet) = (first, 0, 0);
    for i in first..values.len() {
        if !loaded(i) {
            quiet += 1;
            continue;
        }
        if quiet >= MIN_QUIET_DAYS && steady_from(i) {
            (start, loaded_days) = (i, 0);
        }
        quiet = 0;
        loaded_days += 1;
        if loaded_days > MAX_BACKFILL_DAYS {
            break;
        }
    }
    start
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

/// How many recent days the table's own spread is learned from, and how many of them
/// must be clean and judged for it to count.
pub const SPREAD_DAYS: usize = 8 * 7;
pub const MIN_SPREAD_DAYS: usize = 21;

struct Series {
    /// Which days the baselines may learn from.
    clean: Vec<bool>,
    /// Each clean day's rows relative to its baseline, less one (0.1: 10% above), and
    /// the share of that counting alone explains (the variance of a Poisson count
    /// relative to its mean: one over the baseline).
    strayed: Vec<Option<(f64, f64)>>,
    verdicts: Vec<Verdict>,
}

impl Series {
    /// The robust spread of the clean days' relative errors in the [`SPREAD_DAYS`]
    /// before `index`, less what counting explains: one figure per table from dozens
    /// of days, where one weekday's eight values alone can look calm by chance.
    /// `values` as the day at `index` sees them: what it may learn from, how the table
    /// strays and grows.
    fn seen<'a>(&'a self, values: &'a [f64], index: usize, calendar: &Calendar<'a>) -> Seen<'a> {
        let spread = self.spread_before(index);
        Seen {
            values,
            clean: &self.clean,
            spread,
            holidays: calendar.holidays,
            growth: growth_before(values, &self.clean, index, spread),
        }
    }

    fn spread_before(&self, index: usize) -> f64 {
        let (relative, mut counting): (Vec<f64>, Vec<f64>) = self.strayed
            [index.saturating_sub(SPREAD_DAYS)..index]
            .iter()
            .flatten()
            .copied()
            .unzip();
        if relative.len() < MIN_SPREAD_DAYS {
            return 0.0;
        }
        let spread = median_and_spread(&relative).1;
        beyond_counting(spread, super::median(&mut counting))
    }
}

fn judge_series(days: &[f64], first: NaiveDate, calendar: &Calendar) -> Series {
    let mut values = days.to_vec();
    let mut restarts = calendar.restarts.iter().peekable();
    let mut series = Series {
        clean: Vec::with_capacity(days.len()),
        strayed: Vec::with_capacity(days.len()),
        verdicts: Vec::with_capacity(days.len()),
    };
    let start = history_start(days);
    for index in 0..days.len() {
        let date = date_at(first, index);
        while let Some(restart) = restarts.next_if(|r| r.since <= date) {
            restart.rescale(&mut values, first);
            if restart.forgets() {
                for before in 0..restart.days_before(first, index) {
                    series.clean[before] = false;
                    series.strayed[before] = None;
                }
            }
        }
        if index < start {
            // Before the table's loads began: nothing to judge, nothing to learn from.
            series.clean.push(false);
            series.strayed.push(None);
            series.verdicts.push(Verdict::learning(values[index]));
            continue;
        }
        let verdict = judge_dated(&series.seen(&values, index, calendar), first, index);
        let clean = !verdict.kind.is_breach() && !calendar.leaves_out(date);
        series.clean.push(clean);
        series.strayed.push(
            verdict
                .expected
                .filter(|range| clean && range.baseline > 0.0)
                .map(|range| {
                    (
                        verdict.observed / range.baseline - 1.0,
                        1.0 / range.baseline,
                    )
                }),
        );
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
            verdict: judge_dated(&series.seen(&values, today, calendar), first, today),
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

/// The level a person accepts from the breach the newest days end in (`days` oldest
/// first, today so far included): from the first day of that run of breaches in one
/// direction, at the median ratio of its rows to their baselines, or 0 (see
/// [`Restart`]) when every baseline in it was zero. Days when nothing was expected and
/// nothing came neither break nor extend the run. None when the newest days do not
/// breach.
pub fn level_to_accept(days: &[(NaiveDate, Verdict)]) -> Option<(Restart, usize)> {
    let mut kind = None;
    let mut since = None;
    let mut breaches = 0;
    let mut ratios = Vec::new();
    for (date, verdict) in days.iter().rev() {
        if nothing_expected(verdict) {
            continue;
        }
        if !verdict.kind.is_breach() || kind.is_some_and(|k| k != verdict.kind) {
            break;
        }
        kind = Some(verdict.kind);
        since = Some(*date);
        breaches += 1;
        if let Some(range) = verdict.expected.filter(|r| r.baseline > 0.0) {
            ratios.push(verdict.observed / range.baseline);
        }
    }
    let ratio = if ratios.is_empty() {
        0.0
    } else {
        super::median(&mut ratios)
    };
    Some((
        Restart {
            since: since?,
            ratio,
        },
        breaches,
    ))
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
mod tests;
