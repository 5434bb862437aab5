//! Real traffic through the whole tool: recipes that replay a trace, run
//! multi-turn sessions and sample a dataset on the simulated engine; the
//! files' content in the fingerprints (and nowhere else), bundles that
//! carry them, and the errors a user sees for a bad `trace`/`sessions`.

use std::io::Read as _;

use crate::common::{Scratch, entry_dir};
use anvil::recipe::Kind;
use anvil::recipe::decls::fields_of;
use serde_json::Value;

const MOONCAKE: &str = include_str!("../examples/traces/mooncake-small.jsonl");
const SHAREGPT: &str = include_str!("../examples/datasets/chat.sharegpt.json");

const RECIPE: &str = r#"
campaign "traffic" {
    seed 5
}

server "sim" {
    engine "sim"
    model "test-model"
    sim {
        prefill-tok-s 100000
        decode-step-ms 1
        prefix-cache-block-tokens 16
    }
}

workload "replay" {
    trace "data/trace.jsonl" format="mooncake" block-tokens=16
}

cell "replay" server="sim" workload="replay"

cell "chat" server="sim" {
    context-tokens 30
    max-tokens 12
    sessions 8 turns=3 think-time="10ms" {
        turn "Hello, can you help me plan a short trip?"
    }
}

cell "prompts" server="sim" {
    dataset "data/chat.sharegpt.json" format="sharegpt"
    requests 6
    concurrency 3
    max-tokens 16
}

cell "plain" server="sim" {
    requests 4
    context-tokens 64
}
"#;

fn scratch() -> (Scratch, std::path::PathBuf) {
    let scratch = Scratch::new();
    scratch.write("data/trace.jsonl", MOONCAKE);
    scratch.write("data/chat.sharegpt.json", SHAREGPT);
    let recipe = scratch.write("recipe.kdl", RECIPE);
    (scratch, recipe)
}

fn artifact(scratch: &Scratch, fingerprint: &str) -> Value {
    let path = entry_dir(&scratch.store(), fingerprint).join("benchmark.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("benchmark.json is JSON")
}

#[test]
fn a_recipe_replays_a_trace_runs_sessions_and_samples_a_dataset() {
    let (scratch, recipe) = scratch();
    let summary = scratch.run(&recipe, &[], 0).summary();
    assert_eq!(summary.failed, 0);
    let plan = scratch.plan(&recipe, &[]);

    let replay = artifact(&scratch, &plan.fingerprint("replay"));
    assert_eq!(replay["simulated"], true);
    assert_eq!(replay["arrival"]["kind"], "trace");
    assert_eq!(replay["traffic"]["requests_per_repeat"], 20);
    let records = replay["request_timings"].as_array().expect("records");
    assert_eq!(records.len(), 20);
    let mut lines: Vec<u64> = records.iter().map(|r| r["trace_line"].as_u64().expect("trace_line")).collect();
    lines.sort();
    assert_eq!(lines, (1..=20).collect::<Vec<_>>(), "every line once, named by its number");
    let cached = |line: u64| {
        records
            .iter()
            .find(|r| r["trace_line"] == line)
            .map(|r| r["cached_prompt_tokens"].as_u64().unwrap())
            .unwrap()
    };
    assert_eq!(cached(1), 0, "the first line: nothing before it");
    assert_eq!(cached(3), 32, "shares ids 1, 2 with line 1");
    assert_eq!(cached(2), 0, "unique ids");
    assert!(records.iter().all(|r| r["output_length_met"] == true));

    let chat = artifact(&scratch, &plan.fingerprint("chat"));
    let per_turn = chat["traffic"]["per_turn"].as_array().expect("per-turn figures");
    let prompt = |k: usize| per_turn[k]["prompt_tokens"]["mean"].as_f64().unwrap();
    assert!(prompt(0) < prompt(1) && prompt(1) < prompt(2), "the conversation grows");
    assert!(per_turn.iter().all(|t| t["ttft_ms"]["p50"].is_number() && t["requests"] == 8));
    assert!(per_turn[2]["cached_prompt_tokens"]["min"].as_f64().unwrap() > 0.0, "turns hit their history");

    let prompts = artifact(&scratch, &plan.fingerprint("prompts"));
    let entries: Vec<u64> = prompts["request_timings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["dataset_entry"].as_u64().unwrap())
        .collect();
    assert_eq!(entries.len(), 6);
    assert_eq!(prompts["traffic"]["entries"], 12);

    let plain = artifact(&scratch, &plan.fingerprint("plain"));
    assert!(plain.get("traffic").is_none(), "synthetic cells gain no key");
    assert!(plain["request_timings"][0].get("trace_line").is_none());
}

#[test]
fn the_files_enter_only_their_own_cells_fingerprints() {
    let (scratch, recipe) = scratch();
    let before = scratch.plan(&recipe, &[]).fingerprints();
    assert_eq!(before, scratch.plan(&recipe, &[]).fingerprints(), "same files, same seed: same fingerprints");
    // One more line in the trace: the replay reruns, nothing else.
    scratch.write("data/trace.jsonl", &format!("{MOONCAKE}{{\"timestamp\": 3000, \"input_length\": 16, \"output_length\": 4, \"hash_ids\": [99]}}\n"));
    let after = scratch.plan(&recipe, &[]).fingerprints();
    let changed: Vec<&String> = before.keys().filter(|k| before[*k] != after[*k]).collect();
    assert_eq!(changed, ["replay"]);
    // Another campaign seed samples other prompts: the dataset cell changes (as every cell does).
    scratch.write("recipe.kdl", &RECIPE.replace("seed 5", "seed 6"));
    assert_ne!(scratch.plan(&recipe, &[]).fingerprint("prompts"), after["prompts"]);
}

#[test]
fn a_bundle_carries_the_trace_and_the_dataset() {
    let (scratch, recipe) = scratch();
    scratch.run(&recipe, &[], 0);
    scratch.anvil(&["export", "recipe.kdl", "-o", "traffic.anvil"]).expect_code(0);
    let file = std::fs::File::open(scratch.path().join("traffic.anvil")).expect("bundle");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut found = Vec::new();
    for entry in archive.entries().expect("a tar archive") {
        let mut entry = entry.expect("an entry");
        let name = entry.path().expect("a path").to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read");
        if name.ends_with("trace.jsonl") {
            assert_eq!(bytes, MOONCAKE.as_bytes());
        }
        found.push(name);
    }
    assert!(found.iter().any(|n| n.ends_with("data/trace.jsonl")), "{found:?}");
    assert!(found.iter().any(|n| n.ends_with("data/chat.sharegpt.json")), "{found:?}");
}

#[test]
fn bad_traffic_settings_are_clear_errors_at_their_line() {
    let scratch = Scratch::new();
    let cases = [
        ("trace \"t.jsonl\"", "`trace` needs format= \"mooncake\" or \"jsonl\", found nothing"),
        ("trace \"t.jsonl\" format=\"mooncake\" speed=2", "`trace` has no property `speed`"),
        (
            "trace \"t.jsonl\" format=\"jsonl\" loop=#true",
            "a looping trace needs `duration=` or `max-requests=` to end",
        ),
        ("sessions 4 turns=1 { turn \"a\"; turn \"b\"; }", "`sessions` gives 2 `turn` texts for 1 turns"),
        ("sessions 2\n    dataset \"d.json\" format=\"sharegpt\"", "sets both `dataset` and `sessions`"),
        (
            "dataset \"d.json\" format=\"csv\"",
            // The scored formats (docs/workloads.md) follow; the message wraps after them.
            "`dataset` needs format= \"sharegpt\" or \"jsonl\" or \"anvil\" or \"gsm8k\"",
        ),
    ];
    // Load stages (`stage`) are another engineer's field: checked once it exists.
    let staged = fields_of(Kind::Cell).iter().any(|f| f.name == "stage");
    let stage_case = [(
        "trace \"t.jsonl\" format=\"mooncake\"\n    stage rate=1 duration=\"1s\"",
        "sets both `trace` and `stage`",
    )];
    for (setting, message) in cases.into_iter().chain(stage_case.into_iter().filter(|_| staged)) {
        let recipe = scratch.write(
            "recipe.kdl",
            &format!("server \"sim\" {{ model \"m\"; }}\ncell \"c\" server=\"sim\" {{\n    {setting}\n}}\n"),
        );
        let outcome = scratch.anvil(&["plan", recipe.to_str().unwrap()]).expect_code(2);
        assert!(outcome.stderr.contains(message), "{setting}: {}", outcome.transcript());
        assert!(
            outcome.stderr.contains("recipe.kdl:3:") || outcome.stderr.contains("recipe.kdl:4:"),
            "{}",
            outcome.transcript()
        );
    }
    // A trace file that is not there stops the run before it starts, with
    // its path at the recipe's line (tests/broken_inputs.rs has the rest).
    let recipe = scratch.write(
        "recipe.kdl",
        "server \"sim\" { model \"m\"; }\ncell \"c\" server=\"sim\" {\n    trace \"missing.jsonl\" format=\"mooncake\"\n}\n",
    );
    let outcome = scratch.run(&recipe, &[], 2);
    assert!(
        outcome.stderr.contains("missing.jsonl") && outcome.stderr.contains("recipe.kdl:3:5"),
        "{}",
        outcome.transcript()
    );
}

/// Every recipe in docs/workloads.md plans (next to copies of the example
/// files), and the trace replays run.
#[test]
fn the_workloads_doc_recipes_plan_and_run() {
    let doc = include_str!("../docs/workloads.md");
    let mut blocks = Vec::new();
    let mut rest = doc;
    while let Some(start) = rest.find("```kdl\n") {
        let body = &rest[start + 7..];
        let end = body.find("```").expect("a closed block");
        blocks.push(body[..end].to_string());
        rest = &body[end..];
    }
    assert!(blocks.len() >= 4, "{} kdl blocks", blocks.len());
    let scratch = Scratch::new();
    let root = env!("CARGO_MANIFEST_DIR");
    for dir in ["examples/traces", "examples/datasets", "examples/agents"] {
        for file in std::fs::read_dir(format!("{root}/{dir}")).expect("examples") {
            let file = file.expect("entry").path();
            let name = format!("{dir}/{}", file.file_name().unwrap().to_string_lossy());
            scratch.write(&name, &std::fs::read_to_string(&file).expect("example"));
        }
    }
    for (i, block) in blocks.iter().enumerate() {
        let recipe = scratch.write(&format!("workloads-{i}.kdl"), block);
        let plan = scratch.anvil(&["plan", recipe.to_str().unwrap()]).expect_code(0);
        // The example files hold only keys their formats read.
        assert!(!plan.stderr.contains("warning:"), "docs/workloads.md block {i}:\n{}", plan.stderr);
        // The trace replays are seconds long: they run too (the files are found).
        if block.contains("trace \"examples/traces/") {
            let summary = scratch.run(&recipe, &[], 0).summary();
            assert_eq!(summary.failed, 0, "docs/workloads.md block {i}:\n{block}");
        }
    }
}
