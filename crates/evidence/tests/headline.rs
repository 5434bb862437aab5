//! Headline comparison of two artifacts.

use crate::common::{anvil_tiny, reference};
use anvil_evidence::run_to_run::{RunSpread, SpreadSource, Spreads};
use anvil_evidence::{CompareOptions, Verdict, compare_artifacts};

const METRICS: [&str; 9] = [
    "throughput_tok_s",
    "ttft_p50_ms",
    "ttft_p95_ms",
    "tpot_p50_ms",
    "tpot_p95_ms",
    "e2e_p50_ms",
    "e2e_p95_ms",
    "decode_tok_s_mean",
    "request_canary_passed",
];

#[test]
fn reference_against_itself() {
    let rows = compare_artifacts(&reference(), &reference(), &CompareOptions::default());
    let names: Vec<&str> = rows.iter().map(|r| r.metric.as_str()).collect();
    assert_eq!(names, METRICS);
    for r in &rows {
        assert_ne!(r.verdict, Verdict::Differs, "{r:?}");
        println!(
            "{:24} {:?} a={:?} ci=[{:?}, {:?}] {}",
            r.metric, r.verdict, r.a, r.ci_low, r.ci_high, r.reason
        );
    }
    let row = |m: &str| rows.iter().find(|r| r.metric == m).unwrap();
    // One run per side: no spread, so never reproduced.
    assert_eq!(row("throughput_tok_s").verdict, Verdict::Inconclusive);
    // (serde_json's default float parser may land 1 ulp off the literal.)
    assert!((row("throughput_tok_s").a.unwrap() - 96.44826342193059).abs() < 1e-12);
    // 12 samples cannot carry a p95 (needs 40).
    assert_eq!(row("ttft_p95_ms").verdict, Verdict::Inconclusive);
    assert!((row("ttft_p50_ms").a.unwrap() - 3116.5836000000127).abs() < 1e-9);
    assert_eq!((row("ttft_p50_ms").n_a, row("ttft_p50_ms").n_b), (12, 12));
    // One run a side and no stated spread: within-run intervals only, so
    // never reproduced either (a rerun may differ by more than they show).
    assert_eq!(row("decode_tok_s_mean").verdict, Verdict::Inconclusive);
    assert!(
        row("decode_tok_s_mean").reason.contains("no run-to-run spread stated"),
        "{:?}",
        row("decode_tok_s_mean")
    );
    assert_eq!(row("request_canary_passed").verdict, Verdict::Reproduced);
}

/// A spread of `sigma` stated for every headline metric.
fn stated(sigma: f64) -> Spreads {
    METRICS
        .iter()
        .map(|m| (m.to_string(), RunSpread { sigma, from: SpreadSource::Declared, repeats: None }))
        .collect()
}

#[test]
fn doubled_ttft_differs() {
    let mut b = reference();
    for r in b["request_timings"].as_array_mut().unwrap() {
        let v = r["ttft_ms"].as_f64().unwrap();
        r["ttft_ms"] = (2.0 * v).into();
    }
    b["metrics"]["request_canary_passed"] = 11.into();
    // Measured once a side with no stated spread: the doubling shows, but
    // nothing says how far runs differ, so it is not called.
    let rows = compare_artifacts(&reference(), &b, &CompareOptions::default());
    let row = |m: &str| rows.iter().find(|r| r.metric == m).unwrap();
    assert_eq!(row("ttft_p50_ms").verdict, Verdict::Inconclusive, "{:?}", row("ttft_p50_ms"));
    assert!(row("ttft_p50_ms").ci_low.unwrap() > 1.1, "{:?}", row("ttft_p50_ms"));
    assert_eq!(row("request_canary_passed").verdict, Verdict::Differs);
    // Against a stated 5% spread between runs it differs; E2E barely moved.
    let options = CompareOptions { run_to_run: stated(0.05), ..CompareOptions::default() };
    let rows = compare_artifacts(&reference(), &b, &options);
    let row = |m: &str| rows.iter().find(|r| r.metric == m).unwrap();
    assert_eq!(row("ttft_p50_ms").verdict, Verdict::Differs, "{:?}", row("ttft_p50_ms"));
    assert_ne!(row("e2e_p50_ms").verdict, Verdict::Differs);
}

#[test]
fn repeats_give_throughput_a_spread() {
    let rows = compare_artifacts(&anvil_tiny(), &anvil_tiny(), &CompareOptions::default());
    let tput = &rows[0];
    assert_eq!((tput.n_a, tput.n_b), (2, 2));
    assert_eq!(tput.verdict, Verdict::Reproduced, "{tput:?}");
    assert!(tput.method.contains("Welch"));
    // Only eligible requests are samples (the fixture has 13 of 20).
    assert_eq!(rows[1].n_a, 13);
}
