//! Real traffic against the simulated engine over loopback HTTP: the
//! example Mooncake trace (prefix-cache hits exactly where hash ids
//! repeat), multi-turn sessions (history resent, per-turn figures), a
//! sessions trace in generic JSONL, and seeded dataset sampling.

use std::collections::HashMap;
use std::path::PathBuf;

use anvil_loadgen::{
    CellContext, CellReport, CellSpec, DatasetFormat, DatasetSpec, Progress, RequestRecord, SessionSpec,
    Target, TraceFormat, TraceSpec, Traffic, run_cell,
};
use serde_json::Value;

fn example(path: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples")).join(path)
}

/// Runs `spec` against a fresh sim (16-token prefix-cache blocks, fast steps).
pub(crate) async fn run(spec: CellSpec) -> CellReport {
    let mut profile = anvil_sim::SimProfile::default();
    profile.set("decode-step-ms", "1").unwrap();
    profile.set("prefill-tok-s", "100000").unwrap();
    profile.set("prefix-cache-block-tokens", "16").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim = anvil_sim::spawn(profile, listener).await.unwrap();
    let target =
        [Target { base_url: sim.base_url(), api_key: None, label: "sim".into(), tls: Default::default() }];
    let ctx = CellContext { engine: "sim".into(), simulated: true, ..CellContext::default() };
    let quiet = |_: &Progress| {};
    let report = run_cell(&spec, &target, &ctx, &quiet).await.expect("cell runs");
    sim.shutdown().await.unwrap();
    report
}

fn spec(traffic: Traffic) -> CellSpec {
    CellSpec {
        name: "traffic".into(),
        model: "sim-model".into(),
        concurrency: 64,
        max_tokens: 16,
        seed: 11,
        request_timeout_ms: 30_000,
        traffic,
        ..CellSpec::default()
    }
}

fn trace(path: &str, format: TraceFormat) -> TraceSpec {
    TraceSpec::whole_file(example(path), format, 16)
}

/// The example trace's lines, parsed independently of the load generator.
fn trace_lines(path: &str) -> Vec<(u64, Value)> {
    let text = std::fs::read_to_string(example(path)).unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| (n as u64 + 1, serde_json::from_str(l).unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_mooncake_trace_hits_the_cache_exactly_where_hash_ids_repeat() {
    let report = run(spec(Traffic::Trace(trace("traces/mooncake-small.jsonl", TraceFormat::Mooncake)))).await;
    let a = &report.artifact;
    assert_eq!(a["failed"], 0, "{}", a["failures"]);
    assert_eq!(a["arrival"]["kind"], "trace");
    assert_eq!(a["traffic"]["format"], "mooncake");
    let lines = trace_lines("traces/mooncake-small.jsonl");
    assert_eq!(report.records.len(), lines.len());
    let by_line: HashMap<u64, &RequestRecord> =
        report.records.iter().map(|r| (r.trace_line.expect("every record names its line"), r)).collect();
    let mut seen: Vec<Vec<u64>> = Vec::new();
    let mut hits = 0;
    for (number, line) in &lines {
        let r = by_line[number];
        // Sent at the recorded time: the schedule is the trace's, the lag small.
        let recorded = line["timestamp"].as_f64().unwrap();
        assert!((r.intended_send_ms - recorded).abs() < 1e-3, "line {number}: due {} ms", r.intended_send_ms);
        assert!(r.send_lag_ms < 250.0, "line {number} sent {} ms late", r.send_lag_ms);
        let asked = line["output_length"].as_u64().unwrap();
        assert_eq!((r.requested_output_tokens, r.output_tokens), (Some(asked), Some(asked)), "line {number}");
        assert_eq!(r.output_length_met, Some(true));
        let ids: Vec<u64> = line["hash_ids"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_u64().unwrap()).collect())
            .unwrap_or_default();
        // The longest run of leading ids an earlier line had: those blocks are cached.
        let shared =
            seen.iter().map(|s| s.iter().zip(&ids).take_while(|(a, b)| a == b).count()).max().unwrap_or(0);
        let expected = 16 * shared as u64;
        assert_eq!(r.cached_prompt_tokens, Some(expected), "line {number} ids {ids:?}");
        if let Some(n) = line["input_length"].as_u64() {
            // Template: 4 tokens before the message, 3 after (crates/sim/src/tokenizer.rs).
            assert_eq!(r.prompt_tokens, Some(n + 7), "line {number}: a block of N tokens is N tokens");
        }
        hits += u32::from(expected > 0);
        seen.push(ids);
    }
    assert!(hits >= 8, "the example trace repeats ids on purpose ({hits} lines hit)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_resend_their_history_and_report_each_turn() {
    let sessions = SessionSpec {
        sessions: 8,
        turns: 3,
        think_time_ms: 20,
        turn_texts: vec!["Tell me about caches.".into()],
    };
    let mut cell = spec(Traffic::Sessions(sessions));
    cell.context_tokens = 40;
    let report = run(cell).await;
    let a = &report.artifact;
    assert_eq!(a["failed"], 0, "{}", a["failures"]);
    assert_eq!(report.records.len(), 24);
    let per_turn = a["traffic"]["per_turn"].as_array().expect("per-turn figures");
    assert_eq!(per_turn.len(), 3);
    let mean = |k: usize, key: &str| per_turn[k][key]["mean"].as_f64().unwrap();
    for (k, turn) in per_turn.iter().enumerate() {
        assert_eq!(turn["turn"], k);
        assert_eq!(turn["requests"], 8);
        assert!(turn["ttft_ms"]["p50"].as_f64().is_some(), "turn {k}: {turn}");
    }
    assert!(mean(1, "prompt_tokens") > mean(0, "prompt_tokens") + 40.0, "turn 1 adds a reply and 40 words");
    assert!(mean(2, "prompt_tokens") > mean(1, "prompt_tokens") + 40.0);
    assert_eq!(mean(0, "cached_prompt_tokens"), 0.0, "no session shares another's first turn");
    for r in report.records.iter().filter(|r| r.turn.unwrap() > 0) {
        // The whole previous turn (prompt + reply) was prefilled before: whole blocks of it hit.
        let before = report
            .records
            .iter()
            .find(|p| p.session == r.session && p.turn == Some(r.turn.unwrap() - 1))
            .unwrap();
        let cached = r.cached_prompt_tokens.unwrap();
        assert!(
            cached >= before.prompt_tokens.unwrap() / 16 * 16 - 16,
            "session {:?} turn {:?}: {cached}",
            r.session,
            r.turn
        );
    }
    assert_eq!(a["traffic"]["session_total_ms"]["samples"], 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_trace_keeps_turn_order_and_the_shared_prefix() {
    let report = run(spec(Traffic::Trace(trace("traces/sessions.jsonl", TraceFormat::Jsonl)))).await;
    let a = &report.artifact;
    assert_eq!(a["failed"], 0, "{}", a["failures"]);
    assert_eq!(a["traffic"]["sessions"], 6, "4 conversations and 2 one-off prompts");
    let lines = trace_lines("traces/sessions.jsonl");
    assert_eq!(report.records.len(), lines.len());
    let mut by_session: HashMap<u64, Vec<&RequestRecord>> = HashMap::new();
    for r in &report.records {
        by_session.entry(r.session.unwrap()).or_default().push(r);
    }
    for turns in by_session.values_mut() {
        turns.sort_by_key(|r| r.turn);
        for pair in turns.windows(2) {
            assert!(pair[1].actual_send_ms >= pair[0].finished_ms, "a turn waits for the previous reply");
            assert!(pair[1].prompt_tokens > pair[0].prompt_tokens, "the history grows");
        }
    }
    // First turns share the 16-token system prefix: every one after the first hits it.
    let firsts: Vec<&RequestRecord> = report
        .records
        .iter()
        .filter(|r| r.turn == Some(0) && by_session[&r.session.unwrap()].len() == 3)
        .collect();
    assert_eq!(firsts.len(), 4);
    assert_eq!(firsts.iter().filter(|r| r.cached_prompt_tokens.unwrap() >= 16).count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_samples_reproducibly_from_the_seed() {
    let dataset = |format, file: &str| {
        Traffic::Dataset(DatasetSpec {
            path: example(file),
            format,
            min_prompt_tokens: None,
            max_prompt_tokens: None,
            truncate: false,
        })
    };
    let entries = |r: &CellReport| r.records.iter().map(|r| r.dataset_entry.unwrap()).collect::<Vec<_>>();
    let mut cell = spec(dataset(DatasetFormat::Sharegpt, "datasets/chat.sharegpt.json"));
    cell.requests = 12;
    cell.concurrency = 4;
    let first = run(cell.clone()).await;
    let again = run(cell.clone()).await;
    assert_eq!(first.artifact["failed"], 0, "{}", first.artifact["failures"]);
    assert_eq!(entries(&first), entries(&again), "same seed, same prompts");
    assert_eq!(
        first.records.iter().map(|r| r.prompt_tokens).collect::<Vec<_>>(),
        again.records.iter().map(|r| r.prompt_tokens).collect::<Vec<_>>()
    );
    let mut sorted = entries(&first);
    sorted.sort();
    assert_eq!(sorted, (0..12).collect::<Vec<_>>(), "12 requests from 12 prompts: each once");
    cell.seed = 12;
    assert_ne!(entries(&run(cell).await), entries(&first), "another seed, another order");

    let mut cell = spec(dataset(DatasetFormat::Jsonl, "datasets/prompts.jsonl"));
    cell.requests = 11;
    let jsonl = run(cell).await;
    for r in &jsonl.records {
        // The file's output lengths are asked for (the last line names none: the cell's max_tokens).
        assert!(r.output_tokens.unwrap() <= r.requested_output_tokens.unwrap_or(16));
    }
}
