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
    eprintln!("reference: {reference_n} requests at {rate} req/s ...");
    let reference_run = measure(&url, rate, reference_n, 1);
    let reference_e2e: Vec<f64> = reference_run.latencies.iter().map(|l| l.1).collect();
    let reference = reference_run.artifact;
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
    // COVERAGE_ONLY=plain|steady|stop runs one part (after the reference).
    let only = std::env::var("COVERAGE_ONLY").unwrap_or_default();
    let part = |name: &str| only.is_empty() || only == name;
    if part("plain") {
        coverage(&url, rate, short, runs, false, &truth);
    }
    if part("steady") {
        coverage(&url, rate, short, runs, true, &truth);
    }
    if part("stop") {
        stopping_rule(&url, rate, &reference_e2e, f(&reference, "e2e_mean_ms").unwrap_or(f64::NAN));
    }
}

/// A stopping rule against fixed counts at the same precision: E2E's mean
/// within ±`STOP_WITHIN` of itself. The rule's runs stop at planned looks
/// (Bonferroni over them); the fixed count is the smallest multiple of 100
/// whose 95% interval reaches the precision in 95% of consecutive blocks of
/// the reference run (steady state throughout, so if anything it flatters
/// the fixed count).
fn stopping_rule(url: &str, rate: f64, reference_e2e: &[f64], truth: f64) {
    let runs = env("COVERAGE_STOP_RUNS", 30);
    let within = env("COVERAGE_STOP_WITHIN_PCT", 5) as f64 / 100.0;
    let rule = StoppingRule {
        until: vec!["e2e_mean_ms".into()],
        within,
        min_requests: 100,
        max_requests: 6400,
        max_duration_ms: None,
    };
    let (mut used, mut held, mut precise) = (Vec::new(), 0u64, 0u64);
    for i in 0..runs {
        let options = Options { stopping: Some(rule.clone()), steady: true };
        let run = measure_with(url, rate, rule.max_requests, 5000 + i, options);
        let stopping = run.artifact.stopping.as_ref().expect("a stopping record");
        used.push(run.latencies.len() as f64);
        let at_end = &stopping.final_intervals["e2e_mean_ms"];
        held += u64::from(holds((at_end.low, at_end.high), truth));
        precise += u64::from(stopping.looks.last().is_some_and(|l| l.precise));
        if (i + 1) % 10 == 0 {
            eprintln!("{} of {runs} stopping-rule runs", i + 1);
        }
    }
    let mut fixed = None;
    for n in (100..=6400).step_by(100) {
        let blocks: Vec<&[f64]> = reference_e2e.chunks_exact(n).collect();
        if blocks.len() < 3 {
            break;
        }
        let reached = blocks
            .iter()
            .filter(|b| {
                estimate(b, Statistic::Mean, Level::NINETY_FIVE)
                    .and_then(|e| e.relative_half_width())
                    .is_some_and(|w| w <= within)
            })
            .count();
        if reached as f64 >= 0.95 * blocks.len() as f64 {
            fixed = Some((n, reached, blocks.len()));
            break;
        }
    }
    let mut sorted = used.clone();
    sorted.sort_by(f64::total_cmp);
    println!();
    println!(
        "stopping rule `until \"e2e_mean_ms\" within=\"{}%\"` (looks at 100, 200, …, 6400; each at {:.2}%), {runs} runs, Poisson {rate} req/s",
        within * 100.0,
        rule.level().confidence * 100.0
    );
    println!(
        "| | requests: mean | median | max | reached precision | final interval held the reference mean |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    println!(
        "| stopping rule | {:.0} | {:.0} | {:.0} | {precise}/{runs} | {held}/{runs} |",
        mean(&used),
        sorted[sorted.len() / 2],
        sorted[sorted.len() - 1]
    );
    match fixed {
        Some((n, reached, blocks)) => println!(
            "| fixed count reaching it in 95% of reference blocks | {n} | {n} | {n} | {reached}/{blocks} blocks | (95% interval) |"
        ),
        None => println!(
            "| fixed count | none up to the reference's length reached it in 95% of blocks | | | | |"
        ),
    }
}
