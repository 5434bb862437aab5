//! A compact human view of a stored cell artifact (for `anvil show`).

use std::fmt::Write;

use serde_json::Value;

fn num(v: Option<&Value>, decimals: usize) -> String {
    match v.and_then(Value::as_f64) {
        Some(x) => format!("{x:.decimals$}"),
        None => "-".to_string(),
    }
}

/// Renders the headline numbers and the main distributions of a cell.
pub fn render_table(artifact: &Value) -> String {
    let m = &artifact["metrics"];
    let text = |k: &str| artifact.get(k).and_then(Value::as_str).unwrap_or("-").to_string();
    let int = |k: &str| artifact.get(k).and_then(Value::as_u64).map_or("-".into(), |v| v.to_string());
    let mut out = String::new();
    let simulated = if artifact["simulated"].as_bool() == Some(true) { " [SIMULATED]" } else { "" };
    let _ = writeln!(
        out,
        "cell {}  model {}  engine {}{}",
        text("cell"),
        text("model"),
        text("engine"),
        simulated
    );
    let _ = writeln!(
        out,
        "context {}  concurrency {}  requests {}  completed {}  failed {}  wall {} ms",
        int("context_tokens"),
        int("concurrency"),
        int("requests"),
        int("completed"),
        int("failed"),
        num(artifact.get("wall_clock_ms"), 0),
    );
    let _ = writeln!(
        out,
        "throughput {} tok/s  output tokens {}  canaries {}/{}",
        num(m.get("throughput_tok_s"), 1),
        num(m.get("output_tokens"), 0),
        num(m.get("request_canary_passed"), 0),
        num(m.get("request_canary_samples"), 0),
    );
    if m.get("goodput_rate").is_some() {
        let _ = writeln!(
            out,
            "goodput {} of requests, {} tok/s",
            num(m.get("goodput_rate"), 3),
            num(m.get("goodput_tok_s"), 1)
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<30} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6}",
        "metric", "mean", "p50", "p90", "p99", "max", "n"
    );
    let rows: [(&str, &str, &str); 10] = [
        ("ttft", "ttft", "_ms"),
        ("time_to_first_output", "time_to_first_output", "_ms"),
        ("tpot", "tpot", "_ms"),
        ("e2e", "e2e", "_ms"),
        ("chunk_gap", "chunk_gap", "_ms"),
        ("decode tok/s", "decode_tok_s", ""),
        ("prefill tok/s", "effective_prefill_tok_s", ""),
        ("prompt tokens", "prompt_tokens", ""),
        // About the client: did it send on time and read promptly?
        ("send lag", "send_lag", "_ms"),
        ("first content read delay", "first_content_read_delay", "_ms"),
    ];
    for (label, name, unit) in rows {
        let key = |stat: &str| m.get(format!("{name}_{stat}{unit}"));
        let label = if unit.is_empty() { label.to_string() } else { format!("{label} (ms)") };
        let _ = writeln!(
            out,
            "{:<30} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6}",
            label,
            num(key("mean"), 2),
            num(key("p50"), 2),
            num(key("p90"), 2),
            num(key("p99"), 2),
            num(key("max"), 2),
            num(m.get(format!("{name}_samples")), 0),
        );
    }
    if let Some(failures) = artifact["failure_counts"].as_object().filter(|f| !f.is_empty()) {
        let list: Vec<String> = failures.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "\nfailures: {}", list.join(" "));
    }
    if artifact["metric_population"]["p99_interpretation"] == "descriptive-nearest-rank-only" {
        let _ = writeln!(out, "note: fewer than 100 samples; p99 is descriptive only");
    }
    out
}
