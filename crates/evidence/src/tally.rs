//! What one streaming pass keeps of a population of requests (the cell, a
//! repeat, a stage, a target): counts and sums that the records add to as
//! they arrive, the pooled chunk gaps by value, and the wall span of each
//! repeat. None of it grows with the request count.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::gaps::Pool;
use crate::records::Req;

/// Per-request keys whose mere presence (null or not) in some record
/// decides whether a figure is derivable.
pub const TRACKED: [&str; 23] = [
    "output_tokens",
    "decode_tok_s",
    "e2e_ms",
    "effective_prefill_tok_s",
    "generation_ms",
    "mean_inter_token_latency_ms",
    "mean_time_per_output_token_ms",
    "prompt_tokens",
    "time_to_first_output_ms",
    "tpot_ms",
    "ttft_ms",
    "visible_generation_ms",
    "tokens_per_chunk",
    "chunk_gaps_us",
    "send_lag_ms",
    "first_content_read_delay_us",
    "ttft_from_schedule_ms",
    "e2e_from_schedule_ms",
    "cached_prompt_tokens",
    "slo_met",
    "http_status",
    "planned_context_tokens",
    "failure",
];

/// Latest `finished_ms` and earliest `actual_send_ms` of some records.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    first: f64,
    last: f64,
    complete: bool,
}

impl Default for Span {
    fn default() -> Self {
        Self { first: f64::INFINITY, last: f64::NEG_INFINITY, complete: true }
    }
}

impl Span {
    pub fn add(&mut self, send: Option<f64>, finished: Option<f64>) {
        match (send, finished) {
            (Some(s), Some(f)) => {
                self.first = self.first.min(s);
                self.last = self.last.max(f);
            }
            _ => self.complete = false,
        }
    }

    /// `last − first`, at least 0; `None` when a record lacked either time.
    pub fn ms(&self) -> Option<f64> {
        self.complete.then(|| (self.last - self.first).max(0.0))
    }
}

#[derive(Debug, Clone, Default)]
pub struct Tally {
    present: u32,
    pub attempted: u64,
    pub eligible: u64,
    pub successful: u64,
    pub output_tokens: u64,
    pub prompt_tokens: u64,
    pub prompt_token_samples: u64,
    pub content_chunks: u64,
    pub reasoning_chunks: u64,
    pub output_token_sources: BTreeMap<String, u64>,
    pub controlled: u64,
    pub controlled_exact: u64,
    pub controlled_unobservable: u64,
    pub canaries: u64,
    pub canaries_passed: u64,
    /// Σ and count of cached/prompt over eligible requests reporting both.
    pub hit_sum: f64,
    pub hits: u64,
    pub good: u64,
    pub good_tokens: u64,
    /// Every element of `chunk_gaps_us` of eligible requests, in ms; only
    /// in a tally made by [`Tally::pooling`] (the populations whose
    /// `chunk_gap` distribution is checked: the cell, a stage).
    pub gaps: Option<Pool>,
    /// Wall span per repeat.
    pub spans: BTreeMap<u64, Span>,
}

impl Tally {
    /// A tally that also pools chunk gaps.
    pub fn pooling() -> Self {
        Self { gaps: Some(Pool::default()), ..Self::default() }
    }

    pub fn add(&mut self, r: &Req<'_>) {
        for (i, key) in TRACKED.iter().enumerate() {
            if r.raw.contains_key(*key) {
                self.present |= 1 << i;
            }
        }
        self.attempted += 1;
        self.successful += u64::from(r.successful());
        self.spans.entry(r.repeat).or_default().add(r.num("actual_send_ms"), r.num("finished_ms"));
        let flag = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
        if let Some(c) = r.get("controlled_output") {
            self.controlled += 1;
            self.controlled_exact += u64::from(flag(c, "exact"));
            self.controlled_unobservable += u64::from(!flag(c, "observable"));
        }
        if let Some(c) = r.get("request_canary") {
            self.canaries += 1;
            self.canaries_passed += u64::from(flag(c, "passed"));
        }
        if r.get("slo_met").and_then(Value::as_bool) == Some(true) {
            self.good += 1;
            self.good_tokens += r.int("output_tokens").unwrap_or(0);
        }
        if !r.eligible {
            return;
        }
        self.eligible += 1;
        self.output_tokens += r.int("output_tokens").unwrap_or(0);
        self.prompt_tokens += r.int("prompt_tokens").unwrap_or(0);
        self.prompt_token_samples += u64::from(r.int("prompt_tokens").is_some());
        self.content_chunks += r.int("content_chunks").unwrap_or(0);
        self.reasoning_chunks += r.int("reasoning_chunks").unwrap_or(0);
        if let Some(s) = r.get("output_token_source").and_then(Value::as_str) {
            *self.output_token_sources.entry(s.to_string()).or_default() += 1;
        }
        let hit = r.int("cached_prompt_tokens").zip(r.int("prompt_tokens").filter(|p| *p > 0));
        if let Some((cached, prompt)) = hit {
            self.hit_sum += cached as f64 / prompt as f64;
            self.hits += 1;
        }
        if let (Some(pool), Some(gaps)) = (&mut self.gaps, r.get("chunk_gaps_us").and_then(Value::as_array)) {
            for us in gaps.iter().filter_map(Value::as_f64) {
                pool.add_micros(us);
            }
        }
    }

    /// Whether some record carried `key` (one of [`TRACKED`]), null or not.
    pub fn has(&self, key: &str) -> bool {
        TRACKED.iter().position(|k| *k == key).is_some_and(|i| self.present & (1 << i) != 0)
    }

    /// Σ over repeats of each repeat's span; `None` when a record lacked a time.
    pub fn wall_ms(&self) -> Option<f64> {
        self.spans.values().map(Span::ms).sum::<Option<f64>>()
    }

    /// The repeats present, ascending.
    pub fn repeats(&self) -> Vec<u64> {
        self.spans.keys().copied().collect()
    }
}
