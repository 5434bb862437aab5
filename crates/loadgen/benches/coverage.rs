//! Coverage of the artifact's 95% intervals, tested as a statistic should
//! be: not by one example but by how often they hold a known truth, with
//! the uncertainty of that count. Three parts.
//!
//! **queue** (seconds): M/M/1 FIFO sojourn times, whose truth is exact,
//! seeded runs of 50 to 6,400 values at utilizations up to 0.9; each
//! statistic's interval as the artifact writes it, beside the same data's
//! interval with neither of the rules on batches: the mean's batches for
//! every statistic, whatever their correlation (docs/metrics.md, "Batches
//! that reach the tail" and "Batches that look independent").
//!
//! **grid** (about 13 minutes on 2 cores): the simulated engine (in this
//! process, on its own runtime: decode step 1 ms + 0.05 ms per running
//! sequence, up to 32 sequences) under each load of a grid: an open-loop
//! Poisson load at a share of its capacity (measured first, as the
//! throughput of a closed loop of 64), or a closed loop of `C` concurrent
//! requests. Per load, short runs of each request count with seeds of
//! their own each give their artifact's intervals; the truth is a long
//! reference, run in parts spread among the short runs (round robin over
//! the counts), so that slow changes in the machine's own load reach the
//! truth and the runs alike.
//!
//! Per statistic (TTFT and E2E p50, p90, p95, p99 and mean) the tables
//! count the runs with no interval (a gate reads those as undecided), the
//! runs whose interval holds the truth, and the misses apart: "below" when
//! the whole interval lies below the truth, "above" when above. The share
//! held is over the runs with an interval, with its Clopper–Pearson 95%
//! interval; an unbounded side holds everything. Nominal is 95%. The
//! reference has its own sampling error: "ceiling" is the share a perfect
//! 95% interval would hold against it, `2Φ(1.96/√(1 + n/N)) − 1` for runs
//! of `n` and a reference of `N` requests (equal variance per request).
//! Every short run's artifact is also re-derived by `anvil-evidence` (what
//! `anvil verify` runs) and its mismatches are counted by field.
//!
//! **stop** (about 35 minutes): a stopping rule against fixed counts over a
//! campaign of cells (below).
//!
//!   cargo bench -p anvil-loadgen --bench coverage    (queue, then grid)
//!   COVERAGE_ONLY=queue|grid|stop                      one part
//!   COVERAGE_QUEUE_RHO=0.5,0.8,0.9 COVERAGE_QUEUE_COUNTS=50,100,200,400,800,1600,3200,6400
//!   COVERAGE_QUEUE_TRIALS=2000
//!   COVERAGE_LOADS=poisson:0.5,poisson:0.9,closed:48  (poisson:U a share of capacity, rate:R req/s, closed:C)
//!   COVERAGE_COUNTS=50,400,1600 COVERAGE_REFERENCE=12000 COVERAGE_REFERENCE_PARTS=4
//!   COVERAGE_CELL_REQUESTS=12000 COVERAGE_MIN_RUNS=10 COVERAGE_RUNS=40
//!       (runs per count: CELL_REQUESTS / n, within [MIN_RUNS, RUNS])
//!   COVERAGE_STEADY=1 (open loops with `steady-load`: 100 lead requests on
//!       the schedule, a tail until the measured ones end; 0: as they are)
//!   COVERAGE_VERIFY=1 (0 skips the re-derivation)
//!   COVERAGE_CAPACITY_REQUESTS=3000
//!
//! The whole sweep on the engine (hours):
//!   COVERAGE_ONLY=grid COVERAGE_COUNTS=50,100,200,400,800,1600,3200,6400 COVERAGE_REFERENCE=64000
//!   COVERAGE_LOADS=poisson:0.3,poisson:0.5,poisson:0.7,poisson:0.9,closed:16,closed:48

use anvil_loadgen::{
    Arrival, Benchmark, CellContext, CellSpec, Level, Progress, Statistic, StoppingRule, Target, estimate,
};
use statrs::distribution::{ContinuousCDF, Normal};

#[path = "common/in_process_sim.rs"]
mod in_process_sim;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Batched decoding whose step grows with the batch: latency depends on
/// how many requests the queue holds when one arrives.
fn start_sim() -> String {
    in_process_sim::start(&[
        ("decode-step-ms", "1"),
        ("decode-step-ms-per-seq", "0.05"),
        ("max-running-seqs", "32"),
        ("prefill-tok-s", "200000"),
    ])
}

/// A run's artifact, its eligible requests' (TTFT, E2E) in send order, and
/// what re-deriving its artifact found wrong (`None`: not re-derived).
struct Run {
    artifact: Benchmark,
    latencies: Vec<(f64, f64)>,
    mismatches: Option<Vec<(String, String)>>,
}

/// What a run sets beyond the load.
#[derive(Default)]
struct Options {
    stopping: Option<StoppingRule>,
    steady: bool,
    verify: bool,
}

/// How requests are sent: the arrival process and the most in flight.
#[derive(Clone, Copy)]
struct Load {
    arrival: Arrival,
    /// `None`: an open loop, uncapped.
    concurrency: Option<u32>,
}

fn poisson(rate: f64) -> Load {
    Load { arrival: Arrival::Poisson { rate_per_s: rate }, concurrency: None }
}

fn measure_with(url: &str, load: Load, requests: u32, seed: u64, options: Options) -> Run {
    let open = load.concurrency.is_none();
    let mut spec = CellSpec {
        stopping: options.stopping,
        warmup_requests: if options.steady && open { 100 } else { 0 },
        name: format!("coverage-{seed}"),
        model: "coverage".into(),
        context_tokens: 128,
        max_tokens: 32,
        arrival: load.arrival,
        // An open loop uncapped: it stays open.
        concurrency: load.concurrency.unwrap_or(requests),
        requests,
        seed,
        canaries: false,
        request_timeout_ms: 60_000,
        ..CellSpec::default()
    };
    spec.options.steady_load = (options.steady && open).then_some(true);
    let target =
        [Target { base_url: url.to_string(), api_key: None, label: "sim".into(), tls: Default::default() }];
    let quiet = |_: &Progress| {};
    let dir = tempfile_dir();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let cell = rt
        .block_on(anvil_loadgen::run_cell_streamed(&spec, &target, &CellContext::default(), &quiet, &dir))
        .expect("cell");
    let mut records = cell.records().expect("records");
    records.sort_by(|a, b| a.actual_send_ms.total_cmp(&b.actual_send_ms));
    let latencies = records
        .iter()
        .filter(|r| r.performance_eligible)
        .filter_map(|r| Some((r.ttft_ms?, r.e2e_ms?)))
        .collect();
    let mismatches = options.verify.then(|| {
        let path = dir.join("benchmark.json");
        cell.write_artifact_file(&cell.artifact, &path).expect("artifact file");
        let report = anvil_evidence::rederive_file(&path).expect("re-derivation");
        let what =
            |m: &anvil_evidence::Mismatch| format!("{}: {} stored, {} derived", m.path, m.stored, m.derived);
        report.mismatches.iter().map(|m| (m.path.clone(), what(m))).collect()
    });
    let _ = std::fs::remove_dir_all(&dir);
    Run { artifact: cell.artifact, latencies, mismatches }
}

#[derive(Clone, Copy)]
enum Stat {
    Percentile(u32),
    Mean,
}

/// Whether `(low, high)` holds `value`; an unbounded side holds everything.
fn holds((low, high): (Option<f64>, Option<f64>), value: f64) -> bool {
    low.is_none_or(|l| l <= value) && high.is_none_or(|h| value <= h)
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("anvil-coverage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn f(b: &Benchmark, key: &str) -> Option<f64> {
    b.metric(key).as_f64()
}

/// One row of a table: its label, which series (0 TTFT, 1 E2E), the
/// statistic, and the artifact's point and interval keys.
struct Row {
    label: String,
    series: usize,
    stat: Stat,
    point: String,
    low: String,
    high: String,
}

fn rows() -> Vec<Row> {
    ["ttft", "e2e"]
        .iter()
        .enumerate()
        .flat_map(|(series, name)| {
            [
                Stat::Percentile(50),
                Stat::Percentile(90),
                Stat::Percentile(95),
                Stat::Percentile(99),
                Stat::Mean,
            ]
            .map(|stat| {
                let (label, point, interval) = match stat {
                    Stat::Percentile(p) => (format!("p{p}"), format!("p{p}"), format!("p{p}_ci95")),
                    Stat::Mean => ("mean".into(), "mean".into(), "mean_batch_ci95".into()),
                };
                let key = |stat: &str| format!("{name}_{stat}_ms");
                Row {
                    label: format!("{name} {label}"),
                    series,
                    stat,
                    point: key(&point),
                    low: key(&format!("{interval}_low")),
                    high: key(&format!("{interval}_high")),
                }
            })
        })
        .collect()
}

/// A load of the grid as `COVERAGE_LOADS` names it.
#[derive(Clone, Copy)]
enum LoadSpec {
    /// Poisson at this share of the measured capacity.
    Share(f64),
    /// Poisson at this rate (req/s).
    Rate(f64),
    /// A closed loop of this many concurrent requests.
    Closed(u32),
}

fn parse_load(text: &str) -> LoadSpec {
    let parsed = text.split_once(':').and_then(|(kind, value)| match kind {
        "poisson" => value.parse().ok().map(LoadSpec::Share),
        "rate" => value.parse().ok().map(LoadSpec::Rate),
        "closed" => value.parse().ok().map(LoadSpec::Closed),
        _ => None,
    });
    parsed.unwrap_or_else(|| panic!("load `{text}`: poisson:SHARE, rate:REQ_S or closed:CONCURRENCY"))
}

/// The sim's capacity: the request throughput of a closed loop of 64 (twice
/// its running batch, so a queue always waits).
fn capacity(url: &str, seed: u64) -> f64 {
    let requests = env("COVERAGE_CAPACITY_REQUESTS", 3000) as u32;
    eprintln!("capacity: a closed loop of 64, {requests} requests ...");
    let load = Load { arrival: Arrival::ClosedLoop, concurrency: Some(64) };
    let run = measure_with(url, load, requests, seed, Options::default());
    f(&run.artifact, "request_throughput_req_s").expect("a throughput")
}

/// What one statistic's short runs of one count gave.
#[derive(Default)]
struct Tally {
    runs: u64,
    none: u64,
    held: u64,
    below: u64,
    above: u64,
    both: u64,
    estimates: Vec<f64>,
}

impl Tally {
    fn add(&mut self, estimate: Option<f64>, (low, high): (Option<f64>, Option<f64>), truth: f64) {
        self.runs += 1;
        self.estimates.extend(estimate);
        if low.is_none() && high.is_none() {
            self.none += 1;
            return;
        }
        self.both += u64::from(low.is_some() && high.is_some());
        if high.is_some_and(|h| h < truth) {
            self.below += 1;
        } else if low.is_some_and(|l| l > truth) {
            self.above += 1;
        } else {
            self.held += 1;
        }
    }
}

/// The share a perfect 95% interval of `n` requests holds against a
/// reference of `reference` requests that has its own error.
fn ceiling(n: u32, reference: u32) -> f64 {
    let z = 1.96 / (1.0 + f64::from(n) / f64::from(reference)).sqrt();
    2.0 * Normal::standard().cdf(z) - 1.0
}

/// What re-deriving the short runs' artifacts found: mismatches counted by
/// field (a record's index left out), with the first of each.
fn report_mismatches(verified: u64, mismatched: &[(String, String)]) {
    let mut fields: std::collections::BTreeMap<String, (usize, &str)> = Default::default();
    for (field, example) in mismatched {
        let entry = fields.entry(field.clone()).or_insert((0, example));
        entry.0 += 1;
    }
    println!();
    println!("re-derived by anvil-evidence: {verified} artifacts, {} mismatches", mismatched.len());
    for (field, (count, example)) in &fields {
        println!("  {field}: {count}, first: {example}");
    }
}

/// A field's path with any record index replaced by `*`.
fn field_of(path: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for ch in path.chars() {
        match ch {
            '[' => {
                skipping = true;
                out.push_str("[*");
            }
            ']' => {
                skipping = false;
                out.push(']');
            }
            _ if skipping => {}
            _ => out.push(ch),
        }
    }
    out
}

/// A statistic of pooled latencies, as the artifact defines it.
fn statistic(values: &[f64], stat: Stat) -> f64 {
    match stat {
        Stat::Percentile(p) => {
            let mut sorted = values.to_vec();
            sorted.sort_by(f64::total_cmp);
            anvil_loadgen::nearest_rank(&sorted, p)
        }
        Stat::Mean => mean(values),
    }
}

/// What one short run's artifact says of one statistic: its estimate and interval.
type Said = (Option<f64>, (Option<f64>, Option<f64>));

fn grid(url: &str) {
    let loads: Vec<LoadSpec> = env_list("COVERAGE_LOADS", "poisson:0.5,poisson:0.9,closed:48")
        .iter()
        .map(|l| parse_load(l))
        .collect();
    let counts: Vec<u32> =
        env_list("COVERAGE_COUNTS", "50,400,1600").iter().map(|c| c.parse().expect("a count")).collect();
    let reference_n = env("COVERAGE_REFERENCE", 12_000) as u32;
    let parts = env("COVERAGE_REFERENCE_PARTS", 4).max(1);
    let cell_requests = env("COVERAGE_CELL_REQUESTS", 12_000);
    let (min_runs, max_runs) = (env("COVERAGE_MIN_RUNS", 10), env("COVERAGE_RUNS", 40));
    let steady = env("COVERAGE_STEADY", 1) != 0;
    let verify = env("COVERAGE_VERIFY", 1) != 0;
    let capacity = loads.iter().any(|l| matches!(l, LoadSpec::Share(_))).then(|| capacity(url, 1));
    let rows = rows();
    let (mut verified, mut mismatched) = (0u64, Vec::new());
    println!(
        "coverage of the artifact's 95% intervals, simulated engine, {}",
        if steady { "open loops with steady-load (100 lead requests)" } else { "open loops as they are" },
    );
    if let Some(c) = capacity {
        println!("capacity: {c:.1} req/s (a closed loop of 64)");
    }
    println!(
        "truth: the reference's {reference_n} requests, run in {parts} parts spread among the short runs (so slow changes in the machine's load reach both alike)"
    );
    println!(
        "share held: of the runs with an interval, those that hold the truth (an unbounded side holds everything), with its Clopper-Pearson 95% interval; below/above: the interval lies wholly below/above it; ceiling: what a perfect 95% interval would hold against this truth"
    );
    for (l, spec) in loads.iter().enumerate() {
        let l = l as u64;
        let (load, label) = match *spec {
            LoadSpec::Share(u) => {
                let rate = u * capacity.unwrap_or(f64::NAN);
                (poisson(rate), format!("Poisson {rate:.1} req/s (utilization {u})"))
            }
            LoadSpec::Rate(rate) => (poisson(rate), format!("Poisson {rate:.1} req/s")),
            LoadSpec::Closed(c) => {
                (Load { arrival: Arrival::ClosedLoop, concurrency: Some(c) }, format!("closed loop of {c}"))
            }
        };
        let options = || Options { stopping: None, steady, verify: false };
        let runs: Vec<u64> =
            counts.iter().map(|&n| (cell_requests / u64::from(n)).clamp(min_runs, max_runs)).collect();
        // Round robin over the counts, so each count's runs spread over the
        // whole time the load takes, as the reference's parts do.
        let plan: Vec<(usize, u64)> = (0..runs.iter().copied().max().unwrap_or(0))
            .flat_map(|i| (0..counts.len()).map(move |c| (c, i)))
            .filter(|&(c, i)| i < runs[c])
            .collect();
        let mut said: Vec<Vec<Vec<Said>>> = counts.iter().map(|_| vec![Vec::new(); rows.len()]).collect();
        let (mut pooled, mut failed, mut achieved): (Vec<(f64, f64)>, u64, Vec<f64>) =
            (Vec::new(), 0, Vec::new());
        let mut next_part = 0;
        let mut reference_part = |part: u64| {
            let n = reference_n / parts as u32;
            eprintln!("{label}: reference part {} of {parts} ({n} requests) ...", part + 1);
            let run = measure_with(url, load, n, 100_000 + 1000 * l + part, options());
            failed += run.artifact.failed;
            achieved.extend(f(&run.artifact, "request_throughput_req_s"));
            pooled.extend(run.latencies);
        };
        for (k, &(c, i)) in plan.iter().enumerate() {
            while next_part < parts && (next_part as usize) * plan.len() / parts as usize <= k {
                reference_part(next_part);
                next_part += 1;
            }
            let n = counts[c];
            // Seeds of their own: the sim's prefix cache outlives a run, and
            // a prompt it has seen prefills for free.
            let seed = 1_000_000 * (l + 1) + 10_000 * c as u64 + i;
            let run = measure_with(url, load, n, seed, Options { verify, ..options() });
            if let Some(m) = run.mismatches {
                verified += 1;
                mismatched.extend(
                    m.into_iter().map(|(path, m)| {
                        (field_of(&path), format!("{label}, {n} requests, seed {seed}: {m}"))
                    }),
                );
            }
            let b = &run.artifact;
            for (j, row) in rows.iter().enumerate() {
                said[c][j].push((f(b, &row.point), (f(b, &row.low), f(b, &row.high))));
            }
            if (k + 1) % 20 == 0 {
                eprintln!("{label}: {} of {} short runs", k + 1, plan.len());
            }
        }
        while next_part < parts {
            reference_part(next_part);
            next_part += 1;
        }
        let series: [Vec<f64>; 2] =
            [pooled.iter().map(|l| l.0).collect(), pooled.iter().map(|l| l.1).collect()];
        let truth: Vec<f64> = rows.iter().map(|r| statistic(&series[r.series], r.stat)).collect();
        println!();
        println!(
            "{label}: reference {} requests in {parts} parts ({failed} failed, {:.1} req/s achieved)",
            pooled.len(),
            mean(&achieved)
        );
        println!(
            "| requests | runs | statistic | truth (ms) | no interval | held | share held [CP 95%] | below | above | both sides | bias / sd | ceiling |"
        );
        println!("|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|");
        for (c, &n) in counts.iter().enumerate() {
            for (j, row) in rows.iter().enumerate() {
                let mut t = Tally::default();
                for &(estimate, interval) in &said[c][j] {
                    t.add(estimate, interval, truth[j]);
                }
                let with = t.runs - t.none;
                let share = if with == 0 {
                    "—".to_string()
                } else {
                    let (lo, hi) = anvil_evidence::binomial::clopper_pearson(t.held, with, 0.95);
                    format!("{:.3} [{lo:.3}, {hi:.3}]", t.held as f64 / with as f64)
                };
                let m = mean(&t.estimates);
                let sd = (t.estimates.iter().map(|e| (e - m).powi(2)).sum::<f64>()
                    / (t.estimates.len().max(2) - 1) as f64)
                    .sqrt();
                println!(
                    "| {n} | {} | {} | {:.2} | {} | {}/{with} | {share} | {} | {} | {} | {:+.2} | {:.3} |",
                    t.runs,
                    row.label,
                    truth[j],
                    t.none,
                    t.held,
                    t.below,
                    t.above,
                    t.both,
                    (m - truth[j]) / sd,
                    ceiling(n, pooled.len() as u32),
                );
            }
        }
    }
    if verify {
        report_mismatches(verified, &mismatched);
    }
}

/// SplitMix64 (Steele, Lea & Flood, 2014): seeded uniforms for the queue part.
struct SplitMix64(u64);

impl SplitMix64 {
    /// Uniform on (0, 1].
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 + f64::EPSILON
    }

    fn exponential(&mut self, rate: f64) -> f64 {
        -self.unit().ln() / rate
    }
}

/// Sojourn times of `n` customers of an M/M/1 FIFO queue (service rate 1,
/// arrival rate `rho`) in order, started in its stationary state: each is
/// Exp(1 − ρ), and neighbours are correlated, the more so as ρ nears 1.
fn mm1(rng: &mut SplitMix64, rho: f64, n: usize) -> Vec<f64> {
    let mut wait = if rng.unit() < rho { rng.exponential(1.0 - rho) } else { 0.0 };
    (0..n)
        .map(|_| {
            let sojourn = wait + rng.exponential(1.0);
            wait = (sojourn - rng.exponential(rho)).max(0.0);
            sojourn
        })
        .collect()
}

/// A percentile's interval as the artifact gave it before each batch had
/// to expect a value beyond the percentile and before the independence
/// test: the mean's batches, `clamp(⌊n/40⌋, 10, 30)` of `⌊n/B⌋`, for every
/// percentile.
fn before_the_rule(ordered: &[f64], sorted: &[f64], percent: u32) -> (Option<f64>, Option<f64>) {
    let n = ordered.len();
    if n < 50 {
        return (None, None);
    }
    let count = (n / 40).clamp(10, 30);
    let size = n / count;
    let p = f64::from(percent) / 100.0;
    let estimate = anvil_loadgen::nearest_rank(sorted, percent);
    let below: Vec<f64> = ordered
        .chunks_exact(size)
        .take(count)
        .map(|b| b.iter().filter(|v| **v <= estimate).count() as f64 / size as f64)
        .collect();
    let m = mean(&below);
    let variance = below.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (count - 1) as f64;
    let level = Level::NINETY_FIVE;
    let t = level.t(count - 1).unwrap_or(level.z());
    let w = ((variance / (p * (1.0 - p) / size as f64)).sqrt() * t / level.z()).max(1.0);
    let (l, u) = anvil_loadgen::quantile_interval_ranks(n, percent);
    let centre = n as f64 * p;
    let low = l.map(|l| (centre - w * (centre - l as f64)).floor()).filter(|r| *r >= 1.0);
    let high = u.map(|u| (centre + w * (u as f64 - centre)).ceil()).filter(|r| *r <= n as f64);
    (low.map(|r| sorted[r as usize - 1]), high.map(|r| sorted[r as usize - 1]))
}

/// The mean's interval before the independence test: the batch means of
/// `clamp(⌊n/40⌋, 10, 30)` batches, whatever their correlation.
fn mean_before_the_test(ordered: &[f64]) -> (Option<f64>, Option<f64>) {
    let n = ordered.len();
    if n < 50 {
        return (None, None);
    }
    let count = (n / 40).clamp(10, 30);
    let size = n / count;
    let means: Vec<f64> =
        ordered.chunks_exact(size).take(count).map(|b| b.iter().sum::<f64>() / size as f64).collect();
    let m = mean(&means);
    let variance = means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (count - 1) as f64;
    let level = Level::NINETY_FIVE;
    let half = level.t(count - 1).unwrap_or(level.z()) * (variance / count as f64).sqrt();
    let centre = mean(ordered);
    (Some(centre - half), Some(centre + half))
}

/// The same intervals on a queue whose truth is known exactly: M/M/1
/// sojourn times (Exp(1 − ρ): p-th percentile `−ln(1 − p)/(1 − ρ)`, mean
/// `1/(1 − ρ)`), seeded, no engine and no clock, so thousands of trials
/// at every count from 50 to 6,400 take seconds. Each statistic's
/// interval as the artifact writes it now ([`estimate`], the code that
/// writes the artifact's) beside the same data's interval with the mean's
/// batches and no independence test ([`before_the_rule`],
/// [`mean_before_the_test`]).
fn queue() {
    let loads: Vec<f64> = env_list("COVERAGE_QUEUE_RHO", "0.5,0.8,0.9")
        .iter()
        .map(|r| r.parse().expect("a utilization"))
        .collect();
    let counts: Vec<usize> = env_list("COVERAGE_QUEUE_COUNTS", "50,100,200,400,800,1600,3200,6400")
        .iter()
        .map(|c| c.parse().expect("a count"))
        .collect();
    let trials = env("COVERAGE_QUEUE_TRIALS", 2000);
    let stats =
        [Stat::Percentile(50), Stat::Percentile(90), Stat::Percentile(95), Stat::Percentile(99), Stat::Mean];
    println!();
    println!(
        "M/M/1 FIFO sojourn times from the stationary state, {trials} seeded runs a row; 'now': the artifact's interval; 'before': the mean's batches for every statistic, no independence test"
    );
    let share = |t: &Tally| {
        let with = t.runs - t.none;
        if with == 0 {
            return "—".to_string();
        }
        let (lo, hi) = anvil_evidence::binomial::clopper_pearson(t.held, with, 0.95);
        format!("{:.3} [{lo:.3}, {hi:.3}]", t.held as f64 / with as f64)
    };
    // Misses over every run (a run without an interval claims nothing, so
    // misses nothing): what a gate reading the interval gets wrong.
    let missed = |t: &Tally| {
        let (lo, hi) = anvil_evidence::binomial::clopper_pearson(t.below + t.above, t.runs, 0.95);
        format!("{:.3} [{lo:.3}, {hi:.3}]", (t.below + t.above) as f64 / t.runs as f64)
    };
    for &rho in &loads {
        println!();
        println!("utilization {rho}");
        println!(
            "| requests | statistic | now: no interval | held | share held [CP 95%] | below | above | missed of all runs [CP 95%] | before: no interval | held | share held [CP 95%] | below | above | missed of all runs [CP 95%] |"
        );
        println!("|---:|---|---:|---:|---|---:|---:|---|---:|---:|---|---:|---:|---|");
        for &n in &counts {
            let mut rng = SplitMix64(0xC0FE ^ ((n as u64) << 20) ^ (rho * 1000.0) as u64);
            let (mut now, mut before): (Vec<Tally>, Vec<Tally>) = (
                stats.iter().map(|_| Tally::default()).collect(),
                stats.iter().map(|_| Tally::default()).collect(),
            );
            for _ in 0..trials {
                let values = mm1(&mut rng, rho, n);
                let mut sorted = values.clone();
                sorted.sort_by(f64::total_cmp);
                for (j, stat) in stats.iter().enumerate() {
                    let (statistic, truth) = match *stat {
                        Stat::Percentile(p) => {
                            (Statistic::Percentile(p), -(1.0 - f64::from(p) / 100.0).ln() / (1.0 - rho))
                        }
                        Stat::Mean => (Statistic::Mean, 1.0 / (1.0 - rho)),
                    };
                    let e = estimate(&values, statistic, Level::NINETY_FIVE).expect("values");
                    now[j].add(Some(e.value), (e.low, e.high), truth);
                    let old = match *stat {
                        Stat::Percentile(p) => before_the_rule(&values, &sorted, p),
                        Stat::Mean => mean_before_the_test(&values),
                    };
                    before[j].add(Some(e.value), old, truth);
                }
            }
            for (j, stat) in stats.iter().enumerate() {
                let label = match stat {
                    Stat::Percentile(p) => format!("p{p}"),
                    Stat::Mean => "mean".into(),
                };
                let (a, b) = (&now[j], &before[j]);
                println!(
                    "| {n} | {label} | {} | {}/{} | {} | {} | {} | {} | {} | {}/{} | {} | {} | {} | {} |",
                    a.none,
                    a.held,
                    a.runs - a.none,
                    share(a),
                    a.below,
                    a.above,
                    missed(a),
                    b.none,
                    b.held,
                    b.runs - b.none,
                    share(b),
                    b.below,
                    b.above,
                    missed(b)
                );
            }
        }
    }
}

fn main() {
    let only = std::env::var("COVERAGE_ONLY").unwrap_or_default();
    if only.is_empty() || only == "queue" {
        queue();
    }
    if only == "queue" {
        return;
    }
    let url = start_sim();
    match only.as_str() {
        "stop" => stopping_campaign(&url, env("COVERAGE_REFERENCE", 20_000) as u32),
        "" | "grid" => grid(&url),
        other => panic!("COVERAGE_ONLY={other}: queue, grid or stop"),
    }
}

/// What one cell of the stopping campaign measured: the rule's runs, its
/// long run's mean, and the fixed count that reaches the rule's precision.
struct StopCell {
    rate: f64,
    truth: f64,
    used: Vec<f64>,
    held: u64,
    precise: u64,
    /// The count, the windows that reached the precision, the windows.
    fixed: Option<(u32, usize, usize)>,
}

/// A stopping rule against fixed counts at the same precision, over a
/// campaign of cells whose noise differs (one engine under several Poisson
/// rates): E2E's mean within ±`within` of itself. Each cell has a long
/// steady-load reference run (its truth, and the windows that say which
/// fixed count reaches the precision) and `runs` runs of the rule. A
/// campaign that fixes `requests` must pick one count before it knows each
/// cell's noise, so the count that reaches the precision in every cell is
/// the largest of the cells' counts; the table prints that, and each cell's
/// own count, which only a reference of that very cell tells.
fn stopping_campaign(url: &str, reference_n: u32) {
    let rates: Vec<f64> = std::env::var("COVERAGE_STOP_RATES")
        .unwrap_or_else(|_| "100,200,250".into())
        .split(',')
        .filter_map(|r| r.trim().parse().ok())
        .collect();
    let runs = env("COVERAGE_STOP_RUNS", 34);
    let within = env("COVERAGE_STOP_WITHIN_PCT", 5) as f64 / 100.0;
    let rule = StoppingRule {
        until: vec!["e2e_mean_ms".into()],
        within,
        min_requests: 100,
        max_requests: 6400,
        max_duration_ms: None,
    };
    let mut cells = Vec::new();
    for (c, &rate) in rates.iter().enumerate() {
        let c = c as u64;
        eprintln!("stopping campaign: reference of {reference_n} requests at {rate} req/s ...");
        let steady = || Options { steady: true, ..Options::default() };
        let reference = measure_with(url, poisson(rate), reference_n, 10 + c, steady());
        let reference_e2e: Vec<f64> = reference.latencies.iter().map(|l| l.1).collect();
        let truth = f(&reference.artifact, "e2e_mean_ms").unwrap_or(f64::NAN);
        let mut cell = StopCell { rate, truth, used: Vec::new(), held: 0, precise: 0, fixed: None };
        for i in 0..runs {
            let options = Options { stopping: Some(rule.clone()), steady: true, verify: false };
            // Seeds of their own per cell: the sim's prefix cache outlives a run.
            let run = measure_with(url, poisson(rate), rule.max_requests, 5000 + 1000 * c + i, options);
            let stopping = run.artifact.stopping.as_ref().expect("a stopping record");
            cell.used.push(run.latencies.len() as f64);
            let at_end = &stopping.final_intervals["e2e_mean_ms"];
            cell.held += u64::from(holds((at_end.low, at_end.high), truth));
            cell.precise += u64::from(stopping.looks.last().is_some_and(|l| l.precise));
        }
        cell.fixed = fixed_count(&reference_e2e, within, rule.max_requests);
        eprintln!("{rate} req/s: rule used {:.0} on average; fixed count {:?}", mean(&cell.used), cell.fixed);
        cells.push(cell);
    }
    print_stopping_campaign(&rule, runs, &cells);
}

/// The smallest multiple of 100 (up to `most`) whose 95% interval of the
/// mean is within `within` in 95% of the windows of `series` of that length
/// (a window starts every quarter of its length: overlapping, so a 20,000-
/// request reference gives more than a handful of them at a few thousand).
fn fixed_count(series: &[f64], within: f64, most: u32) -> Option<(u32, usize, usize)> {
    for n in (100..=most as usize).step_by(100) {
        let step = n / 4;
        let windows: Vec<&[f64]> = (0..)
            .map(|k| k * step)
            .take_while(|s| s + n <= series.len())
            .map(|s| &series[s..s + n])
            .collect();
        if windows.len() < 4 {
            return None;
        }
        let reached = windows
            .iter()
            .filter(|w| {
                estimate(w, Statistic::Mean, Level::NINETY_FIVE)
                    .and_then(|e| e.relative_half_width())
                    .is_some_and(|h| h <= within)
            })
            .count();
        if reached as f64 >= 0.95 * windows.len() as f64 {
            return Some((n as u32, reached, windows.len()));
        }
    }
    None
}

fn print_stopping_campaign(rule: &StoppingRule, runs: u64, cells: &[StopCell]) {
    println!();
    println!(
        "stopping rule `until \"e2e_mean_ms\" within=\"{}%\"` (looks at {:?}, each at {:.2}%), {runs} runs a cell, steady-load, simulated engine",
        rule.within * 100.0,
        rule.looks(),
        rule.level().confidence * 100.0
    );
    println!(
        "| Poisson rate | reference e2e mean (ms) | rule: requests mean | median | max | reached precision | final interval held the reference mean | fixed count reaching it in 95% of the reference's windows |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for cell in cells {
        let mut sorted = cell.used.clone();
        sorted.sort_by(f64::total_cmp);
        let fixed = match cell.fixed {
            Some((n, reached, windows)) => format!("{n} ({reached}/{windows} windows)"),
            None => format!("none up to {}", rule.max_requests),
        };
        println!(
            "| {} req/s | {:.2} | {:.0} | {:.0} | {:.0} | {}/{runs} | {}/{runs} | {fixed} |",
            cell.rate,
            cell.truth,
            mean(&cell.used),
            sorted[sorted.len() / 2],
            sorted[sorted.len() - 1],
            cell.precise,
            cell.held
        );
    }
    let rule_total: f64 = cells.iter().map(|c| mean(&c.used)).sum();
    let total_runs = runs * cells.len() as u64;
    let held: u64 = cells.iter().map(|c| c.held).sum();
    let precise: u64 = cells.iter().map(|c| c.precise).sum();
    println!();
    println!("| the campaign ({} cells) | requests | reached precision | held |", cells.len());
    println!("|---|---:|---:|---:|");
    println!(
        "| stopping rule, mean over runs | {rule_total:.0} | {precise}/{total_runs} | {held}/{total_runs} |"
    );
    let fixed: Option<Vec<u32>> = cells.iter().map(|c| c.fixed.map(|f| f.0)).collect();
    match fixed {
        Some(counts) => {
            let largest = counts.iter().copied().max().unwrap_or(0);
            println!(
                "| one fixed count for every cell ({largest}) | {} | | (95% intervals) |",
                u64::from(largest) * cells.len() as u64
            );
            println!(
                "| each cell's own fixed count, known only from its reference | {} | | |",
                counts.iter().map(|&n| u64::from(n)).sum::<u64>()
            );
        }
        None => println!("| one fixed count for every cell | more than {} a cell | | |", rule.max_requests),
    }
}
