//! `abort-on-errors`: a cell on a server that refuses half its load (the
//! simulated engine's 429 fault, over real HTTP) stops sending once its
//! budget is spent, counts the refusals apart from server errors, and says
//! its figures are not eligible.

use crate::common::Scratch;

fn recipe(requests: u32, budget: &str) -> String {
    format!(
        r#"
server "sim" {{
    model "m"
    sim {{
        decode-step-ms 1
        faults {{ http-429-rate 0.5; }}
    }}
}}
cell "storm" server="sim" {{
    // A dataset: synthetic prompts would first calibrate their length
    // with a probe request, which the fault refuses as well.
    dataset "prompts.jsonl" format="jsonl"
    max-tokens 4
    requests {requests}
    concurrency 4
    canaries #false
    {budget}
}}
"#
    )
}

fn with_prompts() -> Scratch {
    let scratch = Scratch::new();
    let prompts = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/datasets/prompts.jsonl");
    std::fs::copy(prompts, scratch.path().join("prompts.jsonl")).expect("copy the prompts");
    scratch
}

#[test]
fn half_the_requests_refused_stops_the_cell_and_counts_the_rejections() {
    let scratch = with_prompts();
    let path = scratch.write("recipe.kdl", &recipe(400, "abort-on-errors \"20%\" after=50"));
    let outcome = scratch.run(&path, &["--json"], 0);
    let transcript = outcome.transcript();
    assert!(transcript.contains("error storm"), "{transcript}");
    assert_eq!(crate::broken_inputs::fault_of(&outcome.json(), "storm"), "error-storm", "{transcript}");
    let artifact = scratch.stored_json(&path, "storm", "benchmark.json");
    let ending = &artifact["ending"];
    assert_eq!(ending["reason"], "error-storm", "{ending}");
    assert!(ending["detail"].as_str().unwrap().contains("rejected"), "{ending}");
    let unsent = ending["unsent"].as_u64().unwrap();
    assert!(unsent > 200, "it stopped soon after 50 requests ended, not at 400: {unsent} unsent");
    // 429 is a rejection, not an HTTP error, and nothing else failed.
    let counts = &artifact["failure_counts"];
    let rejected = counts["rejected"].as_u64().unwrap_or(0);
    assert!(rejected >= 10, "{counts}");
    assert!(counts.get("http_status").is_none(), "a 429 is not a server error: {counts}");
    assert_eq!(artifact["failed"].as_u64(), Some(rejected), "{counts}");
    assert_eq!(artifact["performance_eligible"], false);
    // Not retried: every request the cell sent is one record, ended once.
    let sent = 400 - unsent;
    assert_eq!(artifact["requests"].as_u64(), Some(sent), "one attempt per request");
}

#[test]
fn without_a_budget_the_storm_runs_to_the_end() {
    let scratch = with_prompts();
    let path = scratch.write("recipe.kdl", &recipe(100, ""));
    scratch.run(&path, &[], 0);
    let artifact = scratch.stored_json(&path, "storm", "benchmark.json");
    assert_eq!(artifact["requests"], 100);
    assert_eq!(artifact["ending"]["reason"], "completed");
    let rejected = artifact["failure_counts"]["rejected"].as_u64().unwrap();
    assert!((30..=70).contains(&rejected), "about half of 100 refused: {rejected}");
}

#[test]
fn a_bad_budget_is_refused_at_its_line() {
    let scratch = with_prompts();
    for (budget, says) in [
        ("abort-on-errors \"20\"", "takes one share of failed requests"),
        ("abort-on-errors \"20%\" after=0", "after=` takes a count of requests"),
        ("abort-on-errors \"20%\" within=3", "has no property `within`"),
    ] {
        let path = scratch.write("recipe.kdl", &recipe(400, budget));
        let outcome = scratch.anvil(&["plan", path.to_str().unwrap()]).expect_code(2);
        assert!(outcome.stderr.contains(says), "{budget}: {}", outcome.stderr);
        assert!(outcome.stderr.contains("recipe.kdl:17:5"), "{budget}: {}", outcome.stderr);
    }
}
