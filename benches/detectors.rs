//! The labelled benchmark: generated daily series with injected anomalies, judged by
//! our volume detector and by a reference that follows Elementary's defaults. Prints
//! precision, recall and F1 of each. Run with `cargo bench --bench detectors`.

use dataward::detect::synthetic::{labelled_series, Score, FIRST_LABELLED_DAY};
use dataward::detect::{reference, volume, Verdict};

const SERIES: usize = 40;
const DAYS: usize = 182;
const SEED: u64 = 20_240_511;

fn score(
    series: &[dataward::detect::synthetic::LabelledSeries],
    judge: fn(&[f64], usize) -> Verdict,
) -> Score {
    let mut score = Score::default();
    for s in series {
        for day in FIRST_LABELLED_DAY..s.days.len() {
            score.add(judge(&s.days, day).kind.is_breach(), s.anomalous[day]);
        }
    }
    score
}

fn main() {
    let series = labelled_series(SERIES, DAYS, SEED);
    let labelled: usize = series
        .iter()
        .map(|s| s.anomalous.iter().filter(|&&a| a).count())
        .sum();
    let judged = series.len() * (DAYS - FIRST_LABELLED_DAY);
    println!(
        "labelled benchmark: {SERIES} series x {DAYS} days (seed {SEED}); {judged} days judged, {labelled} anomalous"
    );
    println!(
        "{:<34} {:>9} {:>7} {:>7} {:>5} {:>5} {:>5}",
        "detector", "precision", "recall", "F1", "TP", "FP", "FN"
    );
    let ours = score(&series, volume::judge_day);
    let elementary = score(&series, reference::judge_day);
    for (name, s) in [
        ("dataward volume (median/MAD)", ours),
        ("reference (Elementary defaults)", elementary),
    ] {
        println!(
            "{name:<34} {:>9.3} {:>7.3} {:>7.3} {:>5} {:>5} {:>5}",
            s.precision(),
            s.recall(),
            s.f1(),
            s.true_positives,
            s.false_positives,
            s.false_negatives
        );
    }
    println!(
        "F1 difference: {:+.3} (aim: at least +0.100)",
        ours.f1() - elementary.f1()
    );
}
