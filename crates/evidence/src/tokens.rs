//! Re-derives an artifact's `tokens` tallies from its records, by
//! docs/metrics.md "Tokens": a request meets its prompt length when the
//! server's `prompt_tokens` equals its `prompt_tokens_expected`; the
//! prefix-cache sums are over requests with both an ideal and a server
//! count; the speculative sums over requests that report drafts.

use serde_json::{Value, json};

use crate::records::Req;
use crate::report::Checker;

/// Checks `tokens` against `reqs` (each part only where the artifact has it).
pub fn check(c: &mut Checker<'_>, artifact: &Value, reqs: &[Req<'_>]) {
    let (mut met, mut missed, mut unreported) = (0u64, 0u64, 0u64);
    let mut differences: Vec<i64> = Vec::new();
    let (mut cache_requests, mut ideal, mut cached, mut cached_where_none) = (0u64, 0u64, 0u64, 0u64);
    let (mut draft_requests, mut drafted, mut accepted) = (0u64, 0u64, 0u64);
    for r in reqs {
        if let Some(expected) = r.int("prompt_tokens_expected") {
            match r.int("prompt_tokens") {
                Some(got) => {
                    let difference = got as i64 - expected as i64;
                    differences.push(difference);
                    if difference == 0 {
                        met += 1
                    } else {
                        missed += 1
                    }
                    c.check(&r.path("prompt_length_met"), json!(difference == 0));
                }
                None => unreported += 1,
            }
        }
        if let (Some(i), Some(s)) = (r.int("ideal_cached_tokens"), r.int("cached_prompt_tokens")) {
            cache_requests += 1;
            ideal += i;
            cached += s;
            if i == 0 {
                cached_where_none += s;
            }
        }
        if let (Some(d), Some(a)) = (r.int("draft_tokens"), r.int("draft_accepted_tokens")) {
            draft_requests += 1;
            drafted += d;
            accepted += a;
        }
    }
    c.check("tokens.prompt_length.met", json!(met));
    c.check("tokens.prompt_length.missed", json!(missed));
    c.check("tokens.prompt_length.unreported", json!(unreported));
    c.check("tokens.prompt_length.difference_min", json!(differences.iter().min().copied().unwrap_or(0)));
    c.check("tokens.prompt_length.difference_max", json!(differences.iter().max().copied().unwrap_or(0)));
    c.check("tokens.prefix_cache.requests", json!(cache_requests));
    c.check("tokens.prefix_cache.ideal_cached_tokens", json!(ideal));
    c.check("tokens.prefix_cache.server_cached_tokens", json!(cached));
    c.check("tokens.prefix_cache.server_cached_where_ideal_is_zero", json!(cached_where_none));
    c.check("tokens.prefix_cache.ratio", json!((ideal > 0).then(|| cached as f64 / ideal as f64)));
    // The template's cached part (a probe's, before the clock) on every request but the first.
    if let Some(template) = artifact.pointer("/tokens/template_cached_tokens").and_then(Value::as_u64) {
        let with = ideal + template * cache_requests.saturating_sub(1);
        c.check("tokens.prefix_cache.ideal_with_template_tokens", json!(with));
        c.check(
            "tokens.prefix_cache.ratio_with_template",
            json!((with > 0).then(|| cached as f64 / with as f64)),
        );
    }
    c.check("tokens.speculative.requests", json!(draft_requests));
    c.check("tokens.speculative.draft_tokens", json!(drafted));
    c.check("tokens.speculative.accepted_tokens", json!(accepted));
    c.check(
        "tokens.speculative.acceptance_rate",
        json!((drafted > 0).then(|| accepted as f64 / drafted as f64)),
    );
}
