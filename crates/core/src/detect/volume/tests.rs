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
