//! Coverage of the artifact's 95% intervals, tested as a statistic should
//! be: not by one example but by how often they hold a known truth.
//!
//! The simulated engine (in this process, on its own runtime) serves an
//! open-loop Poisson load at about half its capacity, so latencies vary
//! from request to request with the queue. One long reference run (20,000
//! requests by default) gives the "true" TTFT p50, p99 and mean; then 100
//! short runs with other seeds (400 requests each) each give their own
//! intervals, and the table prints the share that hold the reference value.
//! Nominal is 95%; the bar is 90 of 100. The short runs go twice:
//! as they are, and with `steady-load` (100 lead requests on the schedule,
//! a tail until the measured ones end). Then a stopping rule's runs, against
//! the fixed count that reaches the same precision.
//!
//!   cargo bench -p anvil-loadgen --bench coverage
//!   COVERAGE_RUNS=100 COVERAGE_SHORT=400 COVERAGE_REFERENCE=20000 COVERAGE_RATE=200
//!   COVERAGE_STOP_RUNS=30 COVERAGE_STOP_WITHIN_PCT=5 (the defaults)
//!   COVERAGE_ONLY=plain|steady|stop: one part only (after the reference)

use anvil_loadgen::{
    Arrival, Benchmark, CellContext, CellSpec, Level, Progress, Statistic, StoppingRule, Target, estimate,
};

#[path = "common/in_process_sim.rs"]
mod in_process_sim;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
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

/// A run's artifact and its eligible requests' (TTFT, E2E) in send order.
struct Run {
    artifact: Benchmark,
    latencies: Vec<(f64, f64)>,
}

/// What a run sets beyond the load.
#[derive(Default)]
struct Options {
    stopping: Option<StoppingRule>,
    steady: bool,
}

fn measure(url: &str, rate: f64, requests: u32, seed: u64) -> Run {
    measure_with(url, rate, requests, seed, Options::default())
}

fn measure_with(url: &str, rate: f64, requests: u32, seed: u64, options: Options) -> Run {
    let mut spec = CellSpec {
        stopping: options.stopping,
        warmup_requests: if options.steady { 100 } else { 0 },
        name: format!("coverage-{seed}"),
        model: "coverage".into(),
        context_tokens: 128,
        max_tokens: 32,
        arrival: Arrival::Poisson { rate_per_s: rate },
        // Uncapped: the open loop stays open.
        concurrency: requests,
        requests,
        seed,
        canaries: false,
        request_timeout_ms: 60_000,
        ..CellSpec::default()
    };
    spec.options.steady_load = options.steady.then_some(true);
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
    let _ = std::fs::remove_dir_all(&dir);
    Run { artifact: cell.artifact, latencies }
}

/// The interval that assumes independent requests: exact order-statistic
/// ranks for a percentile, the protocol's 1.96 sd/sqrt(n) for the mean.
fn independent(values: &[f64], stat: Stat) -> (Option<f64>, Option<f64>) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match stat {
        Stat::Percentile(p) => {
            let (l, u) = anvil_loadgen::quantile_interval_ranks(sorted.len(), p);
            (l.map(|r| sorted[r - 1]), u.map(|r| sorted[r - 1]))
        }
        Stat::Mean => {
            let n = values.len() as f64;
            let m = mean(values);
            let sd = (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            (Some(m - 1.96 * sd / n.sqrt()), Some(m + 1.96 * sd / n.sqrt()))
        }
    }
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

/// One row of the table: its label, which series (0 TTFT, 1 E2E), the
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
            [Stat::Percentile(50), Stat::Percentile(99), Stat::Mean].map(|stat| {
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

/// `runs` short runs, with or without `steady-load`, against `truth`: prints the table.
fn coverage(url: &str, rate: f64, short: u32, runs: u64, steady: bool, truth: &[f64]) {
    let rows = rows();
    let k = rows.len();
    let (mut held, mut bounded, mut width, mut held_independent) =
        (vec![0u64; k], vec![0u64; k], vec![0.0; k], vec![0u64; k]);
    // Each short run's point estimate, to tell a biased estimate from a narrow interval.
    let mut estimates: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut effective = Vec::new();
    // Each run's E2E over its first and last tenth of sends, against its middle:
    // an idle start and a draining end read lower than the steady long run.
    let (mut first_tenth, mut last_tenth) = (Vec::new(), Vec::new());
    // What MSER-5 would still trim from each run (docs/metrics.md "Steady state").
    let (mut trimmed, mut tails) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let options = Options { stopping: None, steady };
        // Seeds of their own per pass: the sim's prefix cache outlives a
        // run, and a prompt it has seen prefills for free.
        let seed = if steady { 3000 } else { 1000 } + i;
        let run = measure_with(url, rate, short, seed, options);
        let b = &run.artifact;
        let series: [Vec<f64>; 2] =
            [run.latencies.iter().map(|l| l.0).collect(), run.latencies.iter().map(|l| l.1).collect()];
        effective.extend(f(b, "e2e_effective_samples"));
        if let Some(s) = &b.steady_state {
            trimmed.push(s.trimmed_head as f64);
            tails.push(s.trimmed_tail as f64);
        }
        let e2e = &series[1];
        let tenth = e2e.len() / 10;
        if tenth > 0 {
            let middle = mean(&e2e[tenth..e2e.len() - tenth]);
            first_tenth.push(mean(&e2e[..tenth]) / middle);
            last_tenth.push(mean(&e2e[e2e.len() - tenth..]) / middle);
        }
        for (j, row) in rows.iter().enumerate() {
            estimates[j].extend(f(b, &row.point));
            let interval = (f(b, &row.low), f(b, &row.high));
            if let (Some(l), Some(h)) = interval {
                bounded[j] += 1;
                width[j] += h - l;
            }
            held[j] += u64::from(holds(interval, truth[j]));
            held_independent[j] += u64::from(holds(independent(&series[row.series], row.stat), truth[j]));
        }
        if (i + 1) % 10 == 0 {
            eprintln!("{} of {runs} short runs{}", i + 1, if steady { " (steady load)" } else { "" });
        }
    }
    println!();
    let how = if steady { ", steady-load with 100 lead requests" } else { "" };
    println!("95% intervals of {runs} short runs ({short} requests, Poisson {rate} req/s{how})");
    println!(
        "| statistic | reference (ms) | artifact: held | bounded | mean width (ms) | independent: held | estimates: mean (ms) | sd (ms) | bias / sd |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (j, row) in rows.iter().enumerate() {
        let list = &estimates[j];
        let m = mean(list);
        let sd = (list.iter().map(|e| (e - m).powi(2)).sum::<f64>() / (list.len().max(2) - 1) as f64).sqrt();
        let avg = if bounded[j] > 0 { width[j] / bounded[j] as f64 } else { f64::NAN };
        println!(
            "| {} | {:.2} | {}/{runs} | {} | {avg:.2} | {}/{runs} | {m:.2} | {sd:.2} | {:+.2} |",
            row.label,
            truth[j],
            held[j],
            bounded[j],
            held_independent[j],
            (m - truth[j]) / sd
        );
    }
    println!(
        "e2e of the first tenth of sends / the middle: {:.3}; of the last tenth: {:.3}; mean of {:.0} effective samples a run; MSER-5 would trim {:.1} at the start and {:.1} at the end",
        mean(&first_tenth),
        mean(&last_tenth),
        mean(&effective),
        mean(&trimmed),
        mean(&tails)
    );
}

fn main() {
    let runs = env("COVERAGE_RUNS", 100);
    let short = env("COVERAGE_SHORT", 400) as u32;
    let reference_n = env("COVERAGE_REFERENCE", 20_000) as u32;
    let rate = env("COVERAGE_RATE", 200) as f64;
    let url = start_sim();
    // COVERAGE_ONLY=plain|steady|stop runs one part.
    let only = std::env::var("COVERAGE_ONLY").unwrap_or_default();
    let part = |name: &str| only.is_empty() || only == name;
    if part("plain") || part("steady") {
        eprintln!("reference: {reference_n} requests at {rate} req/s ...");
        let reference = measure(&url, rate, reference_n, 1).artifact;
        let truth: Vec<f64> = rows().iter().map(|r| f(&reference, &r.point).unwrap_or(f64::NAN)).collect();
        println!(
            "coverage of the artifact's 95% intervals against a {reference_n}-request reference run ({} failed), simulated engine",
            reference.failed
        );
        println!(
            "artifact: batch-means intervals (docs/metrics.md); independent: order statistics / 1.96 sd/sqrt(n), as if requests were independent"
        );
        println!(
            "an unbounded side (too few samples to bound it) holds everything; 'bounded' counts runs with both sides"
        );
        if part("plain") {
            coverage(&url, rate, short, runs, false, &truth);
        }
        if part("steady") {
            coverage(&url, rate, short, runs, true, &truth);
        }
    }
    if part("stop") {
        stopping_campaign(&url, reference_n);
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
        let steady = || Options { stopping: None, steady: true };
        let reference = measure_with(url, rate, reference_n, 10 + c, steady());
        let reference_e2e: Vec<f64> = reference.latencies.iter().map(|l| l.1).collect();
        let truth = f(&reference.artifact, "e2e_mean_ms").unwrap_or(f64::NAN);
        let mut cell = StopCell { rate, truth, used: Vec::new(), held: 0, precise: 0, fixed: None };
        for i in 0..runs {
            let options = Options { stopping: Some(rule.clone()), steady: true };
            // Seeds of their own per cell: the sim's prefix cache outlives a run.
            let run = measure_with(url, rate, rule.max_requests, 5000 + 1000 * c + i, options);
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
