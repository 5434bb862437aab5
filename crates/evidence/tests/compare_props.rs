//! Properties of the noise-aware comparison.

use anvil_evidence::bootstrap::SplitMix64;
use anvil_evidence::{CompareOptions, Statistic, Verdict, compare_repeats, compare_samples};
use proptest::prelude::*;

/// Values within 9% of each other: any ratio of two of them lies in
/// [100/109, 109/100] ⊂ [0.9, 1.1], so every bootstrap ratio does too.
fn tight(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(100.0f64..109.0, n)
}

fn stat_for(n: usize, pick: u8) -> Statistic {
    match pick % 3 {
        0 => Statistic::Percentile(50),
        1 => Statistic::Mean,
        _ if n >= 40 => Statistic::Percentile(95),
        _ => Statistic::Percentile(50),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn identical_samples_are_reproduced(a in tight(8..120), pick in any::<u8>(), seed in any::<u64>()) {
        let opts = CompareOptions { seed, resamples: 400, ..CompareOptions::default() };
        let mut b = a.clone();
        b.reverse();
        let stat = stat_for(a.len(), pick);
        let row = compare_samples("ttft_ms", stat, &a, &b, &opts);
        prop_assert_eq!(row.verdict, Verdict::Reproduced, "{:?}", row);
        prop_assert!(row.relative_delta.unwrap().abs() < 1e-12);
        prop_assert!(row.ci_low.unwrap() <= 1.0 && row.ci_high.unwrap() >= 1.0);
    }

    #[test]
    fn doubled_samples_differ(a in tight(8..120), pick in any::<u8>(), seed in any::<u64>()) {
        let opts = CompareOptions { seed, resamples: 400, ..CompareOptions::default() };
        let b: Vec<f64> = a.iter().map(|v| 2.0 * v).collect();
        let row = compare_samples("ttft_ms", stat_for(a.len(), pick), &a, &b, &opts);
        prop_assert_eq!(row.verdict, Verdict::Differs, "{:?}", row);
        prop_assert!((row.relative_delta.unwrap() - 1.0).abs() < 1e-12);
        prop_assert!(row.ci_low.unwrap() > 1.1);
    }

    #[test]
    fn tiny_samples_are_inconclusive(a in tight(1..8), b in tight(1..200), swap in any::<bool>()) {
        let (a, b) = if swap { (b, a) } else { (a, b) };
        let row = compare_samples("ttft_ms", Statistic::Percentile(50), &a, &b, &CompareOptions::default());
        prop_assert_eq!(row.verdict, Verdict::Inconclusive);
        prop_assert_eq!((row.ci_low, row.ci_high), (None, None));
        prop_assert_eq!((row.n_a, row.n_b), (a.len(), b.len()));
    }

    #[test]
    fn deterministic_for_a_seed(
        a in prop::collection::vec(1.0f64..1000.0, 8..80),
        b in prop::collection::vec(1.0f64..1000.0, 8..80),
        seed in any::<u64>(),
    ) {
        let opts = CompareOptions { seed, resamples: 300, ..CompareOptions::default() };
        let first = compare_samples("e2e_ms", Statistic::Percentile(50), &a, &b, &opts);
        let again = compare_samples("e2e_ms", Statistic::Percentile(50), &a, &b, &opts);
        prop_assert_eq!(&first, &again);
        let r1 = compare_repeats("tok_s", &a[..3], &b[..2], &opts);
        prop_assert_eq!(r1, compare_repeats("tok_s", &a[..3], &b[..2], &opts));
    }

    /// One run a side and no stated spread: nothing says how far runs
    /// differ, so neither answer is given, however far apart they are.
    #[test]
    fn one_run_per_side_without_a_spread_is_inconclusive(a in 1.0f64..1e4, b in 1.0f64..1e4) {
        let row = compare_repeats("throughput_tok_s", &[a], &[b], &CompareOptions::default());
        prop_assert_eq!(row.verdict, Verdict::Inconclusive);
    }
}

fn uniform(rng: &mut SplitMix64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|_| lo + (hi - lo) * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64).collect()
}

#[test]
fn noisy_small_samples_are_inconclusive() {
    let mut rng = SplitMix64::new(42);
    let (a, b) = (uniform(&mut rng, 10, 50.0, 500.0), uniform(&mut rng, 10, 50.0, 500.0));
    let row = compare_samples("ttft_ms", Statistic::Percentile(50), &a, &b, &CompareOptions::default());
    assert_eq!(row.verdict, Verdict::Inconclusive, "{row:?}");
    assert!(row.ci_high.unwrap() - row.ci_low.unwrap() > 0.5, "{row:?}");
    // The same spread with many samples narrows enough to decide.
    let (a, b) = (uniform(&mut rng, 4000, 90.0, 110.0), uniform(&mut rng, 4000, 90.0, 110.0));
    let row = compare_samples("ttft_ms", Statistic::Percentile(50), &a, &b, &CompareOptions::default());
    assert_eq!(row.verdict, Verdict::Reproduced, "{row:?}");
}

#[test]
fn a_shift_that_reaches_into_the_band_is_inconclusive() {
    // B is 8% slower than A with little noise: the CI excludes 1 but lies
    // partly inside the ±10% band, so no verdict either way.
    let mut rng = SplitMix64::new(3);
    let a = uniform(&mut rng, 400, 99.0, 101.0);
    let b: Vec<f64> = uniform(&mut rng, 400, 99.0, 101.0).iter().map(|v| v * 1.10).collect();
    let row = compare_samples("ttft_ms", Statistic::Percentile(50), &a, &b, &CompareOptions::default());
    assert!(row.ci_low.unwrap() > 1.0, "{row:?}");
    assert_eq!(row.verdict, Verdict::Inconclusive, "{row:?}");
    let strict = CompareOptions { threshold: 0.05, ..CompareOptions::default() };
    let row = compare_samples("ttft_ms", Statistic::Percentile(50), &a, &b, &strict);
    assert_eq!(row.verdict, Verdict::Differs, "{row:?}");
}

#[test]
fn serializes_with_lowercase_verdicts() {
    let row = compare_repeats("throughput_tok_s", &[100.0], &[100.0], &CompareOptions::default());
    let v = serde_json::to_value(&row).unwrap();
    assert_eq!(v["verdict"], "inconclusive");
    assert_eq!(v["metric"], "throughput_tok_s");
    assert!(v["reason"].as_str().unwrap().contains("no run-to-run spread stated"), "{v}");
}
