//! A server's `tokenizer` through the anvil binary: the cells on it replay
//! a trace token-exact (the artifact's `tokens` says so, request by
//! request), the server's metrics are sampled during the cell and its
//! speculative counters give the acceptance, the tokenizer's content is in
//! the fingerprint, and a bad `tokenizer` is a recipe error at its line.

use serde_json::Value;

use crate::common::Scratch;

const FIXTURE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizers/smollm2-135m/tokenizer.json");
const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/traces/mooncake-small.jsonl");

fn recipe(scratch: &Scratch, tokenizer: &str) -> std::path::PathBuf {
    scratch.write(
        "tokens.kdl",
        &format!(
            r#"
server "sim" {{
    model "m"
    tokenizer "{tokenizer}"
    sim {{ prefill-tok-s 100000; decode-step-ms 2; prefix-cache-block-tokens 16; spec-draft-tokens 4; spec-acceptance 0.6; }}
}}
cell "replay" server="sim" {{
    trace "trace.jsonl" format="mooncake" block-tokens=16 time-scale=4.0
}}
"#
        ),
    )
}

#[test]
fn a_servers_tokenizer_makes_its_cells_token_exact_and_enters_the_fingerprint() {
    let scratch = Scratch::new();
    scratch.write("trace.jsonl", &std::fs::read_to_string(TRACE).unwrap());
    scratch.write("tok/tokenizer.json", &std::fs::read_to_string(FIXTURE).unwrap());
    let path = recipe(&scratch, "tok");
    scratch.run(&path, &[], 0);
    let a: Value = scratch.stored_json(&path, "replay", "benchmark.json");
    let tokens = &a["tokens"];
    assert!(tokens["tokenizer"]["source"].as_str().unwrap().ends_with("/tok"), "the folder given: {tokens}");
    assert!(tokens["tokenizer"]["location"].as_str().unwrap().ends_with("tok/tokenizer.json"));
    assert_eq!(a["resolved_cell"]["tokenizer"]["kind"], "file", "{}", a["resolved_cell"]);
    let lengths = &tokens["prompt_length"];
    assert_eq!((lengths["difference_min"].as_i64(), lengths["difference_max"].as_i64()), (Some(0), Some(0)));
    assert_eq!(lengths["met"], 19, "every line built from tokens: {lengths}");
    for r in a["request_timings"].as_array().unwrap() {
        assert!(r["request_id"].as_str().is_some_and(|id| id.starts_with("anvil-")), "{r}");
    }
    // The sim's metrics were sampled during the cell; its draft counters give the acceptance.
    let telemetry = &a["telemetry"];
    let series = telemetry["server_metrics_series"].as_array().expect("sampled series");
    assert!(!series[0]["samples"].as_array().unwrap().is_empty(), "{telemetry}");
    let rate = telemetry["server_derived"]["spec_acceptance_rate"].as_f64().expect("acceptance");
    assert!(rate > 0.2 && rate < 0.9, "sim acceptance 0.6 per token, until the first rejection: {rate}");
    let report = scratch.anvil(&["report", path.to_str().unwrap(), "-o", "r.html"]).expect_code(0);
    let html = scratch.read("r.html");
    assert!(html.contains("gauges during the cell"), "{}", report.transcript());
    assert!(html.contains("speculative decoding accepted"), "the acceptance line");
    assert!(html.contains("prompt lengths: 19 of 19 as planned"), "the report's tokens section");
    let shown = scratch.anvil(&["show", &format!("{}:replay", path.to_str().unwrap())]).expect_code(0);
    assert!(shown.stdout.contains("prompt lengths: 19 of 19 as planned"), "{}", shown.transcript());
    assert!(shown.stdout.contains("prefix cache: the server cached"), "{}", shown.transcript());

    // `anvil verify` re-derives the tallies from the records, and an edited one fails.
    scratch.write("artifact.json", &serde_json::to_string(&a).unwrap());
    let verified = scratch.anvil(&["verify", "artifact.json"]).expect_code(0);
    assert!(verified.stdout.contains("verified: clean"), "{}", verified.transcript());
    let mut edited = a.clone();
    edited["tokens"]["prompt_length"]["met"] = serde_json::json!(18);
    scratch.write("edited.json", &serde_json::to_string(&edited).unwrap());
    let refused = scratch.anvil(&["verify", "edited.json"]).expect_code(1);
    assert!(refused.stdout.contains("tokens.prompt_length.met"), "{}", refused.transcript());

    // The tokenizer's content is the fingerprint's, not only its name.
    let before = scratch.plan(&path, &[]).fingerprint("replay");
    let mut changed = std::fs::read_to_string(FIXTURE).unwrap();
    changed.push('\n');
    scratch.write("tok/tokenizer.json", &changed);
    let after = scratch.plan(&path, &[]);
    assert_ne!(after.fingerprint("replay"), before, "a changed tokenizer.json moves the cell");
    assert!(after.pending().contains(&"replay".to_string()));
}

#[test]
fn a_bad_tokenizer_is_a_recipe_error_at_its_line() {
    let scratch = Scratch::new();
    let path = recipe(&scratch, "hf:no-org");
    let out = scratch.anvil(&["plan", path.to_str().unwrap()]).expect_code(2);
    let text = out.transcript();
    assert!(text.contains("hf:ORG/NAME") && text.contains("tokens.kdl:4"), "{text}");
}

#[test]
fn dataset_token_bounds_that_cannot_hold_are_recipe_errors() {
    let scratch = Scratch::new();
    scratch.write("d.jsonl", "{\"prompt\": \"hello there\"}\n");
    for (props, says) in [
        ("truncate=#true", "cuts prompts to `max-prompt-tokens=`"),
        ("min-prompt-tokens=9 max-prompt-tokens=3", "is above `max-prompt-tokens=3`"),
    ] {
        let path = scratch.write(
            "bounds.kdl",
            &format!(
                "server \"sim\" {{ model \"m\"; tokenizer \"server\"; }}\ncell \"c\" server=\"sim\" {{\n    dataset \"d.jsonl\" format=\"jsonl\" {props}\n}}\n"
            ),
        );
        let text = scratch.anvil(&["plan", path.to_str().unwrap()]).expect_code(2).transcript();
        assert!(text.contains(says) && text.contains("bounds.kdl:3"), "{text}");
    }
}

#[test]
fn a_draft_depth_screen_shows_acceptance_next_to_throughput() {
    let scratch = Scratch::new();
    let path = scratch.write(
        "depth.kdl",
        r#"
server "k2" { model "m"; sim { decode-step-ms 2; spec-draft-tokens 2; spec-acceptance 0.7; } }
server "k8" { model "m"; sim { decode-step-ms 4; spec-draft-tokens 8; spec-acceptance 0.7; } }
workload "w" { context-tokens 64; max-tokens 32; requests 8; concurrency 4; canaries #false; }
cell "depth-k2" server="k2" workload="w"
cell "depth-k8" server="k8" workload="w"
screen "draft-depth" { over "cell.depth-*"; metric "aggregate_tok_s"; }
"#,
    );
    let run = scratch.run(&path, &[], 0);
    assert!(run.transcript().contains("draft acceptance"), "{}", run.transcript());
    let rate = |cell: &str| {
        let a: Value = scratch.stored_json(&path, cell, "benchmark.json");
        a["telemetry"]["server_derived"]["spec_acceptance_rate"].as_f64().expect("acceptance")
    };
    // Each draft token is accepted with 0.7 until the first rejection: a deeper
    // draft has its later tokens accepted less often.
    assert!(rate("depth-k2") > rate("depth-k8"), "{} vs {}", rate("depth-k2"), rate("depth-k8"));
    scratch.anvil(&["report", path.to_str().unwrap(), "-o", "depth.html"]).expect_code(0);
    let html = scratch.read("depth.html");
    assert!(html.contains("draft acceptance"), "the screen's table has the acceptance column");
}

#[test]
fn an_hf_tokenizer_is_read_from_the_local_cache_and_never_fetched() {
    let scratch = Scratch::new();
    let hub = scratch.path().join("hub");
    let snapshot = hub.join("models--HuggingFaceTB--SmolLM2-135M-Instruct/snapshots/0123abc");
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::create_dir_all(hub.join("models--HuggingFaceTB--SmolLM2-135M-Instruct/refs")).unwrap();
    std::fs::write(hub.join("models--HuggingFaceTB--SmolLM2-135M-Instruct/refs/main"), "0123abc").unwrap();
    std::fs::copy(FIXTURE, snapshot.join("tokenizer.json")).unwrap();
    let path = scratch.write(
        "hf.kdl",
        r#"
server "sim" { model "m"; tokenizer "hf:HuggingFaceTB/SmolLM2-135M-Instruct"; sim { decode-step-ms 1; } }
cell "c" server="sim" { context-tokens 40; max-tokens 4; requests 3; canaries #false; }
"#,
    );
    let mut command = scratch.command();
    command.env("HF_HUB_CACHE", &hub).args(["run", path.to_str().unwrap()]);
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The store's one cell entry (a plan here, without the cache in its
    // environment, would fingerprint the cell otherwise).
    let a = only_benchmark(&scratch.store());
    let tokens = &a["tokens"];
    assert_eq!(tokens["tokenizer"]["source"], "hf:HuggingFaceTB/SmolLM2-135M-Instruct");
    assert!(tokens["tokenizer"]["location"].as_str().unwrap().ends_with("snapshots/0123abc/tokenizer.json"));
    assert_eq!(tokens["alphabet"]["words"], 603, "SmolLM2's one-token words: {tokens}");
    // Not in the cache: the run fails with what to do, and nothing is downloaded.
    let mut command = scratch.command();
    command.env("HF_HUB_CACHE", scratch.path().join("empty")).args(["run", path.to_str().unwrap()]);
    let out = command.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success() && text.contains("never downloads"), "{text}");
}

/// The one `benchmark.json` in `store`'s entries.
fn only_benchmark(store: &std::path::Path) -> Value {
    let mut found = Vec::new();
    for shard in std::fs::read_dir(store.join("entries")).unwrap().flatten() {
        for entry in std::fs::read_dir(shard.path()).unwrap().flatten() {
            let file = entry.path().join("benchmark.json");
            if file.is_file() {
                found.push(file);
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    serde_json::from_str(&std::fs::read_to_string(&found[0]).unwrap()).unwrap()
}
