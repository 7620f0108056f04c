//! Generated daily series with known anomalies: the detector tests and the labelled
//! benchmark use them. Deterministic from a seed, so a failing case can be replayed.

/// A small deterministic random source (SplitMix64). Statistical quality is ample for
/// making noise; no cryptographic use.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn between(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(1e-12);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

#[derive(Debug, Clone)]
pub struct SeriesShape {
    pub days: usize,
    /// Rows on an ordinary weekday at the start.
    pub level: f64,
    /// Saturday and Sunday as a share of a weekday.
    pub weekend_factor: f64,
    /// Relative day-to-day noise (standard deviation as a share of the day's level).
    pub noise: f64,
    /// Growth per week as a share of the starting level (0.02 = +2% a week).
    pub trend_per_week: f64,
    pub seed: u64,
}

/// A clean daily series with weekly seasonality; day 0 is a Monday.
pub fn weekly_series(shape: &SeriesShape) -> Vec<f64> {
    let factors = [
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        shape.weekend_factor,
        shape.weekend_factor,
    ];
    series_with_factors(shape, &factors)
}

fn series_with_factors(shape: &SeriesShape, factors: &[f64; 7]) -> Vec<f64> {
    let mut rng = Rng::new(shape.seed);
    (0..shape.days)
        .map(|day| {
            let trend = 1.0 + shape.trend_per_week * day as f64 / 7.0;
            let expected = shape.level * factors[day % 7] * trend;
            (expected * (1.0 + shape.noise * rng.normal()))
                .max(0.0)
                .round()
        })
        .collect()
}

/// One labelled series: `anomalous[i]` says whether day `i` was tampered with.
#[derive(Debug, Clone)]
pub struct LabelledSeries {
    pub name: String,
    pub days: Vec<f64>,
    pub anomalous: Vec<bool>,
}

/// The first day anomalies are injected on: both detectors have had time to learn.
pub const FIRST_LABELLED_DAY: usize = 70;

/// `count` series of `days` days with varied levels, weekly shapes, noise and trends,
/// and a handful of injected anomalies each: drops, spikes, a zero day, a partial day.
pub fn labelled_series(count: usize, days: usize, seed: u64) -> Vec<LabelledSeries> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|n| {
            let shape = SeriesShape {
                days,
                level: 10f64.powf(rng.between(1.7, 5.0)),
                weekend_factor: rng.between(0.2, 1.0),
                noise: rng.between(0.02, 0.12),
                trend_per_week: rng.between(-0.01, 0.03),
                seed: rng.next_u64(),
            };
            // Every third series has a shape of its own across the week, not just a
            // weekday/weekend split.
            let mut factors = [
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                shape.weekend_factor,
                shape.weekend_factor,
            ];
            if n % 3 == 2 {
                for f in &mut factors {
                    *f = rng.between(0.3, 1.4);
                }
            }
            let mut values = series_with_factors(&shape, &factors);
            let mut anomalous = vec![false; days];
            let mut day = FIRST_LABELLED_DAY + (rng.unit() * 10.0) as usize;
            while day < days {
                let factor = match (rng.unit() * 5.0) as usize {
                    0 => rng.between(0.25, 0.6), // a lost share of a load
                    1 => 0.58,                   // a stream stalled mid-afternoon
                    2 => 0.0,                    // nothing landed
                    3 => rng.between(1.8, 3.0),  // a double load
                    _ => rng.between(1.5, 2.2),  // a replay
                };
                values[day] = (values[day] * factor).round();
                anomalous[day] = true;
                day += 12 + (rng.unit() * 20.0) as usize;
            }
            LabelledSeries {
                name: format!("series_{n:02}"),
                days: values,
                anomalous,
            }
        })
        .collect()
}

/// Precision, recall and F1 of a detector's flags against the labels.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Score {
    pub true_positives: usize,
    pub false_positives: usize,
    pub false_negatives: usize,
}

impl Score {
    pub fn add(&mut self, flagged: bool, anomalous: bool) {
        match (flagged, anomalous) {
            (true, true) => self.true_positives += 1,
            (true, false) => self.false_positives += 1,
            (false, true) => self.false_negatives += 1,
            (false, false) => {}
        }
    }

    pub fn precision(&self) -> f64 {
        ratio(
            self.true_positives,
            self.true_positives + self.false_positives,
        )
    }

    pub fn recall(&self) -> f64 {
        ratio(
            self.true_positives,
            self.true_positives + self.false_negatives,
        )
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
    fn generation_is_deterministic_and_labelled() {
        let a = labelled_series(20, 180, 1);
        let b = labelled_series(20, 180, 1);
        assert_eq!(a.len(), 20);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.days, y.days);
            assert!(x.anomalous.iter().any(|&l| l));
            assert!(!x.anomalous[..FIRST_LABELLED_DAY].iter().any(|&l| l));
        }
    }
}
