//! A cell's view of its server's Prometheus metrics: one scrape before
//! and one after (their deltas), and a series sampled in between at
//! [`SAMPLE_INTERVAL`], so the report can draw the server's KV-cache use,
//! queue and acceptance next to the client's per-second series.

use std::collections::BTreeMap;
use std::time::Duration;

use anvil_loadgen::{ReplicaMetrics, ReplicaSeries};

use super::servers::ServerInfo;

/// How often the series is sampled. One scrape a second costs the cell
/// less than its run-to-run noise (docs/servers.md "Engine identity and metrics").
/// `ANVIL_METRICS_INTERVAL_MS=0` turns sampling off.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

type Scrape = Result<BTreeMap<String, f64>, String>;

/// The prefix-cache block the server says it uses in its own `/metrics`
/// (vLLM: `vllm:cache_config_info{block_size="128",…}`; SGLang:
/// `sglang:page_size`), from the first replica that says.
pub fn cache_block_tokens(scrapes: &[Scrape]) -> Option<u64> {
    scrapes.iter().flatten().flat_map(|metrics| metrics.iter()).find_map(|(key, value)| {
        // SGLang: the page its radix cache matches in, as a gauge.
        if key == "sglang:page_size" || key.starts_with("sglang:page_size{") {
            return (*value >= 1.0).then_some(*value as u64);
        }
        let labels = key.strip_prefix("vllm:cache_config_info{")?;
        let value = labels.split("block_size=\"").nth(1)?.split('"').next()?;
        value.parse().ok()
    })
}

/// Each replica's metrics (an error where `/metrics` is not served).
pub async fn scrape_all(server: &ServerInfo) -> Vec<Scrape> {
    let mut out = Vec::new();
    for target in &server.targets {
        let scraped = anvil_proc::scrape_metrics_with_tls(&target.base_url, &target.tls).await;
        out.push(scraped.map_err(|e| e.to_string()));
    }
    out
}

/// Each replica's counters, after minus before.
pub fn deltas(server: &ServerInfo, before: &[Scrape], after: &[Scrape]) -> Vec<ReplicaMetrics> {
    server
        .targets
        .iter()
        .zip(before.iter().zip(after))
        .map(|(target, pair)| match pair {
            (Ok(b), Ok(a)) => ReplicaMetrics {
                replica: target.label.clone(),
                delta: Some(anvil_proc::metric_deltas(b, a)),
                unavailable: None,
            },
            (Err(e), _) | (_, Err(e)) => {
                ReplicaMetrics { replica: target.label.clone(), delta: None, unavailable: Some(e.clone()) }
            }
        })
        .collect()
}

/// The samplers of a cell's replicas, while it runs.
pub struct SeriesSampling(Vec<(String, anvil_proc::MetricsSampler)>);

impl SeriesSampling {
    pub fn start(server: &ServerInfo) -> Self {
        let interval = match std::env::var("ANVIL_METRICS_INTERVAL_MS").ok().and_then(|v| v.parse().ok()) {
            Some(0) => return Self(Vec::new()),
            Some(ms) => Duration::from_millis(ms),
            None => SAMPLE_INTERVAL,
        };
        Self(
            server
                .targets
                .iter()
                .map(|t| (t.label.clone(), anvil_proc::MetricsSampler::start(&t.base_url, &t.tls, interval)))
                .collect(),
        )
    }

    /// Stops sampling at once, keeping nothing (a stalled server's scrapes
    /// would each wait out their timeout).
    pub fn abort(self) {
        for (_, sampler) in self.0 {
            sampler.abort();
        }
    }

    /// Stops sampling; a replica that served no metrics at all is left out.
    pub async fn stop(self) -> Vec<ReplicaSeries> {
        let mut out = Vec::new();
        for (replica, sampler) in self.0 {
            let sampled = sampler.stop().await;
            if sampled.samples.is_empty() {
                continue;
            }
            let mut series: ReplicaSeries =
                serde_json::to_value(&sampled).and_then(serde_json::from_value).unwrap_or_default();
            series.replica = replica;
            out.push(series);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cache_block_comes_from_vllms_cache_config_info() {
        let text = "vllm:cache_config_info{_block_size_resolved=\"True\",block_size=\"128\",engine=\"0\"} 1.0\n";
        let scrape = anvil_proc::parse_prometheus_text(text);
        assert_eq!(super::cache_block_tokens(&[Err("down".into()), Ok(scrape)]), Some(128));
        assert_eq!(super::cache_block_tokens(&[]), None);
        let sglang = anvil_proc::parse_prometheus_text("sglang:page_size{model_name=\"m\"} 64\n");
        assert_eq!(super::cache_block_tokens(&[Ok(sglang)]), Some(64));
    }
}
