//! Token-exact prompts against the simulated engine over loopback HTTP:
//! with a tokenizer (the sim's own `/tokenize`, or SmolLM2's
//! `tokenizer.json`, whose one-token words are one sim token too) a
//! Mooncake trace's lines arrive as exactly their `input_length` plus the
//! chat template, synthetic prompts as exactly `context-tokens`, and the
//! server's cached tokens sit next to the ideal ones the trace implies.
//! The real engine's acceptance is `llama_trace.rs`.

use std::path::PathBuf;

use anvil_loadgen::{
    CellContext, CellReport, CellSpec, Progress, Target, TokenizerSpec, TraceFormat, TraceSpec, Traffic,
    run_cell,
};

use crate::traffic::run;

fn smollm2_tokenizer() -> TokenizerSpec {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/tokenizers/smollm2-135m/tokenizer.json");
    TokenizerSpec::File { path: PathBuf::from(path) }
}

fn trace_cell(tokenizer: TokenizerSpec) -> CellSpec {
    let trace = TraceSpec {
        path: PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/traces/mooncake-small.jsonl"
        )),
        format: TraceFormat::Mooncake,
        block_tokens: 16,
        time_scale: 0.25,
        start_ms: 0,
        duration_ms: None,
        max_requests: None,
        looped: false,
        ignore_eos: true,
    };
    CellSpec {
        name: "exact".into(),
        model: "sim-model".into(),
        concurrency: 64,
        seed: 11,
        request_timeout_ms: 30_000,
        traffic: Traffic::Trace(trace),
        tokenizer: Some(tokenizer),
        ..CellSpec::default()
    }
}

fn assert_every_prompt_exact(report: &CellReport) -> u64 {
    let a = &report.artifact;
    assert_eq!(a["failed"], 0, "{}", a["failures"]);
    let tokens = &a["tokens"];
    let overhead = tokens["template_overhead_tokens"].as_u64().expect("the template overhead");
    assert_eq!(overhead, 7, "the sim's chat template: 4 tokens before the message, 3 after");
    let mut built = 0;
    for r in &report.records {
        let id = r.request_id.as_deref().expect("an x-request-id");
        assert!(id.starts_with("anvil-") && id.ends_with(&format!("-{}", r.request_index)), "{id}");
        // A line sent as its own text (`text_input`) was not built from tokens.
        let Some(expected) = r.prompt_tokens_expected else { continue };
        assert_eq!(r.prompt_tokens, Some(expected), "record {}", r.request_index);
        assert_eq!(r.prompt_length_met, Some(true));
        built += 1;
    }
    assert!(built + 1 >= report.records.len(), "all but the verbatim line are exact");
    let lengths = &tokens["prompt_length"];
    assert_eq!(lengths["met"], built as u64, "{lengths}");
    assert_eq!((lengths["difference_min"].as_i64(), lengths["difference_max"].as_i64()), (Some(0), Some(0)));
    let checked = &tokens["checked_prompts"];
    assert!(checked["checked"].as_u64().unwrap() > 0 && checked["checked"] == checked["exact"], "{checked}");
    overhead
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_replays_token_exact_with_the_servers_tokenizer_and_a_tokenizer_json() {
    // SmolLM2's file twice: the second cell reuses the alphabet the first found (checked to hold).
    let mut alphabets = Vec::new();
    for tokenizer in [TokenizerSpec::Server, smollm2_tokenizer(), smollm2_tokenizer()] {
        let report = run(trace_cell(tokenizer.clone())).await;
        alphabets.push(report.artifact["tokens"]["alphabet"].clone());
        assert_every_prompt_exact(&report);
        let tokens = &report.artifact["tokens"];
        assert_eq!(tokens["tokenizer"]["source"], tokenizer.as_written().as_str());
        // The sim caches whole 16-token blocks, which is what the trace's ids are:
        // on an unbounded cache the server's cached tokens are the ideal ones.
        for r in report.records.iter().filter(|r| r.ideal_cached_tokens.is_some()) {
            assert_eq!(r.cached_prompt_tokens, r.ideal_cached_tokens, "record {}", r.request_index);
        }
        let cache = &tokens["prefix_cache"];
        assert!(cache["ideal_cached_tokens"].as_u64().unwrap() >= 8 * 16, "{cache}");
        assert_eq!(cache["ratio"], 1.0, "{cache}");
    }
    assert_eq!(alphabets[1], alphabets[2], "the same words, whether found again or reused");
}

fn synthetic_cell(tokenizer: TokenizerSpec, instructions: bool) -> CellSpec {
    CellSpec {
        name: "exact-synthetic".into(),
        model: "sim-model".into(),
        context_tokens: 300,
        concurrency: 4,
        requests: 12,
        max_tokens: 8,
        seed: 5,
        canaries: instructions,
        response_words: if instructions { 20 } else { 0 },
        request_timeout_ms: 30_000,
        tokenizer: Some(tokenizer),
        ..CellSpec::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synthetic_prompts_are_exactly_context_tokens_of_content() {
    // The server's own tokenizer counts the instructions as the server does;
    // SmolLM2's words are one sim token each, with no instructions to differ on.
    for (tokenizer, instructions) in [(TokenizerSpec::Server, true), (smollm2_tokenizer(), false)] {
        let report = run(synthetic_cell(tokenizer, instructions)).await;
        let overhead = assert_every_prompt_exact(&report);
        for r in &report.records {
            assert_eq!(r.prompt_tokens, Some(300 + overhead), "300 tokens of content, instructions included");
        }
        assert!(report.artifact["calibration"].is_null(), "nothing to calibrate: the lengths are exact");
        let instruction_tokens = &report.artifact["tokens"]["instruction_tokens"];
        assert_eq!(instruction_tokens.is_u64(), instructions, "{instruction_tokens}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokenizer_that_is_not_the_servers_shows_in_every_record() {
    // SmolLM2 and the sim count the instructions' text differently: the
    // server's own count says so, request by request and for the cell.
    let report = run(synthetic_cell(smollm2_tokenizer(), true)).await;
    assert_eq!(report.artifact["failed"], 0);
    assert!(report.records.iter().all(|r| r.prompt_length_met == Some(false)), "every prompt missed");
    let lengths = &report.artifact["tokens"]["prompt_length"];
    assert_eq!((lengths["met"].as_u64(), lengths["missed"].as_u64()), (Some(0), Some(12)), "{lengths}");
    assert!(lengths["difference_min"].as_i64().unwrap() != 0, "{lengths}");
}

fn dataset_cell(tokenizer: TokenizerSpec, min: Option<u64>, max: Option<u64>, truncate: bool) -> CellSpec {
    let dataset = anvil_loadgen::DatasetSpec {
        path: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/datasets/prompts.jsonl")),
        format: anvil_loadgen::DatasetFormat::Jsonl,
        min_prompt_tokens: min,
        max_prompt_tokens: max,
        truncate,
    };
    CellSpec {
        name: "exact-dataset".into(),
        model: "sim-model".into(),
        concurrency: 4,
        requests: 20,
        max_tokens: 8,
        seed: 5,
        request_timeout_ms: 30_000,
        traffic: Traffic::Dataset(dataset),
        tokenizer: Some(tokenizer),
        ..CellSpec::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_is_counted_in_tokens_and_held_to_its_bounds() {
    // The server's tokenizer: every prompt's length is known, so every record is checked.
    let report = run(dataset_cell(TokenizerSpec::Server, Some(3), Some(9), false)).await;
    let a = &report.artifact;
    assert_eq!(a["failed"], 0, "{}", a["failures"]);
    let bounds = &a["traffic"]["token_bounds"];
    // The sim counts ceil(chars / 4) per word: "Say hello." is 3, the planets line 10.
    assert!(bounds["dropped_too_long"].as_u64().unwrap() >= 1, "{bounds}");
    assert_eq!(
        a["traffic"]["entries"].as_u64().unwrap()
            + bounds["dropped_too_long"].as_u64().unwrap()
            + bounds["dropped_too_short"].as_u64().unwrap(),
        11
    );
    for r in &report.records {
        let expected = r.prompt_tokens_expected.expect("a counted prompt's expected length");
        assert_eq!(r.prompt_tokens, Some(expected), "record {}", r.request_index);
        let content = expected - a["tokens"]["template_overhead_tokens"].as_u64().unwrap();
        assert!((3..=9).contains(&content), "within the bounds: {content}");
    }
    // SmolLM2's tokenizer.json cuts the long prompts to their first 6 tokens.
    let report = run(dataset_cell(smollm2_tokenizer(), None, Some(6), true)).await;
    let bounds = &report.artifact["traffic"]["token_bounds"];
    assert!(
        bounds["truncated"].as_u64().unwrap() >= 5,
        "most lines are longer than 6 SmolLM2 tokens: {bounds}"
    );
    assert_eq!(bounds["dropped_too_long"], 0);
    // Each record expects its prompt's SmolLM2 count (the sim counts otherwise:
    // only the expectation is checked here), at most the 6 kept.
    let overhead = report.artifact["tokens"]["template_overhead_tokens"].as_u64().unwrap();
    let contents: Vec<u64> =
        report.records.iter().map(|r| r.prompt_tokens_expected.expect("counted") - overhead).collect();
    assert!(contents.iter().all(|&c| (1..=6).contains(&c)), "{contents:?}");
    assert!(
        contents.iter().filter(|&&c| c == 6).count() >= 5,
        "the cut ones are 6 tokens again: {contents:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_bounds_without_a_tokenizer_are_refused() {
    let mut cell = dataset_cell(TokenizerSpec::Server, Some(3), None, false);
    cell.tokenizer = None;
    let target = [Target {
        base_url: "http://127.0.0.1:9".into(),
        api_key: None,
        label: "x".into(),
        tls: Default::default(),
    }];
    let err = match run_cell(&cell, &target, &CellContext::default(), &|_: &Progress| {}).await {
        Ok(_) => panic!("bounds without a tokenizer ran"),
        Err(err) => err,
    };
    assert!(format!("{err:#}").contains("give its server a `tokenizer`"), "{err:#}");
}
