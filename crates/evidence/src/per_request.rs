//! Per-request derived values, re-derived from the same record's raw
//! measurements (the request's own moments and token counts).
//!
//! | key | from |
//! |---|---|
//! | `generation_ms` | `e2e_ms − time_to_first_output_ms` |
//! | `visible_generation_ms` | `e2e_ms − ttft_ms` |
//! | `tpot_ms` (= `mean_time_per_output_token_ms` = `mean_inter_token_latency_ms`) | `generation / (output_tokens − 1)`; null unless output_tokens ≥ 2 and generation > 0 |
//! | `decode_tok_s` | `(output_tokens − 1) / (generation / 1000)`; same conditions |
//! | `effective_prefill_tok_s` | `prompt_tokens / (time_to_first_output / 1000)`; null unless > 0 |
//! | `tokens_per_chunk` | `output_tokens / (content_chunks + reasoning_chunks)`; null without chunks |
//! | `send_lag_ms` | `actual_send_ms − intended_send_ms` |
//! | `ttft_from_schedule_ms` (open loop) | `ttft_ms + send_lag_ms` |
//! | `e2e_from_schedule_ms` (open loop) | `e2e_ms + send_lag_ms` |
//! | `output_token_source` | `usage` iff `output_tokens` is not null |
//! | `request_canary.passed` | `capture_complete ∧ marker_at_start ∧ foreign_marker_count = 0` |
//! | `request_canary.marker` | `ANVIL_REQ_<context_seed>_<request_index, 5 digits>` |
//! | `controlled_output.exact` | `observable ∧ observed_words = requested_words` |
//! | `controlled_output.requested_words` | the artifact's `response_words` |
//! | `performance_eligible` | `failure` is null |
//! | `slo_met` | eligible ∧ each configured limit of `slo` met (`ttft_ms`, `tpot_ms`, `e2e_ms`, `≤`); null without `slo`; with `slo.from = "schedule"` TTFT and E2E are the record's `*_from_schedule_ms` where it has them |
//!
//! Everything else in a record is a raw measurement, taken as given.

use serde_json::{Map, Value, json};

use crate::records::Req;
use crate::report::RecordChecker;

/// Keys of a record that are raw measurements (inputs, not claims).
const INPUTS: &[&str] = &[
    "content_chunks",
    "e2e_ms",
    "output_tokens",
    "planned_context_tokens",
    "prompt_tokens",
    "reasoning_chunks",
    "request_index",
    "time_to_first_output_ms",
    "ttft_ms",
    "visible_content_truncated",
    "repeat",
    "target",
    "http_status",
    "finish_reason",
    "stale_connection_retries",
    "cached_prompt_tokens",
    "receive_clock",
    "response_reads",
    "first_content_read_delay_us",
    "intended_send_ms",
    "actual_send_ms",
    "chunk_gaps_us",
    "failure",
    "finished_ms",
    "request_start_unix_ns",
    "stage",
    // The agent call's task and graph, and the ideal cache it could have
    // had: inputs of the job figures (`crate::jobs`), which check the
    // replay rule on `intended_send_ms` across records.
    "agent",
    "ideal_cached_tokens",
];
const CANARY_INPUTS: &[&str] =
    &["capture_complete", "foreign_marker_count", "marker_at_start", "observed_marker_count"];
const CONTROLLED_INPUTS: &[&str] = &["observed_words", "observable"];

fn num(v: Option<f64>) -> Value {
    v.map_or(Value::Null, Value::from)
}

/// Checks every derived key of one record.
pub fn check(c: &mut RecordChecker<'_>, artifact: &Map<String, Value>, r: &Req<'_>) {
    let e2e = r.num("e2e_ms");
    let tfo = r.num("time_to_first_output_ms");
    let ttft = r.num("ttft_ms");
    let tokens = r.int("output_tokens");
    let generation = e2e.zip(tfo).map(|(e, t)| e - t);
    c.check("generation_ms", num(generation));
    c.check("visible_generation_ms", num(e2e.zip(ttft).map(|(e, t)| e - t)));
    let after_first = tokens.filter(|n| *n >= 2).map(|n| (n - 1) as f64);
    let positive_gen = generation.filter(|g| *g > 0.0);
    let tpot = after_first.zip(positive_gen).map(|(n, g)| g / n);
    for key in ["tpot_ms", "mean_time_per_output_token_ms", "mean_inter_token_latency_ms"] {
        c.check(key, num(tpot));
    }
    c.check("decode_tok_s", num(after_first.zip(positive_gen).map(|(n, g)| n / (g / 1000.0))));
    let prompt = r.int("prompt_tokens");
    let prefill = prompt.zip(tfo.filter(|t| *t > 0.0)).map(|(p, t)| p as f64 / (t / 1000.0));
    c.check("effective_prefill_tok_s", num(prefill));
    let chunks = r.int("content_chunks").unwrap_or(0) + r.int("reasoning_chunks").unwrap_or(0);
    let per_chunk = tokens.filter(|_| chunks > 0).map(|n| n as f64 / chunks as f64);
    c.check("tokens_per_chunk", num(per_chunk));
    if let (Some(a), Some(i)) = (r.num("actual_send_ms"), r.num("intended_send_ms")) {
        c.check_difference("send_lag_ms", a - i, a.abs().max(i.abs()));
    }
    // From the schedule: the stored lag (itself checked just above) added.
    let lag = r.num("send_lag_ms");
    for (key, from_send) in [("ttft_from_schedule_ms", ttft), ("e2e_from_schedule_ms", e2e)] {
        if r.raw.contains_key(key) {
            c.check(key, num(from_send.zip(lag).map(|(v, l)| v + l)));
        }
    }
    c.check("output_token_source", json!(if tokens.is_some() { "usage" } else { "none" }));

    if let Some(canary) = r.get("request_canary") {
        let flag = |k: &str| canary.get(k).and_then(Value::as_bool);
        let foreign = canary.get("foreign_marker_count").and_then(Value::as_u64);
        let passed = flag("capture_complete").zip(flag("marker_at_start")).zip(foreign);
        match passed {
            Some(((cc, start), f)) => c.check("request_canary.passed", json!(cc && start && f == 0)),
            None => c.uncheck("request_canary.passed", "canary record lacks its inputs"),
        }
        match (artifact.get("context_seed").and_then(Value::as_u64), r.int("request_index")) {
            (Some(seed), Some(i)) => {
                c.check("request_canary.marker", json!(format!("ANVIL_REQ_{seed}_{i:05}")))
            }
            _ => c.uncheck("request_canary.marker", "no context_seed or request_index"),
        }
    }
    if let Some(co) = r.get("controlled_output") {
        let observable = co.get("observable").and_then(Value::as_bool);
        let observed = co.get("observed_words").and_then(Value::as_u64);
        let requested = co.get("requested_words").and_then(Value::as_u64);
        if let (Some(o), Some(w), Some(q)) = (observable, observed, requested) {
            c.check("controlled_output.exact", json!(o && w == q));
        }
        if let Some(words) = artifact.get("response_words").filter(|v| v.is_u64()) {
            c.check("controlled_output.requested_words", words.clone());
        }
    }
    if r.raw.contains_key("failure") {
        c.check("performance_eligible", json!(r.get("failure").is_none()));
    }
    check_slo(c, artifact, r, tpot);
    sweep(c, r);
}

fn check_slo(c: &mut RecordChecker<'_>, artifact: &Map<String, Value>, r: &Req<'_>, tpot: Option<f64>) {
    let slo = artifact.get("slo").filter(|s| s.is_object());
    let Some(slo) = slo else {
        c.check("slo_met", Value::Null);
        return;
    };
    let within = |limit: &str, v: Option<f64>| match slo.get(limit).and_then(Value::as_f64) {
        None => true,
        Some(l) => v.is_some_and(|v| v <= l),
    };
    let from_schedule = slo.get("from").and_then(Value::as_str) == Some("schedule");
    let latency = |key: &str| match r.num(&format!("{key}_from_schedule_ms")) {
        Some(v) if from_schedule => Some(v),
        _ => r.num(&format!("{key}_ms")),
    };
    let met = r.eligible
        && within("ttft_ms", latency("ttft"))
        && within("tpot_ms", tpot)
        && within("e2e_ms", latency("e2e"));
    c.check("slo_met", json!(met));
}

/// Lists keys of a record that are neither inputs nor checked.
fn sweep(c: &mut RecordChecker<'_>, r: &Req<'_>) {
    for (key, v) in r.raw {
        if INPUTS.contains(&key.as_str()) {
            continue;
        }
        let nested = match key.as_str() {
            "request_canary" => Some(CANARY_INPUTS),
            "controlled_output" => Some(CONTROLLED_INPUTS),
            _ => None,
        };
        match (nested, v.as_object()) {
            (Some(inputs), Some(obj)) => {
                for sub in obj.keys().filter(|k| !inputs.contains(&k.as_str())) {
                    c.sweep(&format!("{key}.{sub}"), "not a defined per-request field");
                }
            }
            (Some(_), None) => {}
            (None, _) => c.sweep(key, "not a defined per-request field"),
        }
    }
}
