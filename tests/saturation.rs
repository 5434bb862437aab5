//! Over-saturation at the end: a simulated server with room for 4
//! sequences and 3 s replies (capacity ~1.3 req/s) offered 20 req/s (15×).
//! Its 60 requests are all sent in 3 s, before the watch can tell a full
//! server from one that is merely filling, and all of them end, the last
//! ~45 s later; the cell completes with numbers of a load the server never
//! carried. The verdict at the end marks it, with the rule on and off, in
//! the artifact's `ending.drain` and on the cell's line.

use serde_json::Value;

use crate::common::Scratch;

fn recipe(slots: u32) -> String {
    format!(
        r#"
server "sim" {{
    model "slow"
    sim {{
        decode-step-ms 10
        decode-step-ms-per-seq 0
        max-running-seqs {slots}
        output-tokens 300
    }}
}}
workload "w" {{
    context-tokens 128
    max-tokens 300
    thinking "off"
    arrival "poisson"
    rate 20
    requests 60
    warmup-requests 0
    canaries #false
    concurrency 512
}}
cell "watched" server="sim" workload="w" {{ stop-when-saturated #true; }}
cell "unwatched" server="sim" workload="w" {{ stop-when-saturated #false; }}
"#
    )
}

#[test]
fn a_server_at_fifteen_times_capacity_is_marked_over_saturated_at_the_end() {
    let scratch = Scratch::new();
    let recipe = scratch.write("fifteen.kdl", &recipe(4));
    let outcome = scratch.run(&recipe, &[], 0);
    let transcript = outcome.transcript();
    for cell in ["watched", "unwatched"] {
        let artifact: Value = scratch.stored_json(&recipe, cell, "benchmark.json");
        let ending = &artifact["ending"];
        // Every request was sent and ended: the cell completed, its numbers kept.
        assert_eq!(ending["reason"], "completed", "{cell}: {ending}");
        assert_eq!(artifact["request_timings"].as_array().unwrap().len(), 60, "{cell}");
        let drain = &ending["drain"];
        assert_eq!(drain["over_saturated"], true, "{cell}: {drain}");
        let offered = drain["offered_rate_per_s"].as_f64().unwrap();
        let achieved = drain["achieved_rate_per_s"].as_f64().unwrap();
        // Poisson sends of 30 each half: the offered rate within a factor of 2 of 20/s;
        // the achieved one near the server's 1.33 req/s.
        assert!((10.0..40.0).contains(&offered), "{cell}: {drain}");
        assert!((0.9..2.0).contains(&achieved), "{cell}: {drain}");
    }
    let marked = transcript.lines().filter(|l| l.contains("over-saturated at the end: ")).count();
    assert_eq!(marked, 2, "both cells' lines say so: {transcript}");
    assert!(!transcript.contains("stopped early"), "{transcript}");
}

#[test]
fn a_server_with_room_for_the_load_is_not_marked() {
    // The same load on room for 512 sequences: 3 s replies, 60 in flight at most.
    let scratch = Scratch::new();
    let recipe = scratch.write("roomy.kdl", &recipe(512));
    let outcome = scratch.run(&recipe, &[], 0);
    for cell in ["watched", "unwatched"] {
        let artifact: Value = scratch.stored_json(&recipe, cell, "benchmark.json");
        let drain = &artifact["ending"]["drain"];
        assert_eq!(drain["over_saturated"], false, "{cell}: {drain}");
        let (offered, achieved) =
            (drain["offered_rate_per_s"].as_f64().unwrap(), drain["achieved_rate_per_s"].as_f64().unwrap());
        assert!(achieved > 0.9 * offered, "{cell}: {drain}");
    }
    assert!(!outcome.transcript().contains("over-saturated"), "{}", outcome.transcript());
}
