//! Accuracy with its exact interval.

use serde::Serialize;

/// The share of items answered right, with its two-sided Clopper–Pearson
/// interval at `level`: over repeated measurements of the same model on
/// items drawn from the same pool, the interval holds the true accuracy
/// at least `level` of the time, whatever that accuracy and `n` (it is
/// exact, hence conservative: its coverage is never below `level`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Accuracy {
    pub correct: u64,
    pub n: u64,
    /// `correct / n`; NaN when `n` is 0.
    pub share: f64,
    pub low: f64,
    pub high: f64,
    pub level: f64,
}

/// The accuracy of scored outcomes (`true`: right). With no outcome, the
/// share is NaN and the interval [0, 1].
///
/// # Panics
/// When `level` is not strictly between 0 and 1.
pub fn accuracy(outcomes: &[bool], level: f64) -> Accuracy {
    let n = outcomes.len() as u64;
    let correct = outcomes.iter().filter(|&&right| right).count() as u64;
    let (low, high) = share_interval(correct, n, level);
    Accuracy { correct, n, share: correct as f64 / n as f64, low, high, level }
}

/// The Clopper–Pearson interval of `k` of `n` at `level`
/// (`anvil_evidence::binomial`), [0, 1] when `n` is 0.
///
/// # Panics
/// When `level` is not strictly between 0 and 1, or `k > n`.
pub fn share_interval(k: u64, n: u64, level: f64) -> (f64, f64) {
    assert!(level > 0.0 && level < 1.0, "a level strictly between 0 and 1, not {level}");
    assert!(k <= n, "{k} of {n}");
    if n == 0 { (0.0, 1.0) } else { anvil_evidence::binomial::clopper_pearson(k, n, level) }
}

#[cfg(test)]
mod tests {
    use super::accuracy;

    #[test]
    fn counts_and_interval() {
        let a = accuracy(&[true, false, true, true, false, true, false, true, false, false], 0.95);
        assert_eq!((a.correct, a.n), (5, 10));
        assert_eq!(a.share, 0.5);
        // Clopper–Pearson tables: 5 of 10 at 95%: [0.1871, 0.8129].
        assert!((a.low - 0.1871).abs() < 1e-4 && (a.high - 0.8129).abs() < 1e-4, "{a:?}");
        let none = accuracy(&[], 0.95);
        assert!(none.share.is_nan());
        assert_eq!((none.low, none.high), (0.0, 1.0));
        let all = accuracy(&[true; 20], 0.9);
        assert_eq!((all.share, all.high), (1.0, 1.0));
        assert!(all.low > 0.85 && all.low < 0.9, "{all:?}");
    }
}
