//! Prometheus text from real engines' `/metrics`, and deltas between scrapes.

use std::collections::BTreeMap;

use crate::common::Scratch;
use anvil_proc::{launch, metric_deltas, parse_prometheus_text, scrape_metrics};

/// Shaped like vLLM's output: labelled series, histograms, `_created`.
const VLLM_BEFORE: &str = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 0.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="Qwen/Qwen3-8B"} 1200.0
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{engine="0",model_name="Qwen/Qwen3-8B"} 1.7489e+09
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="Qwen/Qwen3-8B"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 4.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 0.5
"#;

const VLLM_AFTER: &str = r#"# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 3.0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="Qwen/Qwen3-8B",engine="0"} 5200.0
vllm:prompt_tokens_created{engine="0",model_name="Qwen/Qwen3-8B"} 1.7489e+09
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.25
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="Qwen/Qwen3-8B"} 13.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 24.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 24.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 4.5
vllm:request_success_total{engine="0",finished_reason="length",model_name="Qwen/Qwen3-8B"} 20.0
"#;

/// Shaped like llama.cpp's `llama-server --metrics`: no labels.
const LLAMA_CPP: &str = "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 521
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 64
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds 158.2
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 0
# TYPE llamacpp:n_busy_slots_per_decode gauge
llamacpp:n_busy_slots_per_decode nan
";

fn key(name: &str, labels: &str) -> String {
    format!("{name}{{{labels}}}")
}

#[test]
fn parses_vllm_series_with_sorted_labels() {
    let metrics = parse_prometheus_text(VLLM_BEFORE);

    assert_eq!(metrics[&key("vllm:prompt_tokens_total", r#"engine="0",model_name="Qwen/Qwen3-8B""#)], 1200.0);
    assert_eq!(
        metrics[&key(
            "vllm:time_to_first_token_seconds_bucket",
            r#"engine="0",le="+Inf",model_name="Qwen/Qwen3-8B""#
        )],
        4.0
    );
    assert_eq!(metrics.len(), 8, "comments are not samples: {metrics:?}");
}

#[test]
fn parses_llama_cpp_series_and_special_values() {
    let metrics = parse_prometheus_text(LLAMA_CPP);

    assert_eq!(metrics["llamacpp:prompt_tokens_total"], 521.0);
    assert_eq!(metrics["llamacpp:prompt_tokens_seconds"], 158.2);
    assert!(metrics["llamacpp:n_busy_slots_per_decode"].is_nan());
}

#[test]
fn tolerates_odd_lines_and_quoted_label_values() {
    let text = "ok_total 1 1712345678000\n\
                garbage line without value\n\
                weird{path=\"/v1/chat, \\\"x\\\" {y}\"} 2\n\
                neg_inf -Inf\n";
    let metrics = parse_prometheus_text(text);

    assert_eq!(metrics["ok_total"], 1.0, "timestamp ignored");
    assert_eq!(metrics[r#"weird{path="/v1/chat, \"x\" {y}"}"#], 2.0);
    assert_eq!(metrics["neg_inf"], f64::NEG_INFINITY);
    assert_eq!(metrics.len(), 3);
}

#[test]
fn deltas_subtract_counters_and_keep_gauges() {
    let before = parse_prometheus_text(VLLM_BEFORE);
    let after = parse_prometheus_text(VLLM_AFTER);
    let labels = r#"engine="0",model_name="Qwen/Qwen3-8B""#;

    let deltas = metric_deltas(&before, &after);

    // Label order differed between scrapes; the keys still match.
    assert_eq!(deltas[&key("vllm:prompt_tokens_total", labels)], 4000.0);
    assert_eq!(deltas[&key("vllm:time_to_first_token_seconds_count", labels)], 20.0);
    assert_eq!(deltas[&key("vllm:time_to_first_token_seconds_sum", labels)], 4.0);
    assert_eq!(deltas[&key("vllm:num_requests_running", labels)], 3.0, "gauge: after");
    assert_eq!(deltas[&key("vllm:kv_cache_usage_perc", labels)], 0.25);
    let new_counter = key(
        "vllm:request_success_total",
        r#"engine="0",finished_reason="length",model_name="Qwen/Qwen3-8B""#,
    );
    assert_eq!(deltas[&new_counter], 20.0, "new counter counts from zero");
    assert!(!deltas.keys().any(|k| k.contains("_created")));
}

#[test]
fn a_counter_that_went_down_means_a_restart() {
    let before = BTreeMap::from([("x_total".to_string(), 500.0)]);
    let after = BTreeMap::from([("x_total".to_string(), 30.0)]);
    assert_eq!(metric_deltas(&before, &after)["x_total"], 30.0);
}

#[tokio::test]
async fn scrapes_metrics_over_http_between_two_points() {
    let scratch = Scratch::new();
    std::fs::write(scratch.path("metrics"), LLAMA_CPP).expect("write metrics");
    let server = launch(scratch.http_server_spec("metrics-server")).await.expect("ready");

    let before = scrape_metrics(&server.base_url()).await.expect("scrape 1");
    std::fs::write(
        scratch.path("metrics"),
        LLAMA_CPP.replace("tokens_predicted_total 64", "tokens_predicted_total 192"),
    )
    .expect("rewrite metrics");
    let after = scrape_metrics(&format!("{}/", server.base_url())).await.expect("scrape 2");

    assert_eq!(metric_deltas(&before, &after)["llamacpp:tokens_predicted_total"], 128.0);
    let missing = scrape_metrics(&format!("{}/nothing-here", server.base_url())).await;
    assert!(missing.is_err_and(|e| e.to_string().contains("404")));
    server.stop().await;
}
