//! Cold means cold: a cell of unique prompts whose server already holds
//! them (a forced rerun against the same running server) says so in its
//! run line and its artifact (`tokens.cold`), from the cached tokens the
//! server itself reported; the first, cold run does not.

use crate::common::Scratch;
use crate::support_servers::ExternalSim;

#[test]
fn a_forced_rerun_against_the_same_running_server_says_it_was_cache_hot() {
    // An engine outside anvil, so its prefix cache outlives the runs.
    let sim = ExternalSim::start(&["prefix-cache=true"]);
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "cold.kdl",
        &format!(
            r#"
server "warm" {{ url "{url}"; }}
cell "c" server="warm" {{
    context-tokens 256
    max-tokens 8
    requests 8
    concurrency 2
    warmup-requests 0
}}
"#,
            url = sim.url()
        ),
    );
    let first = scratch.run(&recipe, &[], 0);
    assert!(!first.transcript().contains("CACHE-HOT"), "{}", first.transcript());
    let artifact = scratch.stored_json(&recipe, "c", "benchmark.json");
    let cold = &artifact["tokens"]["cold"];
    assert_eq!(cold["hot"], false, "{cold}");
    assert_eq!(cold["requests"], 8, "{cold}");
    assert_eq!(cold["requests_hit"], 0, "{cold}");

    // The same seeded prompts again: the server still holds them.
    let again = scratch.run(&recipe, &["--force", "c"], 0);
    let text = again.transcript();
    assert!(text.contains("CACHE-HOT"), "{text}");
    assert!(text.contains("of 8 requests): not a cold measurement"), "{text}");
}
