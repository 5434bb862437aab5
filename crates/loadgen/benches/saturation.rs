//! The over-saturation rules' false verdicts and detection delay, printed
//! as two tables across service distribution and load.
//!
//! No server, no clock: `anvil_loadgen::queue_model`, a discrete-event
//! model of a server (`slots` sequences admitted first come, first served,
//! no slowdown as the batch fills; Poisson arrivals at `util × slots /
//! mean service`), drives the real rules.
//! - The watch (`SaturationWatch`, `FlightLog`), looked at each arrival as
//!   `run.rs` does, until it fires or the row's horizon: below capacity a
//!   stop is false; above it a run that never stopped is a miss; the delay
//!   is the stop's time, p50 and p95 over the runs that stopped, in seconds
//!   and in mean service times `L`.
//! - The verdict at the end (`output/drain.rs`), on finished runs of
//!   `SATURATION_REQUESTS` requests (default 4,000): below capacity an
//!   over-saturated mark is false; above it a run not marked is a miss.
//!
//! Service: lognormal of mean 1 s with σ 0.3 (CV 0.31), 1 (CV 1.3) and 1.5
//! (CV 2.9); bimodal 0.2 s or 20 s with 5% and 8% long (CV 3.5 and 4.3).
//! Every share carries its Clopper–Pearson 95% interval.
//!
//!   cargo bench -p anvil-loadgen --bench saturation
//!   SATURATION_SEEDS=200 SATURATION_SLOTS=64 SATURATION_REQUESTS=4000 (the defaults);
//!   SATURATION_DETAIL=1 prints, to stderr, what the watch saw at each
//!   row's first stop.

use anvil_loadgen::queue_model::{Load, Service, SplitMix64, finished_run, watched_run};

const UTILIZATIONS: [f64; 11] = [0.5, 0.7, 0.9, 0.95, 1.05, 1.1, 1.5, 2.0, 5.0, 15.0, 20.0];

const SERVICES: [Service; 5] = [
    Service::Lognormal { mean_s: 1.0, sigma: 0.3 },
    Service::Lognormal { mean_s: 1.0, sigma: 1.0 },
    Service::Lognormal { mean_s: 1.0, sigma: 1.5 },
    Service::Bimodal { short_s: 0.2, long_s: 20.0, long_share: 0.05 },
    Service::Bimodal { short_s: 0.2, long_s: 20.0, long_share: 0.08 },
];

/// Model time a watched run goes on without a stop: 300 mean service
/// times, and 15 of the longest replies (250 mean ones) for the bimodal.
fn horizon_s(service: Service) -> f64 {
    match service {
        Service::Lognormal { mean_s, .. } => 300.0 * mean_s,
        Service::Bimodal { long_s, .. } => 15.0 * long_s,
    }
}

/// Clopper–Pearson 95% interval of a share `k / n`, as "p% [lo, hi]".
fn share(k: u64, n: u64) -> String {
    let (lo, hi) = anvil_evidence::binomial::clopper_pearson(k, n, 0.95);
    format!("{:.1} [{:.1}, {:.1}]", 100.0 * k as f64 / n as f64, 100.0 * lo, 100.0 * hi)
}

/// Nearest-rank quantile of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Each seed's result of `one`, over the machine's threads.
fn over_seeds<T: Send>(seeds: u64, stream: u64, one: impl Fn(u64) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    std::thread::scope(|scope| {
        let one = &one;
        let workers: Vec<_> = (0..threads)
            .map(|w| {
                scope.spawn(move || {
                    (w..seeds)
                        .step_by(threads as usize)
                        .map(|s| {
                            one(SplitMix64::from_state(stream ^ s.wrapping_mul(0xD6E8_FEB8_6659_FD93))
                                .next_u64())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("worker")).collect()
    })
}

/// A row's seed stream: its service, load and slots.
fn stream(service: usize, load: Load, salt: u64) -> u64 {
    (service as u64) << 48 ^ (load.slots as u64) << 32 ^ (load.utilization * 100.0) as u64 ^ salt << 56
}

/// One row of the watch's table.
fn watch_row(index: usize, load: Load, seeds: u64, details: bool) {
    let horizon = horizon_s(load.service);
    let stops = over_seeds(seeds, stream(index, load, 0), |seed| watched_run(load, horizon, seed));
    if details && let Some(first) = stops.iter().flatten().next() {
        eprintln!("{} {}x: {}", load.service.label(), load.utilization, first.detail);
    }
    let mut at: Vec<f64> = stops.iter().flatten().map(|s| s.at_s).collect();
    at.sort_by(f64::total_cmp);
    let (stopped, runs) = (at.len() as u64, stops.len() as u64);
    let overloaded = load.utilization > 1.0;
    let (false_stops, misses) = match overloaded {
        false => (stopped.to_string(), "-".into()),
        true => ("-".into(), (runs - stopped).to_string()),
    };
    let mean = load.service.mean_s();
    let delay = |q: f64, per: f64| match at.is_empty() || !overloaded {
        false => format!("{:.1}", quantile(&at, q) / per),
        true => "-".into(),
    };
    println!(
        "{:<22} {:>5.2} {:>5} {:>6.0} {:>4} {:>5} {:>6} {:>19} {:>6} {:>6} {:>6} {:>6}",
        load.service.label(),
        load.utilization,
        load.slots,
        horizon,
        runs,
        false_stops,
        misses,
        share(stopped, runs),
        delay(0.5, 1.0),
        delay(0.95, 1.0),
        delay(0.5, mean),
        delay(0.95, mean),
    );
}

/// One row of the end verdict's table.
fn end_row(index: usize, load: Load, seeds: u64, requests: usize) {
    let marks = over_seeds(seeds, stream(index, load, 1), |seed| {
        let run = finished_run(load, requests, seed);
        let sends: Vec<(f64, f64)> = run.iter().map(|&(send, end)| (send * 1000.0, end * 1000.0)).collect();
        anvil_loadgen::drain::judge(&sends).is_some_and(|v| v.over_saturated)
    });
    let (marked, runs) = (marks.iter().filter(|m| **m).count() as u64, marks.len() as u64);
    let (false_marks, misses) = match load.utilization > 1.0 {
        false => (marked.to_string(), "-".into()),
        true => ("-".into(), (runs - marked).to_string()),
    };
    println!(
        "{:<22} {:>5.2} {:>5} {:>8} {:>4} {:>5} {:>6} {:>19}",
        load.service.label(),
        load.utilization,
        load.slots,
        requests,
        runs,
        false_marks,
        misses,
        share(marked, runs)
    );
}

fn main() {
    let seeds: u64 = env("SATURATION_SEEDS").unwrap_or(200);
    let requests: usize = env("SATURATION_REQUESTS").unwrap_or(4000);
    let slots: Vec<usize> = std::env::var("SATURATION_SLOTS")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![64]);
    let details = std::env::var_os("SATURATION_DETAIL").is_some();
    let started = std::time::Instant::now();
    let loads = || {
        slots.iter().flat_map(|&slots| {
            SERVICES.iter().enumerate().flat_map(move |(i, &service)| {
                UTILIZATIONS.iter().map(move |&utilization| (i, Load { utilization, service, slots }))
            })
        })
    };
    println!("The watch, during the run:");
    println!(
        "{:<22} {:>5} {:>5} {:>6} {:>4} {:>5} {:>6} {:>19} {:>6} {:>6} {:>6} {:>6}",
        "service",
        "util",
        "slots",
        "horiz",
        "runs",
        "false",
        "misses",
        "stop% [95% CI]",
        "p50_s",
        "p95_s",
        "p50/L",
        "p95/L"
    );
    for (i, load) in loads() {
        watch_row(i, load, seeds, details);
    }
    println!("\nThe verdict at the end, {requests} requests a run:");
    println!(
        "{:<22} {:>5} {:>5} {:>8} {:>4} {:>5} {:>6} {:>19}",
        "service", "util", "slots", "requests", "runs", "false", "misses", "marked% [95% CI]"
    );
    for (i, load) in loads() {
        end_row(i, load, seeds, requests);
    }
    println!(
        "util: arrival rate / capacity (slots / mean service); false: stops (marks) below capacity; misses: \
         runs above it not stopped by horiz (s) or not marked; shares with their Clopper-Pearson 95% \
         interval; p50/p95: stop time of the runs that stopped above capacity, in model s and in mean \
         service times L ({seeds} seeds; {:.0} s wall)",
        started.elapsed().as_secs_f64()
    );
}
