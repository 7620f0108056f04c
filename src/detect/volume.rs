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
mod tests {
    use super::*;
    use crate::detect::synthetic::{weekly_series, SeriesShape};
    use crate::detect::VerdictKind;

    /// Day 0 of every test series.
    fn monday() -> NaiveDate {
        NaiveDate::from_ymd_opt(2024, 1, 1).unwrap()
    }

    /// One day against its same weekdays alone, every earlier day learned from, as the
    /// detector was before clean baselines, the table's spread and growth: what the
    /// tests compare with.
    fn judge_day(days: &[f64], index: usize) -> Verdict {
        let clean = vec![true; index];
        judge_in(
            &Seen {
                values: days,
                clean: &clean,
                spread: 0.0,
                holidays: &[],
                growth: 0.0,
            },
            index,
        )
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

    /// An old backfill, `quiet` empty days, then `steady` days of ordinary loads.
    fn backfill_then_loads(quiet: usize, steady: usize) -> Vec<f64> {
        let mut days = vec![250_000.0];
        days.extend(std::iter::repeat_n(0.0, quiet));
        days.extend(weekly_series(&SeriesShape {
            days: steady,
            ..shape()
        }));
        days
    }

    #[test]
    fn leading_empty_days_and_a_lone_backfill_are_not_a_baseline() {
        // As a new user's table looked: a backfill 98 days back, weeks of nothing,
        // then five-minute loads for eight weeks. Every day of the loads is ordinary.
        for (quiet, steady) in [(41, 56), (41, 1), (41, 3), (20, 30)] {
            let days = backfill_then_loads(quiet, steady);
            let verdicts = all(&days);
            let flagged: Vec<usize> = (0..days.len())
                .filter(|&i| verdicts[i].kind.is_breach())
                .collect();
            assert!(
                flagged.is_empty(),
                "quiet {quiet}, steady {steady}: {flagged:?}"
            );
            let mut with_today = days.clone();
            with_today.push(days[days.len() - 7]);
            let recent = recent(
                &with_today,
                Some(&with_today),
                monday(),
                &Calendar::default(),
            );
            assert!(recent.shift.is_none(), "{recent:?}");
        }
        // Nothing before the first load either.
        let mut days = vec![0.0; 30];
        days.extend(weekly_series(&shape()));
        assert!(all(&days).iter().all(|v| !v.kind.is_breach()));
    }

    #[test]
    fn a_table_that_loaded_steadily_and_went_quiet_is_still_an_outage() {
        let mut days = weekly_series(&shape());
        for day in &mut days[60..72] {
            *day = 0.0;
        }
        days.extend(weekly_series(&SeriesShape {
            days: 14,
            ..shape()
        }));
        let verdicts = all(&days);
        assert!(
            verdicts[60..72].iter().all(|v| v.kind == VerdictKind::Low),
            "{:?}",
            &verdicts[60..72]
        );
    }

    #[test]
    fn any_breach_can_be_accepted_even_against_a_baseline_of_zero() {
        // A table that never loaded on Saturdays starts to: one Saturday is a breach
        // against nothing, and accepting it makes Saturdays normal from then on.
        let mut days = weekly_series(&SeriesShape {
            days: 70,
            ..shape()
        });
        for (i, day) in days.iter_mut().enumerate() {
            if i % 7 == 5 {
                *day = 0.0;
            }
        }
        days.extend(weekly_series(&SeriesShape { days: 7, ..shape() }));
        let verdicts = all(&days);
        assert_eq!(verdicts[75].kind, VerdictKind::High);
        let judged: Vec<(NaiveDate, Verdict)> = (68..76)
            .map(|i| (date_at(monday(), i), verdicts[i]))
            .collect();
        let (restart, breaches) = level_to_accept(&judged).expect("a breach to accept");
        assert_eq!(
            (restart.since, restart.ratio, breaches),
            (date_at(monday(), 75), 0.0, 1)
        );
        let accepted = [restart];
        let calendar = Calendar {
            restarts: &accepted,
            ..Calendar::default()
        };
        for week in 0..4 {
            days.extend(weekly_series(&SeriesShape { days: 7, ..shape() }));
            let verdicts = judge_all(&days, monday(), &calendar);
            assert!(
                verdicts[76..].iter().all(|v| !v.kind.is_breach()),
                "week {week}: {:?}",
                &verdicts[76..]
            );
        }
        // A one-day breach against a real baseline: that day's ratio is the level.
        let mut days = weekly_series(&shape());
        let last = days.len() - 1;
        days[last] *= 1.5;
        let verdicts = all(&days);
        let judged: Vec<(NaiveDate, Verdict)> = (last - 7..=last)
            .map(|i| (date_at(monday(), i), verdicts[i]))
            .collect();
        let (restart, breaches) = level_to_accept(&judged).unwrap();
        assert_eq!((restart.since, breaches), (date_at(monday(), last), 1));
        assert!((1.3..1.7).contains(&restart.ratio), "{restart:?}");
        assert_eq!(
            level_to_accept(&judged[..7]),
            None,
            "no breach, nothing to accept"
        );
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
        // The day before is an ordinary day, judged against its weekday alone.
        let (before, plain) = (judged(&days, 150, &[]), judge_day(&days, 150));
        assert_eq!(before.kind, VerdictKind::Ok);
        assert_eq!(
            before.expected.map(|r| r.baseline),
            plain.expected.map(|r| r.baseline)
        );
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
    fn a_noisy_table_is_judged_by_its_own_spread_though_one_weekday_looks_calm() {
        // Days wobble by 8%, but the eleven Mondays happened to be flat.
        let mut days = weekly_series(&SeriesShape {
            noise: 0.08,
            ..shape()
        });
        for monday in (0..84).step_by(7) {
            days[monday] = 10_000.0;
        }
        days[77] = 7_700.0;
        // The Mondays alone would say a 23% dip is far out.
        assert_eq!(judge_day(&days, 77).kind, VerdictKind::Low);
        let v = all(&days)[77];
        assert_eq!(v.kind, VerdictKind::Ok, "{v:?}");
        days[77] = 4_000.0;
        assert_eq!(all(&days)[77].kind, VerdictKind::Low);
    }

    #[test]
    fn a_table_growing_a_tenth_a_week_is_followed_and_a_drop_in_it_is_low() {
        // 1.5% more rows a day: eight weeks behind, the median is half again too low.
        let mut days = weekly_series(&SeriesShape {
            days: 112,
            trend_per_week: 0.0,
            ..shape()
        });
        for (i, day) in days.iter_mut().enumerate() {
            *day = (*day * 1.015f64.powi(i as i32)).round();
        }
        let breaches = all(&days)[56..]
            .iter()
            .filter(|v| v.kind.is_breach())
            .count();
        assert_eq!(breaches, 0, "the growth itself alarmed");
        days[110] *= 0.6;
        let v = all(&days)[110];
        assert_eq!(v.kind, VerdictKind::Low, "{v:?}");
    }

    #[test]
    fn a_level_shift_on_a_steadily_growing_table_is_not_taken_for_growth() {
        let mut days = weekly_series(&SeriesShape {
            days: 141,
            trend_per_week: 0.01,
            noise: 0.005,
            ..shape()
        });
        for day in &mut days[70..] {
            *day *= 1.6;
        }
        let verdicts = all(&days);
        let ok: Vec<usize> = (70..141)
            .filter(|&i| !verdicts[i].kind.is_breach())
            .collect();
        assert_eq!(ok, Vec::<usize>::new(), "shift days taken as normal");
    }

    #[test]
    fn a_baseline_of_three_weeks_is_less_sure_than_one_of_eight() {
        // Flat Mondays: a dip of 23% on the fourth is not yet out of range; on the
        // ninth it is.
        let mut days = vec![10_000.0; 64];
        days[21] = 7_700.0;
        days[56] = 7_700.0;
        let verdicts = all(&days);
        assert_eq!(verdicts[21].kind, VerdictKind::Ok, "{:?}", verdicts[21]);
        assert_eq!(verdicts[56].kind, VerdictKind::Low, "{:?}", verdicts[56]);
    }

    #[test]
    fn no_rows_on_an_eleven_row_day_is_low_and_five_is_not() {
        let mut days = vec![11.0; 84];
        days[83] = 5.0;
        assert_eq!(all(&days)[83].kind, VerdictKind::Ok);
        days[83] = 0.0;
        let v = all(&days)[83];
        assert_eq!(v.kind, VerdictKind::Low, "{v:?}");
    }

    #[test]
    fn a_month_end_peak_seen_once_is_expected_and_so_is_an_ordinary_month_end() {
        // From Monday 2024-01-01: only February ended with a peak.
        let mut days = weekly_series(&SeriesShape {
            days: 92,
            ..shape()
        });
        days[59] *= 2.0; // Feb 29
        assert_eq!(all(&days)[59].kind, VerdictKind::High);
        let march_end = 90;
        for factor in [2.0, 1.0] {
            let mut month = days.clone();
            month[march_end] *= factor;
            let v = all(&month)[march_end];
            assert_eq!(v.kind, VerdictKind::Ok, "March 31 at {factor}: {v:?}");
        }
        // Nothing at all is still nothing at all.
        days[march_end] = 0.0;
        assert_eq!(all(&days)[march_end].kind, VerdictKind::Low);
    }

    #[test]
    fn a_holiday_on_the_first_of_a_month_says_nothing_of_the_firsts_after_it() {
        // From Monday 2024-01-01: Easter Monday, 1 April, at a Sunday's volume.
        let mut days = weekly_series(&SeriesShape {
            days: 122,
            ..shape()
        });
        let easter_monday = 91;
        assert_eq!(place_in_month(date_at(monday(), easter_monday)), Some(1));
        days[easter_monday] = days[easter_monday - 1];
        let may_day = 121;
        days[may_day] *= 0.6;
        let v = judged(&days, may_day, &[date_at(monday(), easter_monday)]);
        assert_eq!(v.kind, VerdictKind::Low, "{v:?}");
    }

    #[test]
    fn a_payroll_on_the_fifteenth_every_month_is_expected_and_a_missing_one_is_low() {
        // From Monday 2024-01-01: the 15th of every month at three times the usual.
        let mut days = weekly_series(&SeriesShape {
            days: 152,
            ..shape()
        });
        let fifteenths = [14, 45, 74, 105, 135]; // Jan to May
        for &day in &fifteenths {
            assert_eq!(date_at(monday(), day).day(), 15);
            days[day] *= 3.0;
        }
        let v = all(&days)[135];
        assert_eq!(v.kind, VerdictKind::Ok, "{v:?}");
        days[135] /= 3.0;
        assert_eq!(all(&days)[135].kind, VerdictKind::Low);
        // Seen once, mid-month, it is no pattern yet: the next is high.
        let mut once = weekly_series(&SeriesShape {
            days: 152,
            ..shape()
        });
        once[105] *= 3.0;
        once[135] *= 3.0;
        assert_eq!(all(&once)[135].kind, VerdictKind::High);
    }

    #[test]
    fn places_in_the_month_count_from_either_end() {
        let place = |y, m, d| place_in_month(NaiveDate::from_ymd_opt(y, m, d).unwrap());
        assert_eq!(place(2024, 2, 29), Some(-1));
        assert_eq!(place(2024, 2, 27), Some(-3));
        assert_eq!(place(2024, 2, 26), Some(26));
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
