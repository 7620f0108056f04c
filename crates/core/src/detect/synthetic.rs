//! Generated daily series for the detector tests, and the random source the labelled
//! benchmark ([`super::labelled`]) draws from. Deterministic from a seed, so a failing
//! case can be replayed.

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

    /// Uniform in 0..n; n must be at least 1.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(1e-12);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// A Poisson count with the given mean: rows that arrive independently of each other,
    /// so a 20-row day wobbles by about 4.5 rows and a million-row day by 0.1%.
    pub fn poisson(&mut self, mean: f64) -> f64 {
        if mean <= 0.0 {
            return 0.0;
        }
        // Multiplying uniforms until the product falls below e^-mean is exact but takes
        // about `mean` draws; past a few dozen the normal approximation is as good.
        if mean > 30.0 {
            return (mean + mean.sqrt() * self.normal()).round().max(0.0);
        }
        let limit = (-mean).exp();
        let mut count = 0.0;
        let mut product = self.unit();
        while product > limit {
            count += 1.0;
            product *= self.unit();
        }
        count
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
    let mut rng = Rng::new(shape.seed);
    (0..shape.days)
        .map(|day| {
            let weekend = day % 7 >= 5;
            let factor = if weekend { shape.weekend_factor } else { 1.0 };
            let trend = 1.0 + shape.trend_per_week * day as f64 / 7.0;
            let expected = shape.level * factor * trend;
            (expected * (1.0 + shape.noise * rng.normal()))
                .max(0.0)
                .round()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_counts_have_their_mean_and_spread() {
        let mut rng = Rng::new(3);
        for mean in [4.0, 20.0, 500.0] {
            let draws: Vec<f64> = (0..20_000).map(|_| rng.poisson(mean)).collect();
            let average = draws.iter().sum::<f64>() / draws.len() as f64;
            let variance =
                draws.iter().map(|d| (d - average).powi(2)).sum::<f64>() / draws.len() as f64;
            assert!((average - mean).abs() < 0.03 * mean, "{mean}: {average}");
            assert!((variance - mean).abs() < 0.1 * mean, "{mean}: {variance}");
            assert!(draws.iter().all(|d| *d >= 0.0 && d.fract() == 0.0));
        }
    }
}
