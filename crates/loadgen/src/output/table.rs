//! A compact human view of a stored cell artifact (for `anvil show`).

use std::fmt::Write;

use serde_json::Value;

use crate::observe::precision::StoppingRecord;
use crate::output::client_error::ClientError;
use crate::output::ending::Ending;
use crate::output::offered::{CapHolds, OfferedLoad};

fn num(v: Option<&Value>, decimals: usize) -> String {
    match v.and_then(Value::as_f64) {
        Some(x) => format!("{x:.decimals$}"),
        None => "-".to_string(),
    }
}

/// Renders the headline numbers and the main distributions of a cell.
pub fn render_table(artifact: &Value) -> String {
    let m = &artifact["metrics"];
    let mut out = String::new();
    headline(&mut out, artifact);
    load_and_ending(&mut out, artifact);
    throughput(&mut out, m);
    let _ = writeln!(out);
    distributions(&mut out, m);
    measurement_notes(&mut out, artifact);
    stages(&mut out, artifact);
    if let Some(failures) = artifact["failure_counts"].as_object().filter(|f| !f.is_empty()) {
        let list: Vec<String> = failures.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "\nfailures: {}", list.join(" "));
    }
    if artifact["metric_population"]["p99_interpretation"] == "descriptive-nearest-rank-only" {
        let _ = writeln!(out, "note: fewer than 100 samples; p99 is descriptive only");
    }
    out
}

/// The cell, its server, and its request counts.
fn headline(out: &mut String, artifact: &Value) {
    let text = |k: &str| artifact.get(k).and_then(Value::as_str).unwrap_or("-").to_string();
    let int = |k: &str| artifact.get(k).and_then(Value::as_u64).map_or("-".into(), |v| v.to_string());
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
}

/// Where the cell sits on its load axis (and what an open loop's cap did),
/// how the measurement ended, and the stopping rule's looks.
fn load_and_ending(out: &mut String, artifact: &Value) {
    if let Ok(offered) = serde_json::from_value::<OfferedLoad>(artifact["offered_load"].clone()) {
        let value = offered.value.map_or("-".to_string(), |v| format!("{v:.1}"));
        let _ = write!(out, "offered load: {} {value} ({})", offered.axis.label(), offered.basis);
        if let Ok(cap) = serde_json::from_value::<CapHolds>(artifact["in_flight_cap"].clone()) {
            let _ = write!(
                out,
                "; in-flight cap {}, {} requests held back (longest {:.0} ms)",
                cap.limit, cap.held_requests, cap.longest_hold_ms
            );
        }
        out.push('\n');
    }
    if let Ok(ending) = serde_json::from_value::<Ending>(artifact["ending"].clone())
        && ending.stopped_early()
    {
        let _ = match ending.lost() {
            true => writeln!(
                out,
                "stopped early: {} ({} unsent, {} cancelled)",
                ending.detail, ending.unsent, ending.cancelled
            ),
            false => writeln!(out, "stopped by its rule: {} ({} unsent)", ending.detail, ending.unsent),
        };
    }
    if let Ok(ending) = serde_json::from_value::<Ending>(artifact["ending"].clone())
        && let Some(drain) = ending.over_saturated_at_end()
    {
        let _ = writeln!(out, "over-saturated at the end: {}", drain.describe());
    }
    if let Ok(stopping) = serde_json::from_value::<StoppingRecord>(artifact["stopping"].clone()) {
        let intervals: Vec<String> = stopping
            .final_intervals
            .iter()
            .map(|(key, m)| {
                let side = |v: Option<f64>| v.map_or("open".to_string(), |v| format!("{v:.2}"));
                format!("{key} {:.2} ({}–{})", m.estimate, side(m.low), side(m.high))
            })
            .collect();
        let looks: Vec<String> = stopping.looks.iter().map(|l| l.requests.to_string()).collect();
        let _ = writeln!(
            out,
            "stopping rule: looked at {} of planned {:?} requests, each at {:.2}% (95% over all looks); over every request: {}",
            looks.join(", "),
            stopping.planned_looks,
            stopping.look_confidence * 100.0,
            intervals.join(", ")
        );
    }
}

/// Throughput, canaries and goodput, from the cell's metrics `m`.
fn throughput(out: &mut String, m: &Value) {
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
}

/// The table of the main distributions (mean, percentiles, samples), then
/// the 95% intervals of ttft and e2e.
fn distributions(out: &mut String, m: &Value) {
    let _ = writeln!(
        out,
        "{:<30} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6}",
        "metric", "mean", "p50", "p90", "p99", "max", "n"
    );
    let rows: [(&str, &str, &str); 12] = [
        ("ttft", "ttft", "_ms"),
        // Open loop: from the scheduled send, the client's lateness included.
        ("ttft from schedule", "ttft_from_schedule", "_ms"),
        ("time_to_first_output", "time_to_first_output", "_ms"),
        ("tpot", "tpot", "_ms"),
        ("e2e", "e2e", "_ms"),
        ("e2e from schedule", "e2e_from_schedule", "_ms"),
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
    for (label, name) in [("ttft", "ttft"), ("e2e", "e2e")] {
        if let Some(line) = intervals_line(m, label, name) {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// How far the client's own timing can be trusted, and the token account.
fn measurement_notes(out: &mut String, artifact: &Value) {
    if let Ok(e) = serde_json::from_value::<ClientError>(artifact["client_error"].clone()) {
        let ms = |v: Option<f64>| v.map_or("unknown".to_string(), |v| format!("{v:.3} ms"));
        let _ = writeln!(
            out,
            "client error: arrival stamps within {} (p99; {} kernel-stamped, {} sharing a read with the next event, {} stamped at read time); read delay p99 {}",
            ms(e.latency_bound_ms),
            e.kernel_stamped,
            e.shared_first_reads,
            e.read_stamped,
            ms(e.read_delay_p99_ms)
        );
    }
    if let Ok(tokens) =
        serde_json::from_value::<crate::output::tokens::TokenAccount>(artifact["tokens"].clone())
    {
        for line in tokens.summary_lines() {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// A staged cell's table: each stage's load, window and headline figures.
fn stages(out: &mut String, artifact: &Value) {
    let Some(stages) = artifact["stages"].as_array().filter(|s| !s.is_empty()) else { return };
    let _ = writeln!(
        out,
        "\n{:<6} {:<28} {:>9} {:>7} {:>10} {:>10} {:>10} {:>12}",
        "stage", "load", "window s", "done", "tok/s", "ttft p50", "ttft p99", "sched p99"
    );
    for st in stages {
        let m = &st["metrics"];
        let load = match st["arrival"]["rate_per_s"].as_f64() {
            Some(rate) => {
                format!(
                    "{} {rate}/s cap {}",
                    st["arrival"]["kind"].as_str().unwrap_or("-"),
                    st["concurrency"]
                )
            }
            None => format!("closed loop, concurrency {}", st["concurrency"]),
        };
        let secs = |i: usize| {
            st["window_ms"].get(i).and_then(Value::as_f64).map_or("-".into(), |ms| format!("{}", ms / 1000.0))
        };
        let _ = writeln!(
            out,
            "{:<6} {:<28} {:>9} {:>7} {:>10} {:>10} {:>10} {:>12}",
            st["stage"],
            load,
            format!("{}-{}", secs(0), secs(1)),
            st["completed"],
            num(m.get("throughput_tok_s"), 1),
            num(m.get("ttft_p50_ms"), 2),
            num(m.get("ttft_p99_ms"), 2),
            num(m.get("ttft_from_schedule_p99_ms"), 2),
        );
    }
}

/// A metric's 95% intervals of p50, p99 and the mean, in one line, with
/// how they were computed (`open`: the sample cannot bound that side).
fn intervals_line(m: &Value, label: &str, name: &str) -> Option<String> {
    if m.get(format!("{name}_samples")).and_then(Value::as_u64).unwrap_or(0) == 0 {
        return None;
    }
    let side =
        |key: String| m.get(key).and_then(Value::as_f64).map_or("open".to_string(), |v| format!("{v:.2}"));
    let interval = |stat: &str| {
        format!(
            "{}–{}",
            side(format!("{name}_{stat}_ci95_low_ms")),
            side(format!("{name}_{stat}_ci95_high_ms"))
        )
    };
    let batches = m.get(format!("{name}_batches")).and_then(Value::as_u64);
    let (mean, basis) = match batches {
        Some(b) => {
            let worth = m
                .get(format!("{name}_effective_samples"))
                .and_then(Value::as_f64)
                .map_or(String::new(), |e| format!("; the mean is worth {e:.0} independent requests"));
            (interval("mean_batch"), format!("batch means, {b} batches{worth}"))
        }
        None => (interval("mean"), "too few requests to batch: assumes independent requests".to_string()),
    };
    Some(format!(
        "95% intervals of {label} (ms): p50 {}, p99 {}, mean {mean} ({basis})",
        interval("p50"),
        interval("p99")
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shows_latency_from_the_schedule_and_each_stage() {
        let artifact = json!({
            "cell": "ramp",
            "metrics": {"ttft_p99_ms": 12.0, "ttft_from_schedule_p99_ms": 40.5, "ttft_from_schedule_samples": 9},
            "stages": [
                {"stage": 0, "arrival": {"kind": "constant", "rate_per_s": 5.0}, "concurrency": 8,
                 "window_ms": [0.0, 2000.0], "completed": 10,
                 "metrics": {"throughput_tok_s": 50.0, "ttft_p50_ms": 3.0, "ttft_p99_ms": 9.0,
                             "ttft_from_schedule_p99_ms": 9.5}},
                {"stage": 1, "arrival": {"kind": "closed_loop"}, "concurrency": 4,
                 "window_ms": [2000.0, 2500.0], "completed": 7, "metrics": {}},
            ],
        });
        let text = render_table(&artifact);
        let line =
            |start: &str| text.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{text}"));
        assert!(line("ttft from schedule (ms)").contains("40.50"), "{text}");
        assert!(line("0 ").contains("constant 5/s cap 8") && line("0 ").contains("0-2"), "{text}");
        assert!(line("1 ").contains("closed loop, concurrency 4") && line("1 ").contains("2-2.5"), "{text}");
    }

    #[test]
    fn shows_the_intervals_and_an_early_stop() {
        let artifact = json!({
            "metrics": {
                "ttft_samples": 400, "ttft_batches": 10, "ttft_effective_samples": 61.6,
                "ttft_p50_ci95_low_ms": 3.9, "ttft_p50_ci95_high_ms": 4.25,
                "ttft_p99_ci95_low_ms": 6.5, "ttft_p99_ci95_high_ms": null,
                "ttft_mean_batch_ci95_low_ms": 4.0, "ttft_mean_batch_ci95_high_ms": 4.5,
                "e2e_samples": 0,
            },
            "ending": {"reason": "over-saturated", "detail": "over-saturated at 2.37 s", "unsent": 104, "cancelled": 83},
        });
        let text = render_table(&artifact);
        assert!(
            text.contains("stopped early: over-saturated at 2.37 s (104 unsent, 83 cancelled)"),
            "{text}"
        );
        assert!(
            text.contains("95% intervals of ttft (ms): p50 3.90–4.25, p99 6.50–open, mean 4.00–4.50 (batch means, 10 batches; the mean is worth 62 independent requests)"),
            "{text}"
        );
        assert!(!text.contains("intervals of e2e"), "no e2e samples, no line: {text}");
    }

    #[test]
    fn marks_a_completed_cell_the_server_never_kept_up_with() {
        let drain = json!({
            "over_saturated": true, "repeat": 0, "half": 50, "offered_rate_per_s": 20.0,
            "achieved_rate_per_s": 1.3, "achieved_rate_high_per_s": 1.4, "sojourn_p50_ms": [20000.0, 55000.0],
        });
        let marked = json!({"metrics": {}, "ending": {"reason": "completed", "detail": "", "drain": drain}});
        let text = render_table(&marked);
        assert!(text.contains("over-saturated at the end: 1.30 req/s ended of 20.00 offered"), "{text}");
        assert!(!text.contains("stopped"), "{text}");
        // Kept up: no mark.
        let mut kept_up = marked.clone();
        kept_up["ending"]["drain"]["over_saturated"] = json!(false);
        assert!(!render_table(&kept_up).contains("over-saturated"), "{}", render_table(&kept_up));
    }
}
