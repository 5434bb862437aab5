//! The capacity-v4 protocol, checked on a stored cell artifact: every key
//! of the reference artifact is there, and the numbers follow the
//! definitions on every performance-eligible record.

use std::collections::BTreeSet;

use serde_json::Value;

const REFERENCE: &str = include_str!("../fixtures/reference/benchmark-v1.example.json");

fn keys(value: &Value) -> BTreeSet<String> {
    value.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

fn number(value: &Value, what: &str) -> f64 {
    value.as_f64().unwrap_or_else(|| panic!("{what} is not a number: {value}"))
}

pub fn assert_close(actual: f64, expected: f64, what: &str) {
    let tolerance = 1e-6 * expected.abs().max(1e-12);
    assert!((actual - expected).abs() <= tolerance, "{what}: {actual} vs expected {expected}");
}

/// Asserts the key superset and the derived identities (decode = (n−1) /
/// generation, prefill = prompt / first output, generation = e2e − first
/// output, aggregate = Σ output tokens / wall span); returns the number of
/// eligible records checked.
pub fn assert_follows_reference(artifact: &Value, cell: &str) -> usize {
    let reference: Value = serde_json::from_str(REFERENCE).expect("reference JSON");
    let missing =
        |want: &Value, have: &Value| -> Vec<String> { keys(want).difference(&keys(have)).cloned().collect() };
    assert_eq!(missing(&reference, artifact), Vec::<String>::new(), "{cell}: top-level keys missing");
    assert_eq!(
        missing(&reference["metrics"], &artifact["metrics"]),
        Vec::<String>::new(),
        "{cell}: metrics keys missing"
    );
    let records = artifact["request_timings"].as_array().expect("request_timings is a list");
    let mut checked = 0;
    let mut total_output = 0.0;
    for (i, record) in records.iter().enumerate() {
        let at = format!("{cell} record {i}");
        assert_eq!(
            missing(&reference["request_timings"][0], record),
            Vec::<String>::new(),
            "{at}: keys missing"
        );
        if record["performance_eligible"] != true {
            continue;
        }
        let output = number(&record["output_tokens"], "output_tokens");
        let generation = number(&record["generation_ms"], "generation_ms");
        let first_output = number(&record["time_to_first_output_ms"], "time_to_first_output_ms");
        let prompt = number(&record["prompt_tokens"], "prompt_tokens");
        assert!(output > 1.0 && generation > 0.0 && first_output > 0.0, "{at}: {record}");
        assert_close(
            number(&record["decode_tok_s"], "decode_tok_s"),
            (output - 1.0) / generation * 1000.0,
            &format!("{at} decode_tok_s"),
        );
        assert_close(
            number(&record["effective_prefill_tok_s"], "effective_prefill_tok_s"),
            prompt / first_output * 1000.0,
            &format!("{at} effective_prefill_tok_s"),
        );
        assert_close(
            number(&record["e2e_ms"], "e2e_ms") - first_output,
            generation,
            &format!("{at} generation = e2e - time_to_first_output"),
        );
        assert_eq!(record["output_token_source"], "usage", "{at}");
        total_output += output;
        checked += 1;
    }
    let metrics = &artifact["metrics"];
    assert_close(
        number(&metrics["output_tokens"], "metrics.output_tokens"),
        total_output,
        &format!("{cell}: Σ output tokens"),
    );
    let wall = number(&artifact["wall_clock_ms"], "wall_clock_ms");
    assert_close(
        number(&metrics["throughput_tok_s"], "metrics.throughput_tok_s"),
        total_output / wall * 1000.0,
        &format!("{cell}: aggregate throughput"),
    );
    checked
}
