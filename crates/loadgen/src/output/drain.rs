//! Over-saturation judged at the end of an open loop, from every request's
//! due time and end: whether the server kept up with the arrivals over the
//! sending window, even when every request was sent and ended. The watch
//! during the run (`observe/saturation.rs`) needs about ten requests of its
//! first cohort to end before it can speak; a cell that sends its 100
//! requests in 5 s to a server that ends one every 0.75 s has sent
//! everything by then, and its requests all end, 80 s later.
//!
//! Split the requests, in order of their due times, into a first and a
//! second half of `m` each. Their median due times are `m` requests apart:
//! the offered rate is `m / (s₂ − s₁)`. A server that keeps up returns each
//! half a typical sojourn later, and in a stable queue the typical sojourn
//! of the second half is that of the first (stationary, whatever the
//! service distribution; the median is not moved by a heavy tail, where a
//! mean or a last end would be). Moved on by their median sojourns `w₁`,
//! `w₂`, the halves' median ends are `m` completions apart: the achieved
//! rate is `m / (s₂ + w₂ − s₁ − w₁)`. Past capacity by `ρ`, FIFO admission
//! makes a request wait `(ρ − 1)` times its due time, so `w₂ − w₁ = (ρ − 1)
//! (s₂ − s₁)` and the achieved rate is the capacity, `1/ρ` of the offered.
//!
//! The median, not a low percentile: past capacity every request waits, so
//! every percentile moves; a stable queue's episodes of queueing delay only
//! the requests that arrive in them, so a low percentile would move less
//! for them, but it also moves late when the overload starts inside the
//! window (a bimodal server fills with its long replies for 20 s first):
//! with the 10th percentile, 11 of 40 runs of 2,000 requests at 1.5× were
//! marked, against all 40 with the median.
//!
//! The margin for noise: each median is replaced by its distribution-free
//! 95% bound in the server's favour (`w₂` by its lower bound, `w₁` by its
//! upper: order statistics, `output::stats::quantile_interval_ranks`),
//! giving `achieved_rate_high_per_s`; the cell is marked over-saturated when
//! even that falls below `(1 − MARGIN)` of the offered rate ([`MARGIN`] 5%,
//! for the waiting a stable queue builds as it fills and a server that
//! slows as its batch grows). Requests near each other share a queue, so
//! their sojourns are not independent; `benches/saturation.rs` measures
//! the false marks that leaves.

use serde::{Deserialize, Serialize};

use crate::output::record_log::{Stored, col};
use crate::output::stats::quantile_interval_ranks;

/// The achieved rate's upper bound below this share of the offered rate short of 1 is over-saturated.
pub const MARGIN: f64 = 0.10;
/// The sojourn percentile each half is moved on by.
pub const SOJOURN_PERCENTILE: u32 = 50;
/// Fewest requests in each half for a verdict.
pub const MIN_HALF: usize = 10;

/// The artifact's `ending.drain`: an open loop's verdict at its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drain {
    /// The achieved rate's upper bound fell more than `MARGIN` short of the offered rate.
    pub over_saturated: bool,
    /// The repeat judged: the one whose achieved rate fell furthest short.
    pub repeat: u32,
    /// Requests in each half.
    pub half: u64,
    /// Requests a second due: `half` over the halves' median due times.
    pub offered_rate_per_s: f64,
    /// Requests a second ended: `half` over the halves' median due times
    /// moved on by their median sojourns; `None` when the second half's
    /// median end is not later than the first's.
    pub achieved_rate_per_s: Option<f64>,
    /// The same with each median sojourn at its 95% bound in the server's favour.
    pub achieved_rate_high_per_s: Option<f64>,
    /// Median sojourn (due to end) of the first and of the second half, in ms.
    pub sojourn_p50_ms: [f64; 2],
}

impl Drain {
    /// Achieved over offered, 1 when the server kept up at least.
    fn kept_up(&self) -> f64 {
        self.achieved_rate_per_s.map_or(1.0, |a| (a / self.offered_rate_per_s).min(1.0))
    }

    /// The verdict in words, for the run line and the artifact's readers.
    pub fn describe(&self) -> String {
        let rate = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.2}"));
        format!(
            "{} req/s ended of {:.2} offered (at most {}; median sojourn {:.0} → {:.0} ms over the two halves of \
             the sends)",
            rate(self.achieved_rate_per_s),
            self.offered_rate_per_s,
            rate(self.achieved_rate_high_per_s),
            self.sojourn_p50_ms[0],
            self.sojourn_p50_ms[1],
        )
    }
}

/// The verdict on one repeat's `(due, end)` times in ms, in any order;
/// `None` with fewer than [`MIN_HALF`] requests a half or no time between
/// the halves' median due times.
pub fn judge(requests: &[(f64, f64)]) -> Option<Drain> {
    let mut by_due: Vec<(f64, f64)> =
        requests.iter().copied().filter(|(d, e)| d.is_finite() && e.is_finite()).collect();
    by_due.sort_by(|a, b| a.0.total_cmp(&b.0));
    let half = by_due.len() / 2;
    if half < MIN_HALF {
        return None;
    }
    let (first, second) = (&by_due[..half], &by_due[by_due.len() - half..]);
    // A quantile of sorted values with its distribution-free 95% interval.
    let quantile = |v: &mut Vec<f64>, percent: u32| -> (f64, f64, f64) {
        v.sort_by(f64::total_cmp);
        let (low, high) = quantile_interval_ranks(v.len(), percent);
        let at = |rank: Option<usize>, fallback: f64| rank.map_or(fallback, |r| v[r - 1]);
        let rank = (v.len() * percent as usize).div_ceil(100).max(1);
        (at(low, v[0]), v[rank - 1], at(high, v[v.len() - 1]))
    };
    let due = |h: &[(f64, f64)]| quantile(&mut h.iter().map(|r| r.0).collect(), 50).1;
    let sojourns =
        |h: &[(f64, f64)]| quantile(&mut h.iter().map(|r| r.1 - r.0).collect(), SOJOURN_PERCENTILE);
    let span_ms = due(second) - due(first);
    if span_ms <= 0.0 {
        return None;
    }
    let ((_, w1, w1_high), (w2_low, w2, _)) = (sojourns(first), sojourns(second));
    let rate = |extra_ms: f64| {
        let ms = span_ms + extra_ms;
        (ms > 0.0).then(|| half as f64 * 1000.0 / ms)
    };
    let offered = half as f64 * 1000.0 / span_ms;
    let achieved_high = rate(w2_low - w1_high);
    Some(Drain {
        over_saturated: achieved_high.is_some_and(|a| a < (1.0 - MARGIN) * offered),
        repeat: 0,
        half: half as u64,
        offered_rate_per_s: offered,
        achieved_rate_per_s: rate(w2 - w1),
        achieved_rate_high_per_s: achieved_high,
        sojourn_p50_ms: [w1, w2],
    })
}

/// The verdict on a finished open loop's records, repeat by repeat: the
/// repeat whose achieved rate fell furthest short (an over-saturated one
/// first).
pub fn judge_stored(store: &Stored) -> std::io::Result<Option<Drain>> {
    let mut repeats: std::collections::BTreeMap<u32, Vec<(f64, f64)>> = Default::default();
    store.scan(|row| {
        let due = row[col::ACTUAL_SEND] - row[col::SEND_LAG];
        repeats.entry(row[col::REPEAT] as u32).or_default().push((due, row[col::FINISHED]));
    })?;
    let verdicts = repeats.iter().filter_map(|(&repeat, times)| Some(Drain { repeat, ..judge(times)? }));
    Ok(verdicts.min_by(|a, b| {
        (!a.over_saturated, a.kept_up())
            .partial_cmp(&(!b.over_saturated, b.kept_up()))
            .unwrap_or(std::cmp::Ordering::Equal)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::queue_model::{Load, Service, finished_run};

    /// `n` requests due every `gap_ms`, each ending `sojourn(i)` ms later.
    fn requests(n: usize, gap_ms: f64, sojourn: impl Fn(usize) -> f64) -> Vec<(f64, f64)> {
        (0..n).map(|i| (i as f64 * gap_ms, i as f64 * gap_ms + sojourn(i))).collect()
    }

    #[test]
    fn a_server_that_keeps_up_is_not_marked_however_long_its_replies() {
        // 20 req/s of 3 s replies on a server with room for all of them.
        let verdict = judge(&requests(100, 50.0, |_| 3000.0)).unwrap();
        assert!(!verdict.over_saturated, "{verdict:?}");
        assert!((verdict.achieved_rate_per_s.unwrap() - 20.0).abs() < 0.5, "{verdict:?}");
    }

    #[test]
    fn a_fifo_queue_at_fifteen_times_capacity_is_marked_at_its_capacity() {
        // The cell: 20 req/s on 4 slots of 3 s replies (capacity 1.33 req/s):
        // request i starts when request i − 4 ends.
        let verdict = judge(&requests(100, 50.0, |i| (i / 4 + 1) as f64 * 3000.0 - i as f64 * 50.0)).unwrap();
        assert!(verdict.over_saturated, "{verdict:?}");
        let achieved = verdict.achieved_rate_per_s.unwrap();
        assert!((1.2..1.5).contains(&achieved), "{verdict:?}");
        assert!(verdict.describe().contains("of 20.00 offered"), "{}", verdict.describe());
    }

    /// Of `runs` seeded model runs of `requests` at `load`, how many were marked.
    fn marked(load: Load, requests: usize, runs: u64) -> u64 {
        let seeds = (0..runs).map(|seed| 0xd1a ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let ms =
            |run: Vec<(f64, f64)>| run.into_iter().map(|(d, e)| (d * 1000.0, e * 1000.0)).collect::<Vec<_>>();
        seeds
            .filter(|&seed| judge(&ms(finished_run(load, requests, seed))).is_some_and(|d| d.over_saturated))
            .count() as u64
    }

    const BIMODAL_5: Service = Service::Bimodal { short_s: 0.2, long_s: 20.0, long_share: 0.05 };
    const LOGNORMAL_15: Service = Service::Lognormal { mean_s: 1.0, sigma: 1.5 };

    #[test]
    fn stable_loads_with_heavy_tailed_or_bimodal_replies_are_rarely_marked() {
        for service in [BIMODAL_5, LOGNORMAL_15] {
            let (runs, load) = (150, Load { utilization: 0.9, service, slots: 64 });
            let marks = marked(load, 4000, runs);
            let (_, high) = anvil_evidence::binomial::clopper_pearson(marks, runs, 0.95);
            assert!(high < 0.05, "{}: {marks} of {runs} marked (upper bound {high:.3})", service.label());
        }
    }

    #[test]
    fn overloads_from_half_again_to_fifteen_times_capacity_are_marked() {
        for service in [BIMODAL_5, LOGNORMAL_15] {
            for utilization in [1.5, 15.0] {
                let (runs, load) = (40, Load { utilization, service, slots: 64 });
                let marks = marked(load, 4000, runs);
                let (low, _) = anvil_evidence::binomial::clopper_pearson(marks, runs, 0.95);
                assert!(low >= 0.9, "{} at {utilization}x: {marks} of {runs} marked", service.label());
            }
        }
    }

    #[test]
    fn too_few_requests_or_no_span_give_no_verdict() {
        assert_eq!(judge(&requests(19, 50.0, |_| 100.0)), None);
        assert_eq!(judge(&requests(40, 0.0, |_| 100.0)), None);
    }
}
