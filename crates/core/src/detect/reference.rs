//! The reference detector the labelled benchmark compares against. It follows
//! Elementary's volume-anomaly defaults: mean and standard deviation of the last 14
//! same-weekday values, a z-score threshold of 3, and the tested value included in its
//! own training set. It is here to be measured against, not used by the monitors.

use super::Verdict;

pub const TRAINING_VALUES: usize = 14;
pub const THRESHOLD: f64 = 3.0;
/// Elementary refuses to judge with too small a training set.
pub const MIN_TRAINING: usize = 7;

pub fn judge_day(days: &[f64], index: usize) -> Verdict {
    let observed = days[index];
    // The tested day and up to 13 same-weekday values before it.
    let training: Vec<f64> = (0..TRAINING_VALUES)
        .filter_map(|week| index.checked_sub(7 * week))
        .map(|i| days[i])
        .collect();
    if training.len() < MIN_TRAINING {
        return Verdict::learning(observed);
    }
    let n = training.len() as f64;
    let mean = training.iter().sum::<f64>() / n;
    let variance = training.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let sd = variance.sqrt();
    let low = mean - THRESHOLD * sd;
    let high = mean + THRESHOLD * sd;
    Verdict::banded(
        observed,
        low,
        high,
        mean,
        (sd > 0.0).then(|| (observed - mean) / sd),
    )
}
