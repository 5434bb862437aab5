//! Re-derives an artifact's `tokens` tallies from its records, by
//! docs/metrics.md "Tokens": a request meets its prompt length when the
//! server's `prompt_tokens` equals its `prompt_tokens_expected`; the
//! prefix-cache sums are over requests with both an ideal and a server
//! count; the speculative sums over requests that report drafts.

use serde_json::{Map, Value, json};

use crate::records::Req;
use crate::report::{Checker, RecordChecker};

/// The `tokens` tallies, added to one record at a time.
#[derive(Debug, Default)]
pub struct Tokens {
    met: u64,
    missed: u64,
    unreported: u64,
    /// Smallest and largest server − expected prompt length.
    difference: Option<(i64, i64)>,
    cache_requests: u64,
    ideal: u64,
    cached: u64,
    cached_where_none: u64,
    draft_requests: u64,
    drafted: u64,
    accepted: u64,
}

impl Tokens {
    /// Adds record `r` and checks its own `prompt_length_met`.
    pub fn add(&mut self, c: &mut RecordChecker<'_>, r: &Req<'_>) {
        if let Some(expected) = r.int("prompt_tokens_expected") {
            match r.int("prompt_tokens") {
                Some(got) => {
                    let difference = got as i64 - expected as i64;
                    self.difference = Some(match self.difference {
                        Some((lo, hi)) => (lo.min(difference), hi.max(difference)),
                        None => (difference, difference),
                    });
                    if difference == 0 {
                        self.met += 1
                    } else {
                        self.missed += 1
                    }
                    c.check("prompt_length_met", json!(difference == 0));
                }
                None => self.unreported += 1,
            }
        }
        if let (Some(i), Some(s)) = (r.int("ideal_cached_tokens"), r.int("cached_prompt_tokens")) {
            self.cache_requests += 1;
            self.ideal += i;
            self.cached += s;
            if i == 0 {
                self.cached_where_none += s;
            }
        }
        if let (Some(d), Some(a)) = (r.int("draft_tokens"), r.int("draft_accepted_tokens")) {
            self.draft_requests += 1;
            self.drafted += d;
            self.accepted += a;
        }
    }

    /// Checks `tokens` against the records added (each part only where the artifact has it).
    pub fn check(&self, c: &mut Checker<'_>, artifact: &Map<String, Value>) {
        let (ideal, cached, cache_requests) = (self.ideal, self.cached, self.cache_requests);
        let (drafted, accepted) = (self.drafted, self.accepted);
        c.check("tokens.prompt_length.met", json!(self.met));
        c.check("tokens.prompt_length.missed", json!(self.missed));
        c.check("tokens.prompt_length.unreported", json!(self.unreported));
        let (low, high) = self.difference.unwrap_or((0, 0));
        c.check("tokens.prompt_length.difference_min", json!(low));
        c.check("tokens.prompt_length.difference_max", json!(high));
        c.check("tokens.prefix_cache.requests", json!(cache_requests));
        c.check("tokens.prefix_cache.ideal_cached_tokens", json!(ideal));
        c.check("tokens.prefix_cache.server_cached_tokens", json!(cached));
        c.check("tokens.prefix_cache.server_cached_where_ideal_is_zero", json!(self.cached_where_none));
        c.check("tokens.prefix_cache.ratio", json!((ideal > 0).then(|| cached as f64 / ideal as f64)));
        // The template's cached part (a probe's, before the clock) on every request but the first.
        if let Some(template) =
            artifact.get("tokens").and_then(|t| t.get("template_cached_tokens")).and_then(Value::as_u64)
        {
            let with = ideal + template * cache_requests.saturating_sub(1);
            c.check("tokens.prefix_cache.ideal_with_template_tokens", json!(with));
            c.check(
                "tokens.prefix_cache.ratio_with_template",
                json!((with > 0).then(|| cached as f64 / with as f64)),
            );
        }
        c.check("tokens.speculative.requests", json!(self.draft_requests));
        c.check("tokens.speculative.draft_tokens", json!(drafted));
        c.check("tokens.speculative.accepted_tokens", json!(accepted));
        c.check(
            "tokens.speculative.acceptance_rate",
            json!((drafted > 0).then(|| accepted as f64 / drafted as f64)),
        );
    }
}
