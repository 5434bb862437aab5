//! A server's Prometheus metrics sampled *during* a cell, not only around
//! it: every `interval`, one scrape, of which the series that say how the
//! server is doing now are kept (KV-cache use, running and waiting
//! requests, prefix-cache and speculative-decoding counters, tokens, a
//! DCGM exporter's power and energy). The rest of a scrape (histogram
//! buckets, process figures) is dropped so memory stays a few values per
//! second.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::metrics::{metric_name, scrape_metrics_with_tls};

/// Name fragments of the series worth a time series (vLLM, SGLang,
/// llama.cpp, anvil's simulated engine with vLLM's names, DCGM).
const KEPT: &[&str] = &[
    "kv_cache_usage",
    "gpu_cache_usage",
    "num_requests_running",
    "num_requests_waiting",
    "requests_processing",
    "requests_deferred",
    "num_running_reqs",
    "num_queue_reqs",
    "token_usage",
    "cache_hit_rate",
    "prefix_cache_queries",
    "prefix_cache_hits",
    "cached_tokens_total",
    "spec_decode_num_drafts",
    "spec_decode_num_draft_tokens",
    "spec_decode_num_accepted_tokens",
    "spec_accept",
    "prompt_tokens_total",
    "generation_tokens_total",
    "tokens_predicted_total",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_POWER_USAGE",
];

/// Whether a series is kept in the sampled series.
pub fn kept_in_series(key: &str) -> bool {
    let name = metric_name(key);
    !name.contains("per_pos") && !name.ends_with("_bucket") && KEPT.iter().any(|k| name.contains(k))
}

/// One scrape: when (after the sampler started) and the kept values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricsSample {
    pub at_ms: f64,
    pub values: BTreeMap<String, f64>,
}

/// What the sampler saw of one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampledMetrics {
    pub interval_ms: u64,
    /// When sampling started, on the wall clock (ns since the Unix epoch),
    /// so the samples line up with the requests' `request_start_unix_ns`.
    pub started_unix_ns: u64,
    pub samples: Vec<MetricsSample>,
    /// Scrapes that failed (the first error is kept).
    pub failed_scrapes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

pub struct MetricsSampler {
    stop: Arc<Notify>,
    task: JoinHandle<SampledMetrics>,
}

impl MetricsSampler {
    /// Starts scraping `base_url` every `interval` (the first scrape at once).
    pub fn start(base_url: &str, tls: &anvil_net::TlsSettings, interval: Duration) -> Self {
        let stop = Arc::new(Notify::new());
        let (base_url, tls, stopped) = (base_url.to_string(), tls.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let started_unix_ns =
                SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
            let mut out = SampledMetrics {
                interval_ms: interval.as_millis() as u64,
                started_unix_ns,
                samples: Vec::new(),
                failed_scrapes: 0,
                first_error: None,
            };
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stopped.notified() => break,
                    _ = ticks.tick() => {}
                }
                let at_ms = started.elapsed().as_secs_f64() * 1000.0;
                match scrape_metrics_with_tls(&base_url, &tls).await {
                    Ok(all) => {
                        let values = all.into_iter().filter(|(k, _)| kept_in_series(k)).collect();
                        out.samples.push(MetricsSample { at_ms, values });
                    }
                    Err(e) => {
                        out.failed_scrapes += 1;
                        out.first_error.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            out
        });
        Self { stop, task }
    }

    /// Stops sampling now, mid-scrape if need be, and keeps nothing.
    pub fn abort(self) {
        self.task.abort();
    }

    /// Stops sampling and returns what was sampled.
    pub async fn stop(self) -> SampledMetrics {
        self.stop.notify_one();
        self.task.await.unwrap_or_else(|e| SampledMetrics {
            interval_ms: 0,
            started_unix_ns: 0,
            samples: Vec::new(),
            failed_scrapes: 0,
            first_error: Some(format!("the sampler failed: {e}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_series_that_say_how_the_server_is_doing() {
        assert!(kept_in_series("vllm:num_requests_running{model_name=\"m\"}"));
        assert!(kept_in_series("llamacpp:spec_decode_num_accepted_tokens_total"));
        assert!(kept_in_series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"}"));
        assert!(kept_in_series("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"}"));
        assert!(!kept_in_series("vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"}"));
        assert!(!kept_in_series("vllm:time_to_first_token_seconds_bucket{le=\"0.1\"}"));
        assert!(!kept_in_series("process_resident_memory_bytes"));
    }
}
