//! The `metrics` block of one population of requests (a cell, a repeat, a
//! stage), derived from the records' stored per-request values: scalars
//! from the population's [`Tally`], each distribution from its column of
//! the row file ([`crate::columns`]), read again for each statistic; its
//! order statistics are found by selection ([`crate::select`]), so no
//! column is ever held.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::columns::{self, Column, Row, Rows};
use crate::gaps::Pool;
use crate::stats::{PERCENTILES, Summary, nearest_rank_index};
use crate::tally::Tally;
use crate::{batch_means, quantile_interval};

/// Why intervals are missing (`{name}_mean`, `{name}_pP` → the words of
/// [`batch_means::Withheld::reason`]).
pub const WITHHELD_KEY: &str = "intervals_withheld";
/// Which truth the intervals are about: one run's long-run value
/// ([`THIS_RUN`]) or, over repeats, the configuration's
/// ([`THIS_CONFIGURATION`], [`crate::pool`]).
pub const TRUTH_KEY: &str = "interval_truth";
pub const THIS_RUN: &str = "this-run";
pub const THIS_CONFIGURATION: &str = "this-configuration";

/// Percentiles whose 95% interval the artifact carries.
const INTERVAL_PERCENTILES: [u32; 4] = [50, 90, 95, 99];

/// Withheld intervals (`{name}_mean`, `{name}_pP`) with their reasons.
pub type Withheld = Vec<(String, String)>;

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

    pub fn source_key(&self) -> &'static str {
        match self.source {
            Key(k) | OptionalKey(k) | Micros(k) | PooledMicros(k) => k,
        }
    }

    /// Every key of the block: 12 statistics, the intervals, `samples`.
    pub fn keys(&self) -> Vec<String> {
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
        keys
    }

    /// The per-request values over `group`, or `None` when no record of it
    /// carries the source key.
    pub fn sample<'g>(&self, group: &Group<'g>) -> Option<Sample<'g>> {
        if !matches!(self.source, OptionalKey(_)) && !group.tally.has(self.source_key()) {
            return None;
        }
        let eligible_only = self.population == Eligible;
        let column = |k: &str, div: f64| {
            // Every source key has a column (see `columns::KEYED`).
            columns::of_key(k).map(|c| Column::new(group.rows, c, (group.member, eligible_only), div))
        };
        match self.source {
            Key(k) | OptionalKey(k) => column(k, 1.0).map(Sample::Ordered),
            Micros(k) => column(k, 1000.0).map(Sample::Ordered),
            PooledMicros(_) => group.tally.gaps.as_ref().map(Sample::Pooled),
        }
    }

    /// The values of an ordered source over `member`'s rows, whether or
    /// not any carries them (`None`: pooled chunk gaps, which have no order).
    pub fn ordered_column<'g>(&self, rows: &'g Rows, member: &'g dyn Fn(&Row) -> bool) -> Option<Column<'g>> {
        let div = match self.source {
            Key(_) | OptionalKey(_) => 1.0,
            Micros(_) => 1000.0,
            PooledMicros(_) => return None,
        };
        let col = columns::of_key(self.source_key())?;
        Some(Column::new(rows, col, (member, self.population == Eligible), div))
    }

    /// The full block of `sample` (`None`: its source is not in the records),
    /// and each withheld interval's reason by `{name}_mean` / `{name}_pP`.
    pub fn block(&self, sample: Option<Sample<'_>>, ci_z: f64) -> (Vec<(String, Derived)>, Withheld) {
        let keys = self.keys();
        let Some(sample) = sample else {
            let why = format!("request_timings carry no `{}`", self.source_key());
            return (keys.into_iter().map(|k| (k, Derived::Unknown(why.clone()))).collect(), Vec::new());
        };
        // Ordered values: never held; the record order is read again, and
        // the values at the ranks the block needs are found by selection.
        let (s, n, vals, mut at) = match sample {
            Sample::Ordered(mut column) => {
                let n = column.count();
                let mut ranks = Summary::ranks(n);
                ranks.extend(INTERVAL_PERCENTILES.map(|p| nearest_rank_index(p, n)));
                let at = if n == 0 { BTreeMap::new() } else { column.at_ranks(&ranks) };
                let summary = Summary::of_ranked(&column, n, &|r| at[&r], ci_z);
                (summary, n, Some(column), at)
            }
            // Pooled values (chunk gaps) have no order and are not independent:
            // the artifact bounds none of their percentiles.
            Sample::Pooled(pool) => (pool.summary(ci_z), pool.len(), None, BTreeMap::new()),
        };
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
        let ordered = vals.is_some();
        let batching = if ordered { batch_means::batching(n) } else { None };
        let mut withheld = Vec::new();
        let bounds = INTERVAL_PERCENTILES.map(|p| {
            // Below 50 values (no batches) no interval: the exact ranks
            // would assume independent requests, and the mean has none there.
            match (batching, &vals) {
                (Some(b), Some(vals)) => {
                    let estimate = at[&nearest_rank_index(p, n)];
                    batch_means::widened_ranks(vals, b, estimate, p, quantile_interval::ranks(n, p))
                        .unwrap_or_else(|w| {
                            withheld.push((format!("{}_p{p}", self.name), w.reason()));
                            (None, None)
                        })
                }
                _ => (None, None),
            }
        });
        // The bounds' ranks depend on the estimates: a second selection.
        if let Some(column) = &vals {
            let more: Vec<usize> =
                bounds.iter().flat_map(|(l, u)| [*l, *u]).flatten().filter(|r| !at.contains_key(r)).collect();
            if !more.is_empty() {
                at.extend(column.at_ranks(&more));
            }
        }
        for (l, u) in bounds {
            figures.push(num(l.map(|r| at[&r])));
            figures.push(num(u.map(|r| at[&r])));
        }
        let accepted = match (batching, &vals) {
            (Some(b), Some(vals)) => match batch_means::accepted(vals, b, |v| v) {
                Ok(cut) => Some(cut),
                Err(w) => {
                    withheld.insert(0, (format!("{}_mean", self.name), w.reason()));
                    None
                }
            },
            _ => None,
        };
        let mean_interval = accepted
            .as_ref()
            .zip(s.as_ref())
            .map(|((b, means), s)| batch_means::mean_interval(*b, means, s.mean));
        figures.push(num(mean_interval.map(|(low, _)| low)));
        figures.push(num(mean_interval.map(|(_, high)| high)));
        figures.push(Derived::Value(json!(n)));
        figures.push(Derived::Value(accepted.as_ref().map_or(Value::Null, |((count, _), _)| json!(count))));
        let effective =
            accepted.zip(vals.as_ref()).and_then(|((b, _), vals)| batch_means::effective_samples(vals, b));
        figures.push(num(effective));
        (keys.into_iter().zip(figures).collect(), withheld)
    }
}

/// A distribution's values: a column in record order, or pooled by value.
pub enum Sample<'g> {
    Ordered(Column<'g>),
    Pooled(&'g Pool),
}

/// One population of requests: its streaming [`Tally`], and which rows of
/// the row file are its records.
pub struct Group<'g> {
    pub tally: &'g Tally,
    pub rows: &'g Rows,
    pub member: &'g dyn Fn(&Row) -> bool,
}

/// `count / (wall_ms / 1000)`; null for a zero span.
pub fn per_second(count: f64, wall_ms: f64) -> Value {
    if wall_ms > 0.0 { json!(count / (wall_ms / 1000.0)) } else { Value::Null }
}

/// Derives every key of a `metrics` block over `group` (the distributions
/// `want` names by [`DistDef::name`]; the others are left out). `wall_ms` is
/// the span throughput divides by (`None`: unknown); `ci_z` the z of the CIs
/// of the mean (the protocol's: 1.96).
pub fn metrics(
    group: &Group<'_>,
    wall_ms: Option<f64>,
    ci_z: f64,
    want: &dyn Fn(&str) -> bool,
) -> Vec<(String, Derived)> {
    let t = group.tally;
    let mut out: Vec<(String, Derived)> = Vec::new();
    let mut withheld = serde_json::Map::new();
    for d in DISTRIBUTIONS.iter().filter(|d| want(d.name)) {
        let (block, reasons) = d.block(d.sample(group), ci_z);
        out.extend(block);
        withheld.extend(reasons.into_iter().map(|(key, why)| (key, Value::from(why))));
    }
    out.push((WITHHELD_KEY.into(), Derived::Value(Value::Object(withheld))));
    out.push((TRUTH_KEY.into(), Derived::Value(THIS_RUN.into())));
    let mut put = |k: &str, v: Value| out.push((k.to_string(), Derived::Value(v)));
    put("output_tokens", json!(t.output_tokens));
    put("prompt_tokens", json!(t.prompt_tokens));
    put("prompt_token_samples", json!(t.prompt_token_samples));
    put("content_chunks", json!(t.content_chunks));
    put("reasoning_chunks", json!(t.reasoning_chunks));
    put("output_token_sources", json!(t.output_token_sources));

    put("controlled_output_samples", json!(t.controlled));
    put("controlled_output_exact_adherence", json!(t.controlled_exact));
    let rate =
        if t.controlled == 0 { Value::Null } else { json!(t.controlled_exact as f64 / t.controlled as f64) };
    put("controlled_output_exact_adherence_rate", rate);
    put("controlled_output_unobservable", json!(t.controlled_unobservable));

    put("request_canary_samples", json!(t.canaries));
    put("request_canary_passed", json!(t.canaries_passed));

    let throughput_eligible = t.eligible > 0 && t.eligible == t.attempted;
    put("throughput_performance_eligible", json!(throughput_eligible));

    let cached = t.has("cached_prompt_tokens");
    if cached {
        // The mean of the ratios, summed in record order as `stats::mean` would.
        let avg = if t.hits == 0 { Value::Null } else { Value::from(t.hit_sum / t.hits as f64) };
        put("prefix_cache_hit_avg", avg);
        put("prefix_cache_hit_samples", json!(t.hits));
    }
    let slo = t.has("slo_met");
    if slo {
        put("goodput_requests", json!(t.good));
        let rate = if t.attempted == 0 { Value::Null } else { json!(t.good as f64 / t.attempted as f64) };
        put("goodput_rate", rate);
    }
    match wall_ms {
        Some(w) => {
            put("throughput_tok_s", per_second(t.output_tokens as f64, w));
            put("request_throughput_req_s", per_second(t.eligible as f64, w));
            if slo {
                put("goodput_req_s", per_second(t.good as f64, w));
                put("goodput_tok_s", per_second(t.good_tokens as f64, w));
            }
        }
        None => {
            for k in ["throughput_tok_s", "request_throughput_req_s", "goodput_req_s", "goodput_tok_s"] {
                out.push((k.to_string(), Derived::Unknown("no wall-clock span known".into())));
            }
        }
    }
    if !cached {
        let why = "request_timings carry no `cached_prompt_tokens`";
        for k in ["prefix_cache_hit_avg", "prefix_cache_hit_samples"] {
            out.push((k.to_string(), Derived::Unknown(why.into())));
        }
    }
    if !slo {
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
