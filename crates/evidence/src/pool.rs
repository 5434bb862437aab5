//! Several measurements of one cell read as one sample: a cell's artifact
//! and the artifacts of its extra repeats (a gate or screen that measured
//! more because its verdict was undecided).
//!
//! Every figure is re-derived from the union of the artifacts' request
//! records with the definitions of [`crate::rederive`], exactly as if one
//! artifact had measured all of them as repeats: distributions and their
//! intervals over every eligible request, throughput over the summed
//! per-repeat wall spans, and `across_repeats` over each repeat of each
//! artifact. Pooling is valid because every artifact measures the same
//! configuration (the extras' fingerprints derive from the cell's) under its
//! own seed, so its requests are further draws from the same distribution.
//!
//! The intervals are not one long run's: the repeats are independent
//! replications, and each has its own run-to-run offset (a server's state,
//! its cache, the draw of arrivals), which batch means over the pooled
//! records, with `B − 1` degrees of freedom as if every batch were
//! independent, leave out. With `R ≥ 2` repeats every distribution's
//! intervals are the replications' (the method of independent
//! replications; the ratio form for replications of unequal size, Cochran,
//! *Sampling Techniques*, 3rd ed., 1977, §6.4 and §9A, as cluster sampling):
//! for a ratio `Σy_r / Σn_r` over replications `r`,
//! `v = R/((R − 1)·N²) · Σ (y_r − n_r·Σy/N)²`, `N = Σn_r`, and `t` the
//! two-sided 95% Student-t for `R − 1` degrees of freedom (3 decimals).
//! - the mean (`y_r` the sum of replication `r`'s values):
//!   `mean_batch_ci95_*` is `mean ± t·√v`;
//! - a percentile `p` (`y_r` the count of `r`'s values at or below the
//!   pooled estimate, so `Σy/N` is the pooled empirical CDF there): the
//!   exact order-statistic ranks among all `N` widen around `N·p` by
//!   `w = max(1, √(v / (p(1 − p)/N))·t/1.96)`, as batch means widen them,
//!   the replications being the batches (Heidelberger & Lewis 1984); as a
//!   batch must, each replication must expect at least one value beyond the
//!   percentile on its narrow side (`n_r·min(p, 1 − p) ≥ 1`: 100 values for
//!   p99, 20 for p95, 10 for p90), else that percentile has no interval;
//! - `{name}_batches` is `R`, `{name}_effective_samples` is `s²/v` of the
//!   mean; below 50 pooled values, no interval (as in an artifact).
//!
//! Each replication carries its own correlation and its own offset, and
//! replications are independent, so these hold whatever the correlation
//! within a run, with the `R − 1` degrees of freedom that run-to-run noise
//! really has. The same intervals are a repeated cell's own (`repeat` 2 or
//! more, `interval_truth: this-configuration`): [`across_replications`]
//! gives them to `rederive` too, over one artifact's repeats.

use serde_json::{Map, Value};

use crate::columns::{Col, Column, KEYED, Row, RowWriter, Rows};
use crate::error::PoolError;
use crate::metrics::{
    DISTRIBUTIONS, Derived, DistDef, Group, Sample, THIS_CONFIGURATION, TRUTH_KEY, WITHHELD_KEY, metrics,
};
use crate::quantile_interval;
use crate::records::Classifier;
use crate::repeats::{REPEAT_KEYS, across};
use crate::stats::Ordered;
use crate::stats::Z95_PROTOCOL;
use crate::tally::Tally;
use crate::tdist::t95_table;

/// What the pooled records say.
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    /// A `metrics` block over every record (keys as an artifact has them;
    /// a figure the records cannot give is absent).
    pub metrics: Map<String, Value>,
    /// `repeats.across_repeats` over every repeat of every artifact.
    pub across_repeats: Map<String, Value>,
    /// Requests attempted, and those that completed eligibly.
    pub attempted: u64,
    pub completed: u64,
    /// Repeats pooled (each artifact's repeats, counted apart).
    pub repeats: u64,
    /// Σ of the repeats' wall spans.
    pub wall_clock_ms: f64,
}

/// Pool `artifacts` (each an `anvil-serving.benchmark/v1` document with its
/// `request_timings`). Fails when one lacks records or their send and
/// finish times, without which no throughput can be derived.
pub fn pool(artifacts: &[&Value]) -> Result<Pooled, PoolError> {
    let scratch = |e: std::io::Error| PoolError::Scratch(e.to_string());
    let mut rows = RowWriter::new().map_err(scratch)?;
    let mut every = Tally::pooling();
    // Each (artifact, repeat) apart: two artifacts' repeat 0 are two repeats.
    // A row's `Col::Repeat` is its group's index here.
    let mut groups: Vec<Tally> = Vec::new();
    for (a, artifact) in artifacts.iter().enumerate() {
        let missing = || PoolError::NoRecords(a);
        let obj = artifact.as_object().ok_or_else(missing)?;
        let timings = obj.get("request_timings").and_then(Value::as_array).ok_or_else(missing)?;
        let mut classify = Classifier::new(obj);
        let mut mine: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
        for t in timings {
            mine.insert(t.get("repeat").and_then(Value::as_u64).unwrap_or(0), 0);
        }
        for (slot, g) in mine.values_mut().zip(groups.len()..) {
            *slot = g;
        }
        groups.resize_with(groups.len() + mine.len(), Tally::default);
        for (pos, t) in timings.iter().enumerate() {
            let r = classify.req(pos, t.as_object().ok_or_else(missing)?);
            let g = mine.get(&r.repeat).copied().unwrap_or(0);
            every.add(&r);
            groups[g].add(&r);
            let mut row = Row::default();
            for (key, col) in KEYED {
                row.set(col, r.num(key));
            }
            row.set(Col::OutputTokensInt, r.int("output_tokens").map(|n| n as f64));
            row.set(Col::Repeat, Some(g as f64));
            row.set(Col::Eligible, Some(f64::from(u8::from(r.eligible))));
            rows.push(&row).map_err(scratch)?;
        }
    }
    let rows = rows.finish().map_err(scratch)?;
    let mut wall = 0.0;
    let mut per_key: Vec<Vec<f64>> = vec![Vec::new(); REPEAT_KEYS.len()];
    for (g, tally) in groups.iter().enumerate() {
        let span = tally.wall_ms().ok_or(PoolError::NoSpan)?;
        wall += span;
        let member = |r: &Row| r.repeat() == g as u64;
        let figures =
            metrics(&Group { tally, rows: &rows, member: &member }, Some(span), Z95_PROTOCOL, &|_| true);
        for (j, key) in REPEAT_KEYS.iter().enumerate() {
            if let Some(x) = value_of(&figures, key).and_then(|v| v.as_f64()) {
                per_key[j].push(x);
            }
        }
    }
    let all = |_: &Row| true;
    let metrics: Map<String, Value> =
        metrics(&Group { tally: &every, rows: &rows, member: &all }, Some(wall), Z95_PROTOCOL, &|_| true)
            .into_iter()
            .filter_map(|(key, derived)| match derived {
                Derived::Value(v) => Some((key, v)),
                Derived::Unknown(_) => None,
            })
            .collect();
    let mut metrics = metrics;
    let ids: Vec<u64> = (0..groups.len() as u64).collect();
    across_replications(&rows, &every, &ids, &mut metrics);
    if let Some(e) = rows.error() {
        return Err(scratch(e));
    }
    let across_repeats = REPEAT_KEYS
        .iter()
        .zip(&per_key)
        .filter(|(_, values)| values.len() == groups.len())
        .map(|(key, values)| (key.to_string(), across(values)))
        .collect();
    Ok(Pooled {
        metrics,
        across_repeats,
        attempted: every.attempted,
        completed: every.eligible,
        repeats: groups.len() as u64,
        wall_clock_ms: wall,
    })
}

/// Which rows are one replication's.
type Member = Box<dyn Fn(&Row) -> bool>;

/// With two or more replications (`repeats`: the `Col::Repeat` each one's
/// rows carry), replaces every ordered distribution's intervals in
/// `metrics` (derived over all of `rows`, as `every` tallies them) by the
/// replications' (the module's doc), drops their within-run reasons from
/// `intervals_withheld`, and says `interval_truth: this-configuration`. A
/// replication without values of a metric counts as one of none, as the
/// load generator's `output/replications.rs` counts it.
pub fn across_replications(rows: &Rows, every: &Tally, repeats: &[u64], metrics: &mut Map<String, Value>) {
    if repeats.len() < 2 {
        return;
    }
    let all = |_: &Row| true;
    let members: Vec<Member> =
        repeats.iter().map(|&g| Box::new(move |r: &Row| r.repeat() == g) as _).collect();
    for d in DISTRIBUTIONS.iter() {
        let Some(Sample::Ordered(column)) = d.sample(&Group { tally: every, rows, member: &all }) else {
            continue;
        };
        let columns: Vec<Column<'_>> = members.iter().filter_map(|m| d.ordered_column(rows, m)).collect();
        if columns.len() != members.len() {
            continue;
        }
        replication_intervals(d, column, &columns, metrics);
        if let Some(Value::Object(withheld)) = metrics.get_mut(WITHHELD_KEY) {
            let within_run: Vec<String> = ["mean", "p50", "p90", "p95", "p99"]
                .iter()
                .map(|stat| format!("{}_{stat}", d.name))
                .collect();
            withheld.retain(|key, _| !within_run.contains(key));
        }
    }
    metrics.insert(TRUTH_KEY.into(), THIS_CONFIGURATION.into());
}

/// The variance of the ratio `Σy_r / Σn_r` over independent replications
/// `(n_r, y_r)`: `R/((R − 1)·N²) · Σ (y_r − n_r·Σy/N)²`; `None` below two
/// replications or without values.
pub fn ratio_variance(parts: &[(f64, f64)]) -> Option<f64> {
    let r = parts.len() as f64;
    let n: f64 = parts.iter().map(|(n, _)| n).sum();
    if parts.len() < 2 || n <= 0.0 {
        return None;
    }
    let ratio = parts.iter().map(|(_, y)| y).sum::<f64>() / n;
    let ss: f64 = parts.iter().map(|(n_r, y_r)| (y_r - n_r * ratio).powi(2)).sum();
    Some(r / (r - 1.0) * ss / (n * n))
}

/// The two-sided 95% t for `R` replications (`R − 1` degrees of freedom).
fn t_replications(r: usize) -> f64 {
    t95_table(r - 1).unwrap_or(1.96)
}

/// The replications' interval of the mean `Σy/N`, for `(n_r, y_r)` with
/// `y_r` each replication's sum.
pub fn replication_mean_interval(parts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let v = ratio_variance(parts)?;
    let n: f64 = parts.iter().map(|(n, _)| n).sum();
    let mean = parts.iter().map(|(_, y)| y).sum::<f64>() / n;
    let half = t_replications(parts.len()) * v.sqrt();
    Some((mean - half, mean + half))
}

/// The ranks (1-based, among all `N` values) bounding percentile `q` (in
/// percent) over replications whose `(n_r, count of values ≤ estimate)`
/// are `parts`: the exact ranks widened by the replications' inflation.
/// None when a replication expects less than one value beyond the
/// percentile on its narrow side (`n_r·min(q, 100 − q) < 100`), as a batch
/// must (`crate::batch_means::percentile_batching`).
pub fn replication_percentile_ranks(parts: &[(f64, f64)], q: u32) -> (Option<usize>, Option<usize>) {
    let n = parts.iter().map(|(n, _)| n).sum::<f64>() as usize;
    let narrow = f64::from(q.min(100u32.saturating_sub(q)));
    if parts.iter().any(|(n_r, _)| n_r * narrow < 100.0) {
        return (None, None);
    }
    let Some(v) = ratio_variance(parts).filter(|_| n >= 50) else { return (None, None) };
    let p = f64::from(q) / 100.0;
    let w = ((v / (p * (1.0 - p) / n as f64)).sqrt() * t_replications(parts.len()) / 1.96).max(1.0);
    let (l, u) = quantile_interval::ranks(n, q);
    let np = n as f64 * p;
    let low = l.map(|l| (np - w * (np - l as f64)).floor()).filter(|r| *r >= 1.0).map(|r| r as usize);
    let high = u.map(|u| (np + w * (u as f64 - np)).ceil()).filter(|r| *r <= n as f64).map(|r| r as usize);
    (low, high)
}

/// Replaces `d`'s batch intervals in `metrics` by the replications' (the
/// module's doc): `all` is its pooled column, `columns` each replication's.
fn replication_intervals(
    d: &DistDef,
    mut all: Column<'_>,
    columns: &[Column<'_>],
    metrics: &mut Map<String, Value>,
) {
    let n = all.count();
    let num = |v: Option<f64>| v.map_or(Value::Null, Value::from);
    let enough = n >= 50;
    let sums: Vec<(f64, f64)> = columns
        .iter()
        .map(|c| {
            let (mut count, mut sum) = (0.0, 0.0);
            c.each(&mut |v| {
                count += 1.0;
                sum += v;
            });
            (count, sum)
        })
        .collect();
    let mean = replication_mean_interval(&sums).filter(|_| enough);
    metrics.insert(d.key("mean_batch_ci95_low"), num(mean.map(|(low, _)| low)));
    metrics.insert(d.key("mean_batch_ci95_high"), num(mean.map(|(_, high)| high)));
    metrics.insert(format!("{}_batches", d.name), if enough { columns.len().into() } else { Value::Null });
    let spread = metrics.get(&d.key("stddev")).and_then(Value::as_f64);
    let effective = ratio_variance(&sums)
        .filter(|v| enough && *v > 0.0)
        .zip(spread)
        .map(|(v, s)| s * s / v)
        .filter(|e| e.is_finite());
    metrics.insert(format!("{}_effective_samples", d.name), num(effective));
    let mut bounds = Vec::new();
    for q in [50u32, 90, 95, 99] {
        let estimate = metrics.get(&d.key(&format!("p{q}"))).and_then(Value::as_f64);
        let ranks = match estimate {
            Some(x) if enough => {
                let parts: Vec<(f64, f64)> = columns
                    .iter()
                    .zip(&sums)
                    .map(|(c, (count, _))| {
                        let mut below = 0.0;
                        c.each(&mut |v| below += f64::from(u8::from(v <= x)));
                        (*count, below)
                    })
                    .collect();
                replication_percentile_ranks(&parts, q)
            }
            _ => (None, None),
        };
        bounds.push((q, ranks));
    }
    let wanted: Vec<usize> = bounds.iter().flat_map(|(_, (l, u))| [*l, *u]).flatten().collect();
    let at = if wanted.is_empty() { Default::default() } else { all.at_ranks(&wanted) };
    for (q, (l, u)) in bounds {
        metrics.insert(d.key(&format!("p{q}_ci95_low")), num(l.map(|r| at[&r])));
        metrics.insert(d.key(&format!("p{q}_ci95_high")), num(u.map(|r| at[&r])));
    }
}

fn value_of<'a>(figures: &'a [(String, Derived)], key: &str) -> Option<&'a Value> {
    figures.iter().find(|(k, _)| k == key).and_then(|(_, d)| match d {
        Derived::Value(v) => Some(v),
        Derived::Unknown(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn artifact(ttfts: &[f64], start_ms: f64) -> Value {
        let timings: Vec<Value> = ttfts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let sent = start_ms + i as f64 * 10.0;
                json!({
                    "request_index": i, "repeat": 0, "performance_eligible": true,
                    "actual_send_ms": sent, "finished_ms": sent + t + 5.0,
                    "ttft_ms": t, "output_tokens": 10,
                })
            })
            .collect();
        json!({ "request_timings": timings })
    }

    #[test]
    fn two_artifacts_pool_as_two_repeats_of_one_sample() {
        let a = artifact(&[10.0, 20.0, 30.0], 0.0);
        let b = artifact(&[40.0, 50.0, 60.0], 1000.0);
        let pooled = pool(&[&a, &b]).unwrap();
        assert_eq!((pooled.attempted, pooled.completed, pooled.repeats), (6, 6, 2));
        assert_eq!(pooled.metrics["ttft_max_ms"], 60.0);
        assert_eq!(pooled.metrics["ttft_samples"], 6);
        // Each repeat's span (a: 0 → 20+30+5, b likewise) adds up; the
        // 1000 ms gap between the two measurements is not measured time.
        assert_eq!(pooled.wall_clock_ms, 55.0 + 85.0);
        assert_eq!(pooled.metrics["output_tokens"], 60);
        assert_eq!(pooled.across_repeats["throughput_tok_s"]["samples"], 2);
        // One artifact pools to its own figures.
        let alone = pool(&[&a]).unwrap();
        assert_eq!(alone.repeats, 1);
        assert_eq!(alone.metrics["ttft_p50_ms"], 20.0);
    }

    /// SplitMix64 and Box–Muller: seeded normal draws.
    struct Draws(u64);
    impl Draws {
        fn uniform(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (u, v) = (1.0 - self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    /// The Clopper–Pearson 95% interval of a share `k` of `n`.
    fn clopper_pearson(k: u32, n: u32) -> (f64, f64) {
        crate::binomial::clopper_pearson(u64::from(k), u64::from(n), 0.95)
    }

    /// Coverage as a statistic: `R = 3` replications of 400 values each,
    /// every replication offset by its own N(0, 0.3²) (run-to-run noise)
    /// around 0, with AR(1) noise (φ = 0.6) within. The true mean and
    /// median are 0. Batch means over the pooled 1,200 values (30 batches,
    /// 29 degrees of freedom: what pooling did before) miss far more than
    /// 5%; the replications' intervals (2 degrees of freedom) hold 0 in at
    /// least 95% (the Clopper–Pearson interval of the share reaches 95%).
    #[test]
    fn pooled_replications_cover_where_one_long_run_does_not() {
        let mut draws = Draws(2024);
        let (trials, r, n, phi, tau) = (2000u32, 3usize, 400usize, 0.6, 0.3);
        // [old mean, new mean, new median] × [below, above]
        let mut missed = [[0u32; 2]; 3];
        for _ in 0..trials {
            let mut runs: Vec<Vec<f64>> = Vec::new();
            for _ in 0..r {
                let offset = tau * draws.normal();
                let mut x = draws.normal() / (1.0f64 - phi * phi).sqrt();
                runs.push(
                    (0..n)
                        .map(|_| {
                            x = phi * x + draws.normal();
                            offset + x
                        })
                        .collect(),
                );
            }
            let pooled: Vec<f64> = runs.concat();
            let mean = pooled.iter().sum::<f64>() / pooled.len() as f64;
            let b = crate::batch_means::batching(pooled.len()).unwrap();
            let means = crate::batch_means::batch_means(pooled.as_slice(), b, |v| v);
            let old = crate::batch_means::mean_interval(b, &means, mean);
            let sums: Vec<(f64, f64)> = runs.iter().map(|v| (v.len() as f64, v.iter().sum())).collect();
            let new = replication_mean_interval(&sums).unwrap();
            let mut sorted = pooled.clone();
            sorted.sort_by(f64::total_cmp);
            let median = sorted[crate::stats::nearest_rank_index(50, sorted.len()) - 1];
            let below: Vec<(f64, f64)> = runs
                .iter()
                .map(|v| (v.len() as f64, v.iter().filter(|x| **x <= median).count() as f64))
                .collect();
            let (l, u) = replication_percentile_ranks(&below, 50);
            let median_interval =
                (l.map_or(f64::NEG_INFINITY, |l| sorted[l - 1]), u.map_or(f64::INFINITY, |u| sorted[u - 1]));
            for (i, (low, high)) in [old, new, median_interval].into_iter().enumerate() {
                missed[i][0] += u32::from(high < 0.0);
                missed[i][1] += u32::from(low > 0.0);
            }
        }
        let held = |m: [u32; 2]| trials - m[0] - m[1];
        let report: Vec<String> = ["batch means over the pool", "replications, mean", "replications, median"]
            .iter()
            .zip(missed)
            .map(|(what, m)| {
                let (lo, hi) = clopper_pearson(held(m), trials);
                format!(
                    "{what}: held {}/{trials} [{lo:.3}, {hi:.3}] (below {}, above {})",
                    held(m),
                    m[0],
                    m[1]
                )
            })
            .collect();
        let report = report.join("; ");
        eprintln!("{report}");
        assert!(clopper_pearson(held(missed[0]), trials).1 < 0.95, "{report}");
        assert!(clopper_pearson(held(missed[1]), trials).1 >= 0.95, "{report}");
        assert!(clopper_pearson(held(missed[2]), trials).1 >= 0.95, "{report}");
    }

    #[test]
    fn an_artifact_without_records_is_refused() {
        assert_eq!(pool(&[&json!({})]).unwrap_err(), PoolError::NoRecords(0));
        assert!(pool(&[&json!({})]).unwrap_err().to_string().contains("no request_timings"));
    }
}
