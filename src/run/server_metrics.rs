//! A cell's view of its server's Prometheus metrics: one scrape before
//! and one after (their deltas), and a series sampled in between at
//! [`SAMPLE_INTERVAL`], so the report can draw the server's KV-cache use,
//! queue and acceptance next to the client's per-second series. The
//! server's `scrape` targets (a DCGM exporter, a node exporter) are read
//! with its replicas, each labelled with its URL.

use std::collections::BTreeMap;
use std::time::Duration;

use anvil_loadgen::{ReplicaMetrics, ReplicaSeries};
use anvil_net::TlsSettings;

use super::server_info::ScrapeTarget;
use super::server_info::ServerInfo;

/// How often the series is sampled. One scrape a second costs the cell
/// less than its run-to-run noise (docs/servers.md "Engine identity and metrics").
/// `ANVIL_METRICS_INTERVAL_MS=0` turns sampling off.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// Counters whose names do not say so (Prometheus' `_total`, `_count`, …):
/// DCGM's, which its exporter declares `counter`. Their deltas are after −
/// before too, like the engines' counters.
const COUNTERS_BY_TYPE: &[&str] = &[
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
];

pub(super) type Scrape = Result<BTreeMap<String, f64>, String>;

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

/// The server's `scrape` URLs (checked by the recipe's loader) as targets,
/// each read once however often it is listed.
pub fn scrape_targets(urls: &[String], tls: &TlsSettings) -> Vec<ScrapeTarget> {
    let mut targets: Vec<ScrapeTarget> = Vec::new();
    for url in urls {
        let Ok(base_url) = crate::scrape_url::scrape_base_url(url) else { continue };
        if targets.iter().all(|t| &t.url != url) {
            targets.push(ScrapeTarget { url: url.clone(), base_url: base_url.to_string(), tls: tls.clone() });
        }
    }
    targets
}

/// A `/metrics` a cell reads: a replica's, or a `scrape` target's.
struct Endpoint<'a> {
    label: &'a str,
    base_url: &'a str,
    tls: &'a TlsSettings,
    scrape_target: bool,
}

/// The replicas first, then the `scrape` targets.
fn endpoints(server: &ServerInfo) -> impl Iterator<Item = Endpoint<'_>> {
    let replicas = server.targets.iter().map(|t| Endpoint {
        label: &t.label,
        base_url: &t.base_url,
        tls: &t.tls,
        scrape_target: false,
    });
    let scraped = server.scrape_targets.iter().map(|t| Endpoint {
        label: &t.url,
        base_url: &t.base_url,
        tls: &t.tls,
        scrape_target: true,
    });
    replicas.chain(scraped)
}

/// Each replica's metrics, then each `scrape` target's (an error where
/// `/metrics` could not be read).
pub async fn scrape_all(server: &ServerInfo) -> Vec<Scrape> {
    let mut out = Vec::new();
    for endpoint in endpoints(server) {
        let scraped = anvil_proc::scrape_metrics_with_tls(endpoint.base_url, endpoint.tls).await;
        out.push(scraped.map_err(|e| e.to_string()));
    }
    out
}

/// Each replica's and `scrape` target's counters, after minus before.
pub fn deltas(server: &ServerInfo, before: &[Scrape], after: &[Scrape]) -> Vec<ReplicaMetrics> {
    endpoints(server)
        .zip(before.iter().zip(after))
        .map(|(endpoint, pair)| {
            let (delta, unavailable) = match pair {
                (Ok(b), Ok(a)) => (Some(metric_deltas(b, a)), None),
                (Err(e), _) | (_, Err(e)) => (None, Some(e.clone())),
            };
            ReplicaMetrics {
                replica: endpoint.label.to_string(),
                scrape_target: endpoint.scrape_target,
                delta,
                unavailable,
            }
        })
        .collect()
}

/// anvil-proc's deltas, with [`COUNTERS_BY_TYPE`] as counters: after −
/// before (after, where the counter went down); one missing before is left
/// out, its increase unknown (DCGM's count from the GPU's boot, not from 0).
fn metric_deltas(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    let mut deltas = anvil_proc::metric_deltas(before, after);
    deltas.retain(|key, value| {
        if !COUNTERS_BY_TYPE.contains(&anvil_proc::metric_name(key)) {
            return true;
        }
        let Some(then) = before.get(key) else { return false };
        if *value >= *then {
            *value -= then;
        }
        true
    });
    deltas
}

/// The samplers of a cell's replicas, while it runs.
pub struct SeriesSampling(Vec<(String, bool, anvil_proc::MetricsSampler)>);

impl SeriesSampling {
    pub fn start(server: &ServerInfo) -> Self {
        let interval = match std::env::var("ANVIL_METRICS_INTERVAL_MS").ok().and_then(|v| v.parse().ok()) {
            Some(0) => return Self(Vec::new()),
            Some(ms) => Duration::from_millis(ms),
            None => SAMPLE_INTERVAL,
        };
        Self(
            endpoints(server)
                .map(|e| {
                    let sampler = anvil_proc::MetricsSampler::start(e.base_url, e.tls, interval);
                    (e.label.to_string(), e.scrape_target, sampler)
                })
                .collect(),
        )
    }

    /// Stops sampling at once, keeping nothing (a stalled server's scrapes
    /// would each wait out their timeout).
    pub fn abort(self) {
        for (_, _, sampler) in self.0 {
            sampler.abort();
        }
    }

    /// Stops sampling; a replica that served no metrics at all is left
    /// out, a `scrape` target is kept with its failed scrapes (it was asked for).
    pub async fn stop(self) -> Vec<ReplicaSeries> {
        let mut out = Vec::new();
        for (replica, scrape_target, sampler) in self.0 {
            let sampled = sampler.stop().await;
            if sampled.samples.is_empty() && !scrape_target {
                continue;
            }
            let mut series: ReplicaSeries =
                serde_json::to_value(&sampled).and_then(serde_json::from_value).unwrap_or_default();
            series.replica = replica;
            series.scrape_target = scrape_target;
            out.push(series);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn dcgms_energy_is_a_counter_though_its_name_does_not_say_so() {
        let text = |mj: f64| {
            format!(
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"0\"}} {mj}\nDCGM_FI_DEV_POWER_USAGE{{gpu=\"0\"}} 300\n"
            )
        };
        let before = anvil_proc::parse_prometheus_text(&text(5_000_000.0));
        let after = anvil_proc::parse_prometheus_text(&text(5_004_000.0));
        let d = super::metric_deltas(&before, &after);
        assert_eq!(d["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"}"], 4000.0);
        assert_eq!(d["DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"}"], 300.0, "a gauge: its value after");
        // A counter that went down (reset): its value after; one not there before: left out.
        let mut reset = anvil_proc::parse_prometheus_text(&text(7.0));
        reset.insert("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\"}".into(), 9.0);
        let d = super::metric_deltas(&after, &reset);
        assert_eq!(d["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"}"], 7.0);
        assert_eq!(d.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\"}"), None);
    }

    #[test]
    fn scrape_targets_are_read_once_at_their_base() {
        let urls =
            ["http://127.0.0.1:9400/metrics", "http://h:9100/metrics/", "http://127.0.0.1:9400/metrics"];
        let urls: Vec<String> = urls.iter().map(|u| u.to_string()).collect();
        let targets = super::scrape_targets(&urls, &Default::default());
        let bases: Vec<&str> = targets.iter().map(|t| t.base_url.as_str()).collect();
        assert_eq!(bases, ["http://127.0.0.1:9400", "http://h:9100"]);
    }

    #[test]
    fn the_cache_block_comes_from_vllms_cache_config_info() {
        let text =
            "vllm:cache_config_info{_block_size_resolved=\"True\",block_size=\"128\",engine=\"0\"} 1.0\n";
        let scrape = anvil_proc::parse_prometheus_text(text);
        assert_eq!(super::cache_block_tokens(&[Err("down".into()), Ok(scrape)]), Some(128));
        assert_eq!(super::cache_block_tokens(&[]), None);
        let sglang = anvil_proc::parse_prometheus_text("sglang:page_size{model_name=\"m\"} 64\n");
        assert_eq!(super::cache_block_tokens(&[Ok(sglang)]), Some(64));
    }
}
