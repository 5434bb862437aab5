//! The accuracy interval tested as a statistic: over seeded simulated
//! runs of a model with a known accuracy, how often its Clopper–Pearson
//! interval holds that accuracy (at least its level: the interval is
//! exact), against the coverage computed exactly for the same accuracy
//! and number of items.

use anvil_quality::accuracy;

use crate::sim::{Rng, binomial_pmf, rate};

const LEVEL: f64 = 0.95;

/// The exact coverage of the interval for `n` items of accuracy `p`: the
/// chance, summed over every count of right answers, that the interval
/// of that count holds `p`.
fn exact_coverage(p: f64, n: u64) -> f64 {
    let pmf = binomial_pmf(n, p);
    (0..=n)
        .filter(|&k| {
            let outcomes: Vec<bool> = (0..n).map(|i| i < k).collect();
            let a = accuracy(&outcomes, LEVEL);
            a.low <= p && p <= a.high
        })
        .map(|k| pmf[k as usize])
        .sum()
}

#[test]
fn accuracy_interval_covers_at_least_its_level() {
    let mut rng = Rng::new(50_010);
    let (mut covered_all, mut trials_all) = (0, 0);
    for (p, n, trials) in
        [(0.05, 50, 1500), (0.3, 200, 1500), (0.6, 200, 1500), (0.97, 100, 1500), (0.5, 20, 1500)]
    {
        let exact = exact_coverage(p, n);
        assert!(exact >= LEVEL, "accuracy {p} on {n} items: exact coverage {exact}");
        let mut covered = 0;
        for _ in 0..trials {
            let outcomes: Vec<bool> = (0..n).map(|_| rng.chance(p)).collect();
            let a = accuracy(&outcomes, LEVEL);
            covered += u64::from(a.low <= p && p <= a.high);
        }
        let measured =
            rate(&format!("coverage at accuracy {p}, {n} items (exact {exact:.4})"), covered, trials);
        assert!(measured.low <= exact && exact <= measured.high, "{measured:?} against exact {exact}");
        assert!(measured.high >= LEVEL, "{measured:?} is below {LEVEL}");
        covered_all += covered;
        trials_all += trials;
    }
    let pooled = rate("coverage, pooled", covered_all, trials_all);
    assert!(pooled.low >= LEVEL, "pooled coverage {pooled:?} not shown at least {LEVEL}");
}
