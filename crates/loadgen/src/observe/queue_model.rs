//! A discrete-event model of a server, to judge the over-saturation rules
//! against a known truth: `slots` sequences at once, admitted first come,
//! first served (a FIFO queue in front of `slots` servers), that do not
//! slow down as the batch fills; Poisson arrivals at `utilization ×
//! capacity`, capacity being `slots / mean service time`. Shared by the
//! rule's unit tests and `benches/saturation.rs`; not part of the load
//! generator's behaviour.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::saturation::{FlightLog, Saturated, SaturationWatch};
pub use crate::workload::split_mix::SplitMix64;

/// How long a request holds its slot (its reply's length).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Service {
    /// Lognormal with this mean and log-scale standard deviation `sigma`
    /// (σ 0.3 is a coefficient of variation of 0.31; σ 1.5 of 2.9).
    Lognormal { mean_s: f64, sigma: f64 },
    /// `short_s` or, with probability `long_share`, `long_s`.
    Bimodal { short_s: f64, long_s: f64, long_share: f64 },
}

impl Service {
    pub fn mean_s(self) -> f64 {
        match self {
            Service::Lognormal { mean_s, .. } => mean_s,
            Service::Bimodal { short_s, long_s, long_share } => short_s + long_share * (long_s - short_s),
        }
    }

    pub fn sample(self, rng: &mut SplitMix64) -> f64 {
        match self {
            Service::Lognormal { mean_s, sigma } => {
                mean_s * (sigma * rng.normal() - sigma * sigma / 2.0).exp()
            }
            Service::Bimodal { short_s, long_s, long_share } => match rng.unit() <= long_share {
                true => long_s,
                false => short_s,
            },
        }
    }

    /// A short name for a table row.
    pub fn label(self) -> String {
        match self {
            Service::Lognormal { mean_s, sigma } => format!("logn σ{sigma} {mean_s}s"),
            Service::Bimodal { short_s, long_s, long_share } => {
                format!("bimodal {short_s}/{long_s}s {:.0}%", long_share * 100.0)
            }
        }
    }
}

/// One model run's load.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Arrival rate over capacity.
    pub utilization: f64,
    pub service: Service,
    pub slots: usize,
}

impl Load {
    pub fn rate_per_s(&self) -> f64 {
        self.utilization * self.slots as f64 / self.service.mean_s()
    }
}

/// A time as a heap key: non-negative floats order as their bits do.
fn key(t: f64) -> Reverse<u64> {
    Reverse(t.to_bits())
}

/// The model server: when each slot next falls free, and the requests in
/// flight by their end.
struct Server {
    free: BinaryHeap<Reverse<u64>>,
    /// `(end, send)` of each request in flight, earliest end first.
    ends: BinaryHeap<(Reverse<u64>, u64)>,
}

impl Server {
    fn new(slots: usize) -> Server {
        Server { free: (0..slots).map(|_| key(0.0)).collect(), ends: BinaryHeap::new() }
    }

    /// A request arriving at `t` that holds a slot for `service_s` once it has one.
    fn admit(&mut self, t: f64, service_s: f64) -> f64 {
        let Reverse(slot_free) = self.free.pop().expect("a server has slots");
        let end = f64::from_bits(slot_free).max(t) + service_s;
        self.free.push(key(end));
        self.ends.push((key(end), t.to_bits()));
        end
    }

    /// The next request to end by `t`, as `(send, end)`.
    fn next_ended_by(&mut self, t: f64) -> Option<(f64, f64)> {
        let &(Reverse(end), send) = self.ends.peek()?;
        (f64::from_bits(end) <= t).then(|| {
            self.ends.pop();
            (f64::from_bits(send), f64::from_bits(end))
        })
    }
}

/// One open-loop run watched as `run.rs` watches it: at each arrival, the
/// requests that ended by then reach the flight log (in order of their
/// end), then, when a look is due, the watch looks. Until the watch fires
/// (its verdict) or `horizon_s` of model time (`None`).
pub fn watched_run(load: Load, horizon_s: f64, seed: u64) -> Option<Saturated> {
    let mut rng = SplitMix64::from_state(seed);
    let rate = load.rate_per_s();
    let mut server = Server::new(load.slots);
    let mut watch = SaturationWatch::default();
    let flights = FlightLog::default();
    let (mut t, mut ended) = (0.0, 0u64);
    for sent in 0u64.. {
        t += rng.exponential(rate);
        if t > horizon_s {
            return None;
        }
        while let Some((send, _)) = server.next_ended_by(t) {
            flights.ended(send * 1000.0);
            ended += 1;
        }
        if watch.due(t)
            && let Some(saturated) = watch.look(t, sent, ended, &flights)
        {
            return Some(saturated);
        }
        server.admit(t, load.service.sample(&mut rng));
    }
    unreachable!("the loop returns at the horizon")
}

/// One finished open-loop run of `requests` requests, unwatched: each
/// request's `(send, end)` in seconds, in order of sending.
pub fn finished_run(load: Load, requests: usize, seed: u64) -> Vec<(f64, f64)> {
    let mut rng = SplitMix64::from_state(seed);
    let rate = load.rate_per_s();
    let mut server = Server::new(load.slots);
    let mut t = 0.0;
    (0..requests)
        .map(|_| {
            t += rng.exponential(rate);
            (t, server.admit(t, load.service.sample(&mut rng)))
        })
        .collect()
}
