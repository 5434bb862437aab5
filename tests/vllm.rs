//! A real vLLM (the registry's CPU build, `scripts/vllm.sh`) launched by
//! anvil through `engine "vllm"`, serving SmolLM2-135M's real weights.
//! One run (vLLM takes 1.5–2.5 min to start on 2 cores): a plain server,
//! frozen during its first cell and restarted, and its ngram-speculative
//! twin, one after the other.
//!
//! - canaries hold on a model that cannot follow the marker instruction:
//!   the preset's constrained decoding makes every reply begin with it;
//! - prompts are token-exact with `tokenizer "server"` (vLLM's /tokenize)
//!   and with the model's own `tokenizer.json`, both checked against every
//!   reply's `usage.prompt_tokens`;
//! - a trace's shared blocks hit vLLM's prefix cache, and the server's
//!   cached tokens equal the ideal ones in whole blocks of the block size
//!   vLLM reports in its own /metrics;
//! - agent runs replay as graphs: every call is sent at its parents' end
//!   plus its delay, fan-out runs side by side, and the cached tokens vLLM
//!   reports equal the graph's ideal ones in whole blocks;
//! - ngram speculation's acceptance is re-derived from the raw /metrics deltas;
//! - every request's `X-Request-Id` is in vLLM's own log (`--enable-log-requests`);
//! - a vLLM frozen mid-cell (SIGSTOP) is classified as stalled, killed,
//!   and started afresh for the next cell (so three launches in all);
//! - after the run no vLLM process is left.
//!
//! Needs `VLLM_PYTHON` and `VLLM_MODEL_DIR` (`eval "$(scripts/vllm.sh
//! --print-env)"`; scripts/test.sh does it). Without them it says it was
//! skipped, unless `ANVIL_REQUIRE_VLLM=1` (set by scripts/test.sh once vLLM
//! is installed), when it fails.

use std::path::Path;

use std::time::Duration;

use crate::support_servers::{Bench, alive, finish, freeze_once_serving};

fn vllm() -> Option<(String, String)> {
    match (std::env::var("VLLM_PYTHON"), std::env::var("VLLM_MODEL_DIR")) {
        (Ok(python), Ok(model)) if Path::new(&python).exists() && Path::new(&model).exists() => {
            Some((python, model))
        }
        _ => {
            assert!(
                std::env::var("ANVIL_REQUIRE_VLLM").as_deref() != Ok("1"),
                "ANVIL_REQUIRE_VLLM=1 but VLLM_PYTHON / VLLM_MODEL_DIR do not name an install"
            );
            eprintln!("skipped: no vLLM (eval \"$(scripts/vllm.sh --print-env)\" to run it)");
            None
        }
    }
}

/// Twelve lines whose 64-token blocks repeat in known ways: lines that
/// begin with the same ids share exactly those blocks' tokens.
const TRACE: &str = r#"{"timestamp": 0, "input_length": 256, "output_length": 8, "hash_ids": [1, 2, 3, 4]}
{"timestamp": 400, "input_length": 256, "output_length": 8, "hash_ids": [1, 2, 3, 5]}
{"timestamp": 800, "input_length": 256, "output_length": 8, "hash_ids": [1, 2, 6, 7]}
{"timestamp": 1200, "input_length": 320, "output_length": 8, "hash_ids": [1, 2, 3, 4, 8]}
{"timestamp": 1600, "input_length": 128, "output_length": 8, "hash_ids": [9, 10]}
{"timestamp": 2000, "input_length": 320, "output_length": 8, "hash_ids": [1, 2, 3, 5, 11]}
{"timestamp": 2400, "input_length": 192, "output_length": 8, "hash_ids": [9, 10, 12]}
{"timestamp": 2800, "input_length": 384, "output_length": 8, "hash_ids": [1, 2, 3, 4, 8, 13]}
{"timestamp": 3200, "input_length": 64, "output_length": 8, "hash_ids": [14]}
{"timestamp": 3600, "input_length": 256, "output_length": 8, "hash_ids": [1, 2, 6, 15]}
{"timestamp": 4000, "input_length": 192, "output_length": 8, "hash_ids": [9, 10, 12]}
{"timestamp": 4400, "input_length": 320, "output_length": 8, "hash_ids": [1, 2, 3, 4, 16]}
"#;

/// Four agent tasks of our own making: a planner (three 64-token blocks),
/// two readers fanned out after tool delays, each inheriting the planner's
/// prompt and adding a block, and a patch joining them that inherits the
/// planner's prompt. No block is shared across tasks, so the ideal cache
/// hits are the graph's alone.
fn agent_trace() -> String {
    use serde_json::json;
    let mut lines = Vec::new();
    for t in 0..4u64 {
        let (task, b) = (format!("t{t}"), 100 * (t + 1));
        lines.push(json!({"task": task, "call": "plan", "hash_ids": [b, b + 1, b + 2], "output_tokens": 8, "deadline_ms": 60000}));
        for (r, delay) in [(0u64, 100), (1, 250)] {
            lines.push(
                json!({"task": task, "call": format!("read-{r}"), "parents": ["plan"], "inherit": "plan",
                "hash_ids": [b + 10 + r], "delay_ms": delay, "output_tokens": 8}),
            );
        }
        lines.push(json!({"task": task, "call": "patch", "parents": ["read-0", "read-1"], "inherit": "plan",
            "hash_ids": [b + 20], "delay_ms": 50, "output_tokens": 8}));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

const RECIPE: &str = r##"
campaign "vllm-real" { seed 11; }
param "python" "python3"
param "weights" "missing"

server "vllm" {
    engine "vllm"
    python "{python}"
    weights "{weights}"
    model "smol"
    tokenizer "server"
    args "--max-model-len" "2048" "--dtype" "float32" "--enable-prompt-tokens-details"
    args "--enable-log-requests"
    env VLLM_CPU_KVCACHE_SPACE="1" HF_HUB_OFFLINE="1"
    ready timeout="15m"
    warmup requests=2 max-tokens=8
}
server "vllm-ngram" {
    engine "vllm"
    python "{python}"
    weights "{weights}"
    model "smol"
    tokenizer "{weights}/tokenizer.json"
    speculative-config #"{{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4,"prompt_lookup_min":2}}"#
    args "--max-model-len" "2048" "--dtype" "float32"
    env VLLM_CPU_KVCACHE_SPACE="1" HF_HUB_OFFLINE="1"
    ready timeout="15m"
    warmup requests=2 max-tokens=8
}

// Frozen by the test once it serves: stalled, and the server restarted.
cell "frozen" server="vllm" {
    context-tokens 32
    max-tokens 16
    requests 2000
    concurrency 2
    warmup-requests 0
    canaries #false
    stall-timeout "5s"
}
cell "exact" server="vllm" {
    context-tokens 200
    max-tokens 32
    concurrency 4
    requests 16
    warmup-requests 0
    keep-answers "1MB"
    extra-body { return_token_ids #true; }
}
cell "trace" server="vllm" {
    trace "trace.jsonl" format="mooncake" block-tokens=64
}
cell "agents" server="vllm" {
    agents "agents.jsonl" format="jsonl" block-tokens=64
    concurrency 2
}
// `--jobs 1`: one step at a time, in this order, so one engine at a time.
cell "spec" server="vllm-ngram" {
    context-tokens 200
    max-tokens 48
    concurrency 2
    requests 8
    warmup-requests 0
}
"##;

fn vllm_processes(model: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("vllm") && cmdline.contains(model) {
            found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

#[test]
fn a_real_vllm_launched_by_anvil_measures_exactly_and_leaves_nothing_behind() {
    let Some((python, model)) = vllm() else { return };
    let bench = Bench::new();
    bench.scratch.write("trace.jsonl", TRACE);
    bench.scratch.write("agents.jsonl", &agent_trace());
    // The install's paths as the params' defaults, so every later `plan` resolves as the run did.
    let text =
        RECIPE.replace(r#""python3""#, &format!("{python:?}")).replace(r#""missing""#, &format!("{model:?}"));
    let recipe = bench.recipe("vllm.kdl", &text);
    let run = bench.spawn_run(&recipe, &["--jobs", "1", "--keep-going"]);
    // Once the first cell's requests are under way (the 16 warm-up tokens
    // and some of its own), freeze the API server.
    let frozen =
        freeze_once_serving(&bench.marker(), "vllm:generation_tokens_total", 64.0, Duration::from_secs(600));
    let outcome = finish(run, "run").expect_code(1);
    let transcript = outcome.transcript();
    eprintln!("{transcript}");
    assert!(!alive(frozen), "the frozen vLLM was killed");
    assert!(transcript.contains("server `vllm` stalled: a request got no byte for 5000 ms"), "{transcript}");
    let statuses = bench.scratch.last_run_statuses();
    for (step, status) in
        [("frozen", "failed"), ("exact", "ran"), ("trace", "ran"), ("agents", "ran"), ("spec", "ran")]
    {
        assert_eq!(statuses[step], status, "{step}: {transcript}");
    }
    let plan = bench.plan(&recipe, &[]);
    let stored = |step: &str| bench.benchmark(&plan, step);

    // Canaries and token-exact prompts, counted by vLLM's /tokenize.
    let exact = stored("exact");
    assert_eq!(exact["engine"], "vllm", "{transcript}");
    assert_eq!(exact["metrics"]["request_canary_passed"], 16, "{}", exact["metrics"]);
    let lengths = &exact["tokens"]["prompt_length"];
    assert_eq!((lengths["met"].as_u64(), lengths["missed"].as_u64()), (Some(16), Some(0)), "{lengths}");

    // Its answers kept with vLLM's own token ids, one id per token its usage counted.
    let answers =
        std::fs::read_to_string(bench.entry(&plan, "exact").join("answers.jsonl")).expect("answers");
    let kept: Vec<serde_json::Value> = answers.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(kept.len(), 16, "{answers}");
    for answer in &kept {
        let index = answer["request_index"].as_u64().unwrap();
        let record =
            exact["request_timings"].as_array().unwrap().iter().find(|r| r["request_index"] == index);
        let counted = record.and_then(|r| r["output_tokens"].as_u64()).expect("the record's usage");
        let ids = answer["token_ids"].as_array().unwrap_or_else(|| panic!("no token ids: {answer}"));
        assert_eq!(ids.len() as u64, counted, "{answer}");
    }

    // The same with the model's tokenizer.json: both agree with vLLM's usage.
    let spec = stored("spec");
    let tokenizer = &spec["tokens"]["tokenizer"];
    assert!(tokenizer["source"].as_str().is_some_and(|s| s.ends_with("tokenizer.json")), "{tokenizer}");
    assert!(tokenizer["blake3"].is_string(), "{tokenizer}");
    let lengths = &spec["tokens"]["prompt_length"];
    assert_eq!((lengths["met"].as_u64(), lengths["missed"].as_u64()), (Some(8), Some(0)), "{lengths}");
    assert_eq!(spec["metrics"]["request_canary_passed"], 8, "{}", spec["metrics"]);

    // The trace's shared blocks, against vLLM's own count in its own blocks.
    let trace = stored("trace");
    let cache = &trace["tokens"]["prefix_cache"];
    assert_eq!(cache["block_tokens"], 128, "vLLM's CPU block, from its /metrics: {cache}");
    let ideal = cache["ideal_cached_tokens"].as_u64().unwrap();
    assert!(ideal > 0, "{cache}");
    assert_eq!(cache["server_cached_tokens"], cache["ideal_in_whole_blocks"], "{cache}");

    // Agent runs: each call at its parents' end plus its delay, and vLLM's
    // cached tokens are the graph's ideal ones in whole blocks.
    let agents = stored("agents");
    let records = agents["request_timings"].as_array().unwrap();
    assert_eq!(records.len(), 16, "every call of the four tasks");
    let end_of = |task: &serde_json::Value, call: u64| -> f64 {
        records
            .iter()
            .find(|r| r["agent"]["task"] == *task && r["agent"]["call"] == call)
            .and_then(|r| r["finished_ms"].as_f64())
            .expect("the parent's record")
    };
    let mut worst_lag: f64 = 0.0;
    for r in records {
        let a = &r["agent"];
        let parents: Vec<u64> =
            a["parents"].as_array().unwrap().iter().map(|p| p.as_u64().unwrap()).collect();
        let ready = parents
            .iter()
            .map(|&p| end_of(&a["task"], p))
            .fold(a["task_start_ms"].as_f64().unwrap(), f64::max);
        let intended = r["intended_send_ms"].as_f64().unwrap();
        assert!((intended - (ready + a["delay_ms"].as_f64().unwrap())).abs() < 1e-6, "{r}");
        let lag = r["actual_send_ms"].as_f64().unwrap() - intended;
        assert!(lag > -0.01, "sent early: {r}");
        worst_lag = worst_lag.max(lag);
    }
    assert!(worst_lag < 200.0, "a call was sent {worst_lag} ms late");
    let agent_cache = &agents["tokens"]["prefix_cache"];
    assert!(agent_cache["ideal_cached_tokens"].as_u64().unwrap() > 0, "{agent_cache}");
    assert_eq!(agent_cache["server_cached_tokens"], agent_cache["ideal_in_whole_blocks"], "{agent_cache}");
    assert_eq!(agents["metrics"]["tasks_completed"], 4, "{}", agents["metrics"]);

    // ngram speculation: acceptance per cell from vLLM's counters, re-derived.
    let delta = spec["telemetry"]["server_metrics_delta"][0]["delta"].clone();
    let counter = |name: &str| -> f64 {
        delta
            .as_object()
            .and_then(|m| m.iter().find(|(k, _)| k.starts_with(name)).and_then(|(_, v)| v.as_f64()))
            .unwrap_or_else(|| panic!("no {name} in {delta}"))
    };
    let (drafted, accepted) = (
        counter("vllm:spec_decode_num_draft_tokens_total{"),
        counter("vllm:spec_decode_num_accepted_tokens_total{"),
    );
    assert!(drafted > 0.0, "{delta}");
    let rate = spec["telemetry"]["server_derived"]["spec_acceptance_rate"].as_f64().unwrap();
    assert!((rate - accepted / drafted).abs() < 1e-12, "{rate} vs {accepted}/{drafted}");
    assert!(transcript.contains("draft acceptance"), "{transcript}");

    // Every request id anvil sent is in vLLM's own log of the cell.
    let log =
        std::fs::read_to_string(bench.entry(&plan, "exact").join("server-0.log")).expect("the server's log");
    let ids: Vec<&str> = exact["request_timings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["request_id"].as_str())
        .collect();
    assert_eq!(ids.len(), 16, "{}", exact["request_timings"]);
    let missing: Vec<&&str> = ids.iter().filter(|id| !log.contains(**id)).collect();
    assert!(missing.is_empty(), "request ids not in vLLM's log: {missing:?}");

    // Nothing of vLLM's is left: its API server, engine core and workers.
    let left = vllm_processes(&model);
    assert!(left.is_empty(), "left running: {left:#?}");
    eprintln!(
        "vllm: exact 16/16, tokenizer.json 8/8, cache {} of ideal {} ({} in whole 128-token blocks), acceptance {:.3} ({accepted}/{drafted}); agents: task p50 {} ms, {} tasks/min, cache {} of {} in whole blocks, worst send lag {worst_lag:.2} ms",
        cache["server_cached_tokens"],
        ideal,
        cache["ideal_in_whole_blocks"],
        rate,
        agents["metrics"]["task_p50_ms"],
        agents["metrics"]["tasks_per_min"],
        agent_cache["server_cached_tokens"],
        agent_cache["ideal_in_whole_blocks"]
    );
}
