//! The `metrics` block of one population of requests (a cell, or one
//! repeat), derived from the records' stored per-request values.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::records::{Req, any_has, values};
use crate::stats::{PERCENTILES, Summary};
use crate::{batch_means, quantile_interval};

/// Percentiles whose 95% interval the artifact carries.
const INTERVAL_PERCENTILES: [u32; 4] = [50, 90, 95, 99];

/// A derived figure, or why it cannot be derived.
#[derive(Debug, Clone, PartialEq)]
pub enum Derived {
    Value(Value),
    Unknown(String),
}

/// Population a distribution is taken over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Population {
    Eligible,
    Attempted,
}

/// How a distribution's per-request values are read.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// A numeric per-request key.
    Key(&'static str),
    /// A numeric per-request key that records may leave out (an absent key
    /// is no value, not an unknown one): the from-schedule latencies, which
    /// only open-loop requests carry.
    OptionalKey(&'static str),
    /// A per-request integer in µs, divided by 1000 (ms).
    Micros(&'static str),
    /// Every element of a per-request array of µs, pooled, / 1000.
    PooledMicros(&'static str),
}

/// One distribution metric of the artifact.
#[derive(Debug, Clone, Copy)]
pub struct DistDef {
    pub name: &'static str,
    /// Millisecond metrics put `_ms` after the statistic (`ttft_p50_ms`).
    pub millis: bool,
    pub source: Source,
    pub population: Population,
}

const fn d(name: &'static str, millis: bool, source: Source, population: Population) -> DistDef {
    DistDef { name, millis, source, population }
}

use Population::{Attempted, Eligible};
use Source::{Key, Micros, OptionalKey, PooledMicros};

/// Every distribution metric benchmark/v1 (and anvil) writes.
pub const DISTRIBUTIONS: [DistDef; 18] = [
    d("completion_tokens", false, Key("output_tokens"), Eligible),
    d("decode_tok_s", false, Key("decode_tok_s"), Eligible),
    d("e2e", true, Key("e2e_ms"), Eligible),
    d("effective_prefill_tok_s", false, Key("effective_prefill_tok_s"), Eligible),
    d("generation", true, Key("generation_ms"), Eligible),
    d("mean_inter_token_latency_ms", false, Key("mean_inter_token_latency_ms"), Eligible),
    d("mean_time_per_output_token", true, Key("mean_time_per_output_token_ms"), Eligible),
    d("prompt_tokens", false, Key("prompt_tokens"), Eligible),
    d("time_to_first_output", true, Key("time_to_first_output_ms"), Eligible),
    d("tpot", true, Key("tpot_ms"), Eligible),
    d("ttft", true, Key("ttft_ms"), Eligible),
    d("visible_generation", true, Key("visible_generation_ms"), Eligible),
    d("tokens_per_chunk", false, Key("tokens_per_chunk"), Eligible),
    d("chunk_gap", true, PooledMicros("chunk_gaps_us"), Eligible),
    d("send_lag", true, Key("send_lag_ms"), Attempted),
    d("first_content_read_delay", true, Micros("first_content_read_delay_us"), Eligible),
    d("ttft_from_schedule", true, OptionalKey("ttft_from_schedule_ms"), Eligible),
    d("e2e_from_schedule", true, OptionalKey("e2e_from_schedule_ms"), Eligible),
];

impl DistDef {
    pub fn key(&self, stat: &str) -> String {
        if stat == "samples" {
            format!("{}_samples", self.name)
        } else if self.millis {
            format!("{}_{stat}_ms", self.name)
        } else {
            format!("{}_{stat}", self.name)
        }
    }

    fn source_key(&self) -> &'static str {
        match self.source {
            Key(k) | OptionalKey(k) | Micros(k) | PooledMicros(k) => k,
        }
    }

    /// The per-request values, or `None` when no record carries the source key.
    pub fn values(&self, all: &[&Req<'_>]) -> Option<Vec<f64>> {
        let pop: Vec<&Req<'_>> = match self.population {
            Eligible => all.iter().copied().filter(|r| r.eligible).collect(),
            Attempted => all.to_vec(),
        };
        if !matches!(self.source, OptionalKey(_)) && !any_has(all, self.source_key()) {
            return None;
        }
        Some(match self.source {
            Key(k) | OptionalKey(k) => values(&pop, k),
            Micros(k) => values(&pop, k).into_iter().map(|us| us / 1000.0).collect(),
            PooledMicros(k) => pop
                .iter()
                .filter_map(|r| r.get(k).and_then(Value::as_array))
                .flat_map(|a| a.iter().filter_map(Value::as_f64).map(|us| us / 1000.0))
                .collect(),
        })
    }

    /// The full block: 12 statistics and `samples`.
    pub fn block(&self, all: &[&Req<'_>], ci_z: f64) -> Vec<(String, Derived)> {
        let stats = ["mean", "stddev", "mean_ci95_low", "mean_ci95_high", "min"];
        let mut keys: Vec<String> = stats.iter().map(|s| self.key(s)).collect();
        keys.extend(PERCENTILES.iter().map(|p| self.key(&format!("p{p}"))));
        keys.push(self.key("max"));
        for p in INTERVAL_PERCENTILES {
            keys.push(self.key(&format!("p{p}_ci95_low")));
            keys.push(self.key(&format!("p{p}_ci95_high")));
        }
        keys.push(self.key("mean_batch_ci95_low"));
        keys.push(self.key("mean_batch_ci95_high"));
        keys.push(self.key("samples"));
        keys.push(format!("{}_batches", self.name));
        keys.push(format!("{}_effective_samples", self.name));
        let Some(vals) = self.values(all) else {
            let why = format!("request_timings carry no `{}`", self.source_key());
            return keys.into_iter().map(|k| (k, Derived::Unknown(why.clone()))).collect();
        };
        let s = Summary::with_z(&vals, ci_z);
        let num = |v: Option<f64>| Derived::Value(v.map_or(Value::Null, Value::from));
        let mut figures = vec![
            num(s.as_ref().map(|s| s.mean)),
            num(s.as_ref().and_then(|s| s.sd)),
            num(s.as_ref().and_then(|s| s.ci_low)),
            num(s.as_ref().and_then(|s| s.ci_high)),
            num(s.as_ref().map(|s| s.min)),
        ];
        figures.extend((0..PERCENTILES.len()).map(|i| num(s.as_ref().map(|s| s.pct[i]))));
        figures.push(num(s.as_ref().map(|s| s.max)));
        let mut sorted = vals.clone();
        sorted.sort_by(f64::total_cmp);
        // Pooled values (chunk gaps) have no order and are not independent:
        // the artifact bounds none of their percentiles.
        let ordered = !matches!(self.source, PooledMicros(_));
        let batching = if ordered { batch_means::batching(vals.len()) } else { None };
        for p in INTERVAL_PERCENTILES {
            let independent = if ordered { quantile_interval::ranks(sorted.len(), p) } else { (None, None) };
            let (l, u) = match batching {
                Some(b) => {
                    let estimate = crate::stats::percentile_sorted(&sorted, p);
                    batch_means::widened_ranks(&vals, b, estimate, p, independent)
                }
                None => independent,
            };
            figures.push(num(l.map(|r| sorted[r - 1])));
            figures.push(num(u.map(|r| sorted[r - 1])));
        }
        let mean_interval =
            batching.zip(s.as_ref()).map(|(b, s)| batch_means::mean_interval(&vals, b, s.mean));
        figures.push(num(mean_interval.map(|(low, _)| low)));
        figures.push(num(mean_interval.map(|(_, high)| high)));
        figures.push(Derived::Value(json!(vals.len())));
        figures.push(Derived::Value(batching.map_or(Value::Null, |(count, _)| json!(count))));
        figures.push(num(batching.and_then(|b| batch_means::effective_samples(&vals, b))));
        keys.into_iter().zip(figures).collect()
    }
}

/// `count / (wall_ms / 1000)`; null for a zero span.
pub fn per_second(count: f64, wall_ms: f64) -> Value {
    if wall_ms > 0.0 { json!(count / (wall_ms / 1000.0)) } else { Value::Null }
}

fn sum_int(reqs: &[&Req<'_>], key: &str) -> u64 {
    reqs.iter().filter_map(|r| r.int(key)).sum()
}

/// Derives every key of a `metrics` block over `all` attempted requests.
/// `wall_ms` is the span throughput divides by (`None`: unknown); `ci_z`
/// the z of the CIs of the mean (the protocol's: 1.96).
pub fn metrics(all: &[&Req<'_>], wall_ms: Option<f64>, ci_z: f64) -> Vec<(String, Derived)> {
    let eligible: Vec<&Req<'_>> = all.iter().copied().filter(|r| r.eligible).collect();
    let mut out: Vec<(String, Derived)> = DISTRIBUTIONS.iter().flat_map(|d| d.block(all, ci_z)).collect();
    let mut put = |k: &str, v: Value| out.push((k.to_string(), Derived::Value(v)));
    let output_tokens = sum_int(&eligible, "output_tokens");
    put("output_tokens", json!(output_tokens));
    put("prompt_tokens", json!(sum_int(&eligible, "prompt_tokens")));
    put("prompt_token_samples", json!(eligible.iter().filter(|r| r.int("prompt_tokens").is_some()).count()));
    put("content_chunks", json!(sum_int(&eligible, "content_chunks")));
    put("reasoning_chunks", json!(sum_int(&eligible, "reasoning_chunks")));
    let mut sources: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &eligible {
        if let Some(s) = r.get("output_token_source").and_then(Value::as_str) {
            *sources.entry(s).or_default() += 1;
        }
    }
    put("output_token_sources", json!(sources));

    let controlled: Vec<&Value> = all.iter().filter_map(|r| r.get("controlled_output")).collect();
    let flag = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
    let exact = controlled.iter().filter(|c| flag(c, "exact")).count();
    put("controlled_output_samples", json!(controlled.len()));
    put("controlled_output_exact_adherence", json!(exact));
    let rate =
        if controlled.is_empty() { Value::Null } else { json!(exact as f64 / controlled.len() as f64) };
    put("controlled_output_exact_adherence_rate", rate);
    put(
        "controlled_output_unobservable",
        json!(controlled.iter().filter(|c| !flag(c, "observable")).count()),
    );

    let canaries: Vec<&Value> = all.iter().filter_map(|r| r.get("request_canary")).collect();
    put("request_canary_samples", json!(canaries.len()));
    put("request_canary_passed", json!(canaries.iter().filter(|c| flag(c, "passed")).count()));

    let throughput_eligible = !eligible.is_empty() && eligible.len() == all.len();
    put("throughput_performance_eligible", json!(throughput_eligible));

    if any_has(all, "cached_prompt_tokens") {
        let hits: Vec<f64> = eligible
            .iter()
            .filter_map(|r| {
                Some(
                    r.int("cached_prompt_tokens")? as f64 / r.int("prompt_tokens").filter(|p| *p > 0)? as f64,
                )
            })
            .collect();
        let avg = crate::stats::mean(&hits).map_or(Value::Null, Value::from);
        put("prefix_cache_hit_avg", avg);
        put("prefix_cache_hit_samples", json!(hits.len()));
    }
    let good: Option<Vec<&Req<'_>>> = any_has(all, "slo_met").then(|| {
        all.iter().copied().filter(|r| r.get("slo_met").and_then(Value::as_bool) == Some(true)).collect()
    });
    if let Some(good) = &good {
        put("goodput_requests", json!(good.len()));
        let rate = if all.is_empty() { Value::Null } else { json!(good.len() as f64 / all.len() as f64) };
        put("goodput_rate", rate);
    }
    match wall_ms {
        Some(w) => {
            put("throughput_tok_s", per_second(output_tokens as f64, w));
            put("request_throughput_req_s", per_second(eligible.len() as f64, w));
            if let Some(good) = &good {
                put("goodput_req_s", per_second(good.len() as f64, w));
                put("goodput_tok_s", per_second(sum_int(good, "output_tokens") as f64, w));
            }
        }
        None => {
            for k in ["throughput_tok_s", "request_throughput_req_s", "goodput_req_s", "goodput_tok_s"] {
                out.push((k.to_string(), Derived::Unknown("no wall-clock span known".into())));
            }
        }
    }
    if !any_has(all, "cached_prompt_tokens") {
        let why = "request_timings carry no `cached_prompt_tokens`";
        for k in ["prefix_cache_hit_avg", "prefix_cache_hit_samples"] {
            out.push((k.to_string(), Derived::Unknown(why.into())));
        }
    }
    if good.is_none() {
        let why = "request_timings carry no `slo_met`";
        for k in ["goodput_requests", "goodput_rate", "goodput_req_s", "goodput_tok_s"] {
            out.push((k.to_string(), Derived::Unknown(why.into())));
        }
    }
    out.push((
        "content_chunks_s".to_string(),
        Derived::Unknown("no definition in the protocol (the reference writes null)".into()),
    ));
    out
}
