//! The published reference cell re-derives exactly, and any single edited
//! figure is reported at its own path.

use crate::common::{at, every_checked, perturb, reference};
use anvil_evidence::rederive;
use serde_json::json;

#[test]
fn reference_verifies_clean() {
    let report = rederive(&reference()).unwrap();
    assert!(report.is_clean(), "{:#?}", report.mismatches);
    println!("{}", report.summary());
    assert!(report.fields_checked() >= 290, "{}", report.summary());
    for path in [
        "metrics.ttft_p50_ms",
        "metrics.e2e_mean_ci95_high_ms",
        "metrics.throughput_tok_s",
        "metrics.tpot_samples",
        "metrics.request_canary_passed",
        "metric_population.p99_samples_by_metric.ttft",
        "request_timings[11].decode_tok_s",
        "request_timings[0].request_canary.marker",
        "started_at",
    ] {
        assert!(report.was_checked(path), "{path} not checked");
    }
    // What the reference does not let anyone re-derive, with reasons.
    let unchecked: Vec<&str> = report.unchecked.iter().map(|u| u.path.as_str()).collect();
    assert_eq!(
        unchecked,
        [
            "wall_clock_ms",
            "responses_received",
            "failures",
            "metrics.prefix_cache_hit_avg",
            "metrics.content_chunks_s",
            "metric_population.failure_policy"
        ]
    );
    assert!(report.unchecked.iter().all(|u| !u.reason.is_empty()));
}

#[test]
fn named_single_edits_are_reported_at_their_path() {
    for path in [
        "metrics.ttft_p50_ms",
        "metrics.e2e_mean_ci95_low_ms",
        "metrics.throughput_tok_s",
        "metrics.decode_tok_s_samples",
        "metrics.completion_tokens_stddev",
        "metric_population.performance_eligible_requests",
        "completed",
    ] {
        let mut a = reference();
        perturb(at(&mut a, path));
        let report = rederive(&a).unwrap();
        let paths: Vec<&str> = report.mismatches.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, [path]);
    }
}

#[test]
fn every_checked_field_catches_its_own_edit() {
    let base = reference();
    let checked = every_checked(&rederive(&base).unwrap(), &base);
    for path in &checked {
        let mut a = base.clone();
        perturb(at(&mut a, path));
        let report = rederive(&a).unwrap();
        assert!(report.mismatch(path).is_some(), "edit of {path} not reported: {:?}", report.mismatches);
        if !path.starts_with("request_timings") {
            assert_eq!(report.mismatches.len(), 1, "{path}: {:?}", report.mismatches);
        }
    }
}

#[test]
fn a_raw_per_request_edit_breaks_the_statistics_it_feeds() {
    let mut a = reference();
    *at(&mut a, "request_timings[3].ttft_ms") = json!(5000.0);
    let report = rederive(&a).unwrap();
    for path in ["request_timings[3].visible_generation_ms", "metrics.ttft_mean_ms", "metrics.ttft_max_ms"] {
        assert!(report.mismatch(path).is_some(), "{path}: {:?}", report.mismatches);
    }
    let max = report.mismatch("metrics.ttft_max_ms").unwrap();
    assert_eq!((max.stored.clone(), max.derived.clone()), (json!(3466.7708999986644), json!(5000.0)));
    // A derived per-request value edited alone: its own path and the distribution over it.
    let mut a = reference();
    perturb(at(&mut a, "request_timings[5].tpot_ms"));
    let report = rederive(&a).unwrap();
    assert!(report.mismatch("request_timings[5].tpot_ms").is_some());
    assert!(report.mismatch("metrics.tpot_mean_ms").is_some());
    assert!(report.mismatch("request_timings[5].mean_time_per_output_token_ms").is_none());
}

#[test]
fn excluded_requests_leave_the_distributions() {
    // Listing a request as failed without recomputing: every count over
    // eligible requests must now disagree.
    let mut a = reference();
    a["failures"] = json!([{"request_index": 4, "class": "http_status", "detail": "HTTP 500"}]);
    let report = rederive(&a).unwrap();
    for path in
        ["completed", "failed", "metrics.ttft_samples", "metrics.output_tokens", "performance_eligible"]
    {
        assert!(report.mismatch(path).is_some(), "{path}");
    }
    assert_eq!(report.mismatch("metrics.ttft_samples").unwrap().derived, json!(11));
    assert_eq!(report.mismatch("metric_population.successful_requests").unwrap().derived, json!(11));
    // A failed canary is a contract violation: excluded, but still a response.
    let mut a = reference();
    *at(&mut a, "request_timings[2].request_canary.passed") = json!(false);
    *at(&mut a, "request_timings[2].request_canary.foreign_marker_count") = json!(1);
    let report = rederive(&a).unwrap();
    assert!(report.mismatch("request_timings[2].request_canary.passed").is_none());
    assert_eq!(report.mismatch("metrics.request_canary_passed").unwrap().derived, json!(11));
    assert_eq!(
        report.mismatch("metric_population.performance_eligible_requests").unwrap().derived,
        json!(11)
    );
    assert!(report.mismatch("metric_population.successful_requests").is_none());
}
