//! Counters behind `GET /metrics`, rendered in the Prometheus text format
//! with vLLM's metric names so dashboards and scrapers work unchanged.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::reply::FinishReason;

#[derive(Debug, Default)]
pub struct Metrics {
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    pub prefix_cache_queries: AtomicU64,
    pub prefix_cache_hits: AtomicU64,
    /// Speculative steps (one draft of `spec-draft-tokens` tokens each).
    pub spec_drafts: AtomicU64,
    pub spec_draft_tokens: AtomicU64,
    pub spec_accepted_tokens: AtomicU64,
    success_stop: AtomicU64,
    success_length: AtomicU64,
    success_tool_calls: AtomicU64,
}

impl Metrics {
    pub fn add(&self, counter: &AtomicU64, amount: u64) {
        counter.fetch_add(amount, Ordering::Relaxed);
    }

    pub fn set(&self, gauge: &AtomicU64, value: u64) {
        gauge.store(value, Ordering::Relaxed);
    }

    pub fn record_success(&self, reason: FinishReason) {
        let counter = match reason {
            FinishReason::Stop => &self.success_stop,
            FinishReason::Length => &self.success_length,
            FinishReason::ToolCalls => &self.success_tool_calls,
        };
        self.add(counter, 1);
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn render(&self, model_name: &str) -> String {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let label = format!("model_name=\"{}\"", model_name.replace('\\', "\\\\").replace('"', "\\\""));
        let mut out = String::with_capacity(2048);
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(&str, u64)]| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (extra, value) in samples {
                let _ = writeln!(out, "{name}{{{label}{extra}}} {value}");
            }
        };
        metric(
            "vllm:num_requests_running",
            "gauge",
            "Number of requests in the running batch (simulated).",
            &[("", load(&self.running))],
        );
        metric(
            "vllm:num_requests_waiting",
            "gauge",
            "Number of requests waiting to be scheduled (simulated).",
            &[("", load(&self.waiting))],
        );
        metric(
            "vllm:prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed (simulated).",
            &[("", load(&self.prompt_tokens))],
        );
        metric(
            "vllm:generation_tokens_total",
            "counter",
            "Number of generation tokens processed (simulated).",
            &[("", load(&self.generation_tokens))],
        );
        metric(
            "vllm:prefix_cache_queries_total",
            "counter",
            "Prefix cache queries, in tokens (simulated).",
            &[("", load(&self.prefix_cache_queries))],
        );
        metric(
            "vllm:prefix_cache_hits_total",
            "counter",
            "Prefix cache hits, in tokens (simulated).",
            &[("", load(&self.prefix_cache_hits))],
        );
        metric(
            "vllm:spec_decode_num_drafts_total",
            "counter",
            "Number of spec decoding drafts (simulated).",
            &[("", load(&self.spec_drafts))],
        );
        metric(
            "vllm:spec_decode_num_draft_tokens_total",
            "counter",
            "Number of draft tokens (simulated).",
            &[("", load(&self.spec_draft_tokens))],
        );
        metric(
            "vllm:spec_decode_num_accepted_tokens_total",
            "counter",
            "Number of accepted draft tokens (simulated).",
            &[("", load(&self.spec_accepted_tokens))],
        );
        metric(
            "vllm:request_success_total",
            "counter",
            "Count of successfully processed requests (simulated).",
            &[
                (",finished_reason=\"stop\"", load(&self.success_stop)),
                (",finished_reason=\"length\"", load(&self.success_length)),
                (",finished_reason=\"tool_calls\"", load(&self.success_tool_calls)),
            ],
        );
        metric(
            "anvil_sim_simulated",
            "gauge",
            "Always 1: this server is anvil's simulated engine.",
            &[("", 1)],
        );
        out
    }
}
