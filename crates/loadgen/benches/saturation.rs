//! The over-saturation rule's false stops and detection delay, printed as
//! one table across load and reply length.
//!
//! No server, no clock: a discrete-event model of an LLM server drives the
//! real `SaturationWatch` and `FlightLog` the way the open loop does.
//! - The server runs `slots` sequences at once and admits requests first
//!   come, first served (a FIFO queue in front of `slots` servers); it does
//!   not slow down as its batch fills.
//! - A request's service time (its reply's length) is lognormal with the
//!   row's mean and a coefficient of variation of 0.3.
//! - Arrivals are Poisson at `utilization × capacity`, capacity being
//!   `slots / mean service time` requests a second.
//! - At each send, as `run.rs` does: the requests that ended by then reach
//!   the flight log (`ended(send_ms, sojourn_ms)`, in order of their end), then, when the
//!   watch is `due(t)`, `look(t, sent so far, ended so far, p95 sojourn)`.
//!
//! Each cell runs `SATURATION_SEEDS` seeded runs (default 200), each until
//! the watch fires or `max(60 s, 30 × reply length)` of model time. Below
//! capacity a stop is a false stop; at 1.1× capacity and above a run that
//! never stopped is a miss. Stop shares carry a Clopper–Pearson 95%
//! interval; the delay is the stop's time after the start, p50 and p95 over
//! the runs that stopped, in seconds and in reply lengths.
//!
//!   cargo bench -p anvil-loadgen --bench saturation
//!   SATURATION_SEEDS=200 SATURATION_SLOTS=64,256 SATURATION_CV=0.3 (the defaults);
//!   SATURATION_DETAIL=1 prints, to stderr, what the watch saw at each
//!   row's first stop.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use anvil_loadgen::{FlightLog, SaturationWatch};

const UTILIZATIONS: [f64; 9] = [0.5, 0.7, 0.9, 0.95, 1.1, 1.3, 1.5, 2.0, 3.0];
const REPLY_S: [f64; 5] = [0.1, 0.3, 1.0, 3.0, 10.0];
/// Coefficient of variation of a request's service time, unless
/// `SATURATION_CV` says otherwise.
const SERVICE_CV: f64 = 0.3;

/// SplitMix64 (Steele, Lea & Flood, 2014): small, seeded, good enough here.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform on (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    fn exponential(&mut self, rate: f64) -> f64 {
        -self.unit().ln() / rate
    }

    /// Standard normal (Box–Muller, one of the pair).
    fn normal(&mut self) -> f64 {
        (-2.0 * self.unit().ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }

    /// Lognormal with this mean and coefficient of variation.
    fn lognormal(&mut self, mean: f64, cv: f64) -> f64 {
        let sigma2 = (1.0 + cv * cv).ln();
        mean * (sigma2.sqrt() * self.normal() - sigma2 / 2.0).exp()
    }
}

/// A time as a heap key: non-negative floats order as their bits do.
fn key(t: f64) -> Reverse<u64> {
    Reverse(t.to_bits())
}

/// One cell's load.
#[derive(Clone, Copy)]
struct Cell {
    utilization: f64,
    reply_s: f64,
    cv: f64,
    slots: usize,
    horizon_s: f64,
}

/// One run: the time the watch fired at and what it saw, or `None` by the horizon.
fn run(cell: Cell, seed: u64) -> Option<(f64, String)> {
    let Cell { utilization, reply_s, cv, slots, horizon_s } = cell;
    let mut rng = SplitMix64(seed);
    let rate = utilization * slots as f64 / reply_s;
    // When each slot next falls free, and the in-flight requests' (end, sojourn).
    let mut free: BinaryHeap<Reverse<u64>> = (0..slots).map(|_| key(0.0)).collect();
    let mut ends: BinaryHeap<(Reverse<u64>, u64)> = BinaryHeap::new();
    let mut watch = SaturationWatch::default();
    let flights = FlightLog::default();
    let (mut t, mut ended) = (0.0, 0u64);
    for sent in 0u64.. {
        t += rng.exponential(rate);
        if t > horizon_s {
            return None;
        }
        while let Some(&(Reverse(end), sojourn)) = ends.peek()
            && f64::from_bits(end) <= t
        {
            ends.pop();
            let (end_s, sojourn_s) = (f64::from_bits(end), f64::from_bits(sojourn));
            flights.ended((end_s - sojourn_s) * 1000.0, sojourn_s * 1000.0);
            ended += 1;
        }
        if watch.due(t)
            && let Some(saturated) = watch.look(t, sent, ended, &flights)
        {
            return Some((t, saturated.detail));
        }
        let Reverse(slot_free) = free.pop().expect("slots");
        let end = f64::from_bits(slot_free).max(t) + rng.lognormal(reply_s, cv);
        free.push(key(end));
        ends.push((key(end), (end - t).to_bits()));
    }
    unreachable!()
}

/// Clopper–Pearson 95% interval of a share `k / n`.
fn clopper_pearson(k: u64, n: u64) -> (f64, f64) {
    anvil_evidence::binomial::clopper_pearson(k, n, 0.95)
}

/// Nearest-rank quantile of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn main() {
    let seeds: u64 = env("SATURATION_SEEDS").unwrap_or(200);
    let cv: f64 = env("SATURATION_CV").unwrap_or(SERVICE_CV);
    let slots: Vec<usize> = std::env::var("SATURATION_SLOTS")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![64, 256]);
    let details = std::env::var_os("SATURATION_DETAIL").is_some();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let started = std::time::Instant::now();

    let row = |cells: [&str; 12]| {
        let [util, reply, slots, horizon, runs, false_stops, misses, share, p50, p95, p50_l, p95_l] = cells;
        println!(
            "{util:>5} {reply:>7} {slots:>5} {horizon:>7} {runs:>4} {false_stops:>5} {misses:>6} {share:>19} \
             {p50:>6} {p95:>6} {p50_l:>6} {p95_l:>6}"
        );
    };
    row([
        "util",
        "reply_s",
        "slots",
        "horiz_s",
        "runs",
        "false",
        "misses",
        "stop% [95% CI]",
        "p50_s",
        "p95_s",
        "p50/L",
        "p95/L",
    ]);
    for &slot_count in &slots {
        for reply_s in REPLY_S {
            for utilization in UTILIZATIONS {
                let cell = Cell {
                    utilization,
                    reply_s,
                    cv,
                    slots: slot_count,
                    horizon_s: (30.0 * reply_s).max(60.0),
                };
                let stream = (slot_count as u64) << 40
                    | ((reply_s * 1000.0) as u64) << 20
                    | (utilization * 100.0) as u64;
                let stops: Vec<Option<(f64, String)>> = std::thread::scope(|scope| {
                    let workers: Vec<_> = (0..threads as u64)
                        .map(|w| {
                            scope.spawn(move || {
                                (w..seeds)
                                    .step_by(threads)
                                    .map(|s| {
                                        run(
                                            cell,
                                            SplitMix64(stream ^ s.wrapping_mul(0xD6E8_FEB8_6659_FD93))
                                                .next_u64(),
                                        )
                                    })
                                    .collect::<Vec<_>>()
                            })
                        })
                        .collect();
                    workers.into_iter().flat_map(|w| w.join().expect("worker")).collect()
                });
                let overloaded = utilization > 1.0;
                if details && let Some((_, detail)) = stops.iter().flatten().next() {
                    eprintln!("{utilization}x, {reply_s} s, {slot_count} slots: {detail}");
                }
                let mut at: Vec<f64> = stops.iter().flatten().map(|(t, _)| *t).collect();
                at.sort_by(f64::total_cmp);
                let (stopped, runs) = (at.len() as u64, stops.len() as u64);
                let (lo, hi) = clopper_pearson(stopped, runs);
                let (false_stops, misses) = match overloaded {
                    false => (stopped.to_string(), "-".to_string()),
                    true => ("-".to_string(), (runs - stopped).to_string()),
                };
                let delay = |q: f64, per: f64| match at.is_empty() {
                    false => format!("{:.2}", quantile(&at, q) / per),
                    true => "-".to_string(),
                };
                row([
                    &format!("{utilization:.2}"),
                    &reply_s.to_string(),
                    &slot_count.to_string(),
                    &cell.horizon_s.to_string(),
                    &runs.to_string(),
                    &false_stops,
                    &misses,
                    &format!(
                        "{:.1} [{:.1}, {:.1}]",
                        100.0 * stopped as f64 / runs as f64,
                        100.0 * lo,
                        100.0 * hi
                    ),
                    &delay(0.5, 1.0),
                    &delay(0.95, 1.0),
                    &delay(0.5, reply_s),
                    &delay(0.95, reply_s),
                ]);
            }
        }
    }
    println!(
        "util: arrival rate / capacity (slots / mean reply); false: stops below capacity; misses: no stop by \
         horiz_s above it; stop%: share of runs stopped, Clopper-Pearson 95%; p50/p95: stop time of the runs \
         that stopped (a detection delay above capacity), in model s and in reply lengths L \
         (lognormal replies, CV {cv}; {seeds} seeds; {:.0} s wall)",
        started.elapsed().as_secs_f64()
    );
}
