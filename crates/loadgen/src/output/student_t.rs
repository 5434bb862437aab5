//! Critical values of two-sided intervals: the protocol's 95% ones (a
//! table and 1.96, as published cells re-derive them), and any other level
//! (a stopping rule spends its 5% over several looks), from `statrs`.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The protocol's normal-approximation factor: the reference defines the
/// 95% CI of the mean as mean ± 1.96·sd/√n, and published cells re-derive
/// with exactly 1.96 (not the quantile 1.95996…).
pub const Z95: f64 = 1.96;

/// Two-sided 95% Student-t critical value for `df` degrees of freedom, for
/// CIs across a handful of repeats where the normal approximation is too narrow.
pub fn t95(df: usize) -> Option<f64> {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042,
    ];
    match df {
        0 => None,
        1..=30 => Some(TABLE[df - 1]),
        // The Cornish-Fisher expansion of the t quantile around the normal
        // one: within 1e-4 of the exact value from 31 degrees of freedom on
        // (the normal value alone made 32-repeat CIs about 4% too narrow).
        _ => {
            let (z, n) = (Z95, df as f64);
            let (z3, z5) = (z.powi(3), z.powi(5));
            Some(z + (z3 + z) / (4.0 * n) + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n))
        }
    }
}

/// A two-sided confidence level: 0.95 for the protocol's intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    pub confidence: f64,
}

impl Level {
    pub const NINETY_FIVE: Level = Level { confidence: 0.95 };

    /// The probability left in each tail.
    pub fn tail(self) -> f64 {
        (1.0 - self.confidence) / 2.0
    }

    fn is_95(self) -> bool {
        (self.confidence - 0.95).abs() < 1e-12
    }

    /// The normal critical value (exactly 1.96 at 95%, as the protocol has it).
    pub fn z(self) -> f64 {
        if self.is_95() {
            return Z95;
        }
        Normal::standard().inverse_cdf(1.0 - self.tail())
    }

    /// The Student-t critical value for `df` degrees of freedom (`None` at 0).
    pub fn t(self, df: usize) -> Option<f64> {
        if self.is_95() || df == 0 {
            return t95(df);
        }
        let t = StudentsT::new(0.0, 1.0, df as f64).ok()?;
        Some(t.inverse_cdf(1.0 - self.tail()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_levels_follow_the_exact_quantiles() {
        // R: qnorm(0.995), qt(0.995, 9), qt(0.99583333, 29).
        let l99 = Level { confidence: 0.99 };
        assert!((l99.z() - 2.575829).abs() < 1e-5);
        assert!((l99.t(9).unwrap() - 3.249836).abs() < 1e-4);
        let spent = Level { confidence: 1.0 - 0.05 / 6.0 };
        assert!(spent.t(29).unwrap() > l99.t(29).unwrap() && spent.z() > l99.z());
        assert_eq!(Level::NINETY_FIVE.z(), Z95);
        assert_eq!(Level::NINETY_FIVE.t(9), t95(9));
    }

    #[test]
    fn t95_follows_student_t_past_the_table() {
        // Exact two-sided 95% values (R: qt(0.975, df)).
        for (df, exact) in [(31, 2.039513), (40, 2.021075), (60, 2.000298), (120, 1.979930), (1000, 1.962339)]
        {
            let t = t95(df).unwrap();
            assert!((t - exact).abs() < 2e-4, "df {df}: {t} vs {exact}");
        }
        assert!(t95(30).unwrap() > t95(31).unwrap(), "the table and the expansion meet in order");
    }
}
