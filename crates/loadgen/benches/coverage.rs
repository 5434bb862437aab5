//! Coverage of the artifact's 95% intervals, tested as a statistic should
//! be: not by one example but by how often they hold a known truth.
//!
//! The simulated engine (in this process, on its own runtime) serves an
//! open-loop Poisson load at about half its capacity, so latencies vary
//! from request to request with the queue. One long reference run (20,000
//! requests by default) gives the "true" TTFT p50, p99 and mean; then 100
//! short runs with other seeds (400 requests each) each give their own
//! intervals, and the table prints the share that hold the reference value.
//! Nominal is 95%; the bar is 90 of 100.
//!
//!   cargo bench -p anvil-loadgen --bench coverage
//!   COVERAGE_RUNS=100 COVERAGE_SHORT=400 COVERAGE_REFERENCE=20000 COVERAGE_RATE=200 (the defaults)

use anvil_loadgen::{Arrival, Benchmark, CellContext, CellSpec, Progress, Target};

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

fn measure(url: &str, rate: f64, requests: u32, seed: u64) -> Run {
    let spec = CellSpec {
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

/// Sectioning (Asmussen & Glynn, *Stochastic Simulation*, 2007, §III.5 and
/// §IV.4): the run cut into `k` consecutive sections by send order, the
/// statistic of each, and a Student-t 95% interval of their mean around the
/// whole run's statistic. Correlated neighbours fall mostly in one section,
/// so the sections' spread sees the correlation the per-request interval
/// ignores.
fn sectioned(values: &[f64], k: usize, stat: impl Fn(&[f64]) -> f64) -> Option<(f64, f64)> {
    if values.len() < k * 2 {
        return None;
    }
    let per = values.len() / k;
    let sections: Vec<f64> = (0..k).map(|i| stat(&values[i * per..(i + 1) * per])).collect();
    let mean = sections.iter().sum::<f64>() / k as f64;
    let sd = (sections.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (k - 1) as f64).sqrt();
    // t(0.975, 9) for the default ten sections; the general case is not needed here.
    let t = if k == 10 { 2.262 } else { 1.96 };
    let centre = stat(values);
    let half = t * sd / (k as f64).sqrt();
    Some((centre - half, centre + half))
}

fn quantile(values: &[f64], p: u32) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    anvil_loadgen::nearest_rank(&sorted, p)
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

fn main() {
    let runs = env("COVERAGE_RUNS", 100);
    let short = env("COVERAGE_SHORT", 400) as u32;
    let reference_n = env("COVERAGE_REFERENCE", 20_000) as u32;
    let rate = env("COVERAGE_RATE", 200) as f64;
    let url = start_sim();
    eprintln!("reference: {reference_n} requests at {rate} req/s ...");
    let reference = measure(&url, rate, reference_n, 1).artifact;
    let truth = [
        ("ttft p50", f(&reference, "ttft_p50_ms"), "ttft_p50_ci95_low_ms", "ttft_p50_ci95_high_ms"),
        ("ttft p99", f(&reference, "ttft_p99_ms"), "ttft_p99_ci95_low_ms", "ttft_p99_ci95_high_ms"),
        ("ttft mean", f(&reference, "ttft_mean_ms"), "ttft_mean_ci95_low_ms", "ttft_mean_ci95_high_ms"),
        ("e2e p50", f(&reference, "e2e_p50_ms"), "e2e_p50_ci95_low_ms", "e2e_p50_ci95_high_ms"),
        ("e2e p99", f(&reference, "e2e_p99_ms"), "e2e_p99_ci95_low_ms", "e2e_p99_ci95_high_ms"),
    ];
    let mut held = [0u64; 5];
    let mut bounded = [0u64; 5];
    let mut width = [0.0f64; 5];
    let mut held_sectioned = [0u64; 5];
    let mut width_sectioned = [0.0f64; 5];
    for i in 0..runs {
        let run = measure(&url, rate, short, 1000 + i);
        let b = &run.artifact;
        let ttft: Vec<f64> = run.latencies.iter().map(|l| l.0).collect();
        let e2e: Vec<f64> = run.latencies.iter().map(|l| l.1).collect();
        let by_sections = [
            sectioned(&ttft, 10, |v| quantile(v, 50)),
            sectioned(&ttft, 10, |v| quantile(v, 99)),
            sectioned(&ttft, 10, mean),
            sectioned(&e2e, 10, |v| quantile(v, 50)),
            sectioned(&e2e, 10, |v| quantile(v, 99)),
        ];
        for (k, (_, value, low, high)) in truth.iter().enumerate() {
            let Some(value) = value else { continue };
            if let Some((low, high)) = by_sections[k] {
                width_sectioned[k] += high - low;
                if low <= *value && *value <= high {
                    held_sectioned[k] += 1;
                }
            }
            let (Some(low), Some(high)) = (f(b, low), f(b, high)) else { continue };
            bounded[k] += 1;
            width[k] += high - low;
            if low <= *value && *value <= high {
                held[k] += 1;
            }
        }
        if (i + 1) % 10 == 0 {
            eprintln!("{} of {runs} short runs", i + 1);
        }
    }
    println!();
    println!(
        "95% intervals of {runs} short runs ({short} requests, Poisson {rate} req/s) against a {reference_n}-request reference run, simulated engine"
    );
    println!(
        "artifact: per-request intervals (order statistics; mean: 1.96 sd/sqrt n); sectioned: 10 consecutive sections, Student-t"
    );
    println!(
        "| statistic | reference (ms) | artifact: held | coverage | mean width (ms) | sectioned: held | coverage | mean width (ms) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (k, (name, value, _, _)) in truth.iter().enumerate() {
        let share = |held: u64, of: u64| if of > 0 { 100.0 * held as f64 / of as f64 } else { f64::NAN };
        let avg = |sum: f64, of: u64| if of > 0 { sum / of as f64 } else { f64::NAN };
        println!(
            "| {name} | {:.2} | {}/{} | {:.0}% | {:.2} | {}/{runs} | {:.0}% | {:.2} |",
            value.unwrap_or(f64::NAN),
            held[k],
            bounded[k],
            share(held[k], bounded[k]),
            avg(width[k], bounded[k]),
            held_sectioned[k],
            share(held_sectioned[k], runs),
            avg(width_sectioned[k], runs),
        );
    }
    println!("reference: {} requests, {} failed", reference.requests, reference.failed);
}
