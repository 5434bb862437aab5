//! Load stages: a measured run made of consecutive time windows, each with
//! its own load (an open-loop rate or a closed-loop concurrency), e.g. a
//! ramp `rate 5 → 10 → 20` or a step `concurrency 4 → 16`.
//!
//! A stage's duration bounds when its requests *start*: open loop, its
//! arrivals fall inside its window; closed loop, its workers send until
//! the window ends. Requests still in flight at a window's end finish and
//! count for the stage that sent them, so consecutive stages overlap by at
//! most one request time. Stages replace `requests`: how many requests a
//! stage sends follows from its rate (or the server's speed) and its
//! duration.

use std::time::{Duration, Instant};

use crate::error::SpecError;
use crate::workload::prompt::{SplitMix64, streams};
use crate::workload::spec::{Arrival, CellSpec, Stage};

/// Measured request indices of a staged cell never reach this; warmup and
/// calibration use indices from here (their prompts then never pre-fill a
/// prefix cache for a measured one).
pub const UNMEASURED_INDEX_BASE: u64 = 1 << 40;

/// `[start, end)` of each stage, in ms after the run's start.
pub fn windows_ms(stages: &[Stage]) -> Vec<(f64, f64)> {
    let mut at = 0u64;
    stages
        .iter()
        .map(|s| {
            let start = at;
            at += s.duration_ms;
            (start as f64, at as f64)
        })
        .collect()
}

/// The seconds from one open-loop arrival to the next: seeded exponential
/// gaps (Poisson) or equal gaps (constant).
pub fn gap_s(arrival: Arrival, rng: &mut SplitMix64) -> f64 {
    match arrival {
        Arrival::Poisson { rate_per_s } => -(1.0 - rng.next_f64()).ln() / rate_per_s,
        Arrival::Constant { rate_per_s } => 1.0 / rate_per_s,
        Arrival::ClosedLoop => 0.0,
    }
}

/// The random stream of stage `stage`'s arrivals in repeat `repeat`: apart
/// from every other stage's, repeat's and request's.
fn stream(repeat: u32, stage: u32) -> u64 {
    streams::ARRIVALS + u64::from(repeat) + ((u64::from(stage) + 1) << 20)
}

/// Open-loop arrivals of one stage: the first at `start`, the rest at
/// seeded gaps while they fall before `start + duration`.
pub fn arrivals_in(
    start: Instant,
    duration: Duration,
    arrival: Arrival,
    seed: u64,
    repeat: u32,
    stage: u32,
) -> Vec<Instant> {
    let mut rng = SplitMix64::new(seed, stream(repeat, stage));
    // Summed gaps drift by ulps (ten 0.1 s gaps make 0.999…): a moment
    // within a nanosecond of the end is the end.
    let limit = duration.as_secs_f64() - 1e-9;
    let mut offset_s = 0.0;
    let mut times = Vec::new();
    while offset_s < limit {
        times.push(start + Duration::from_secs_f64(offset_s));
        offset_s += gap_s(arrival, &mut rng);
    }
    times
}

/// The most requests any stage may have in flight at once, and whether
/// any stage is open loop (both size what is prepared before the clock).
pub fn widest(spec: &CellSpec) -> (u32, bool) {
    let concurrency = spec.stages.iter().map(|s| s.concurrency).max().unwrap_or(spec.concurrency);
    let open = spec.stages.iter().any(|s| !matches!(s.arrival, Arrival::ClosedLoop));
    (concurrency.max(1), open)
}

/// About how many requests the stages will send (for the progress line
/// only): open loop rate × duration, closed loop unknown (one per worker
/// and second).
pub fn expected_requests(stages: &[Stage]) -> u64 {
    stages
        .iter()
        .map(|s| {
            let secs = s.duration_ms as f64 / 1000.0;
            let per_s = match s.arrival {
                Arrival::Poisson { rate_per_s } | Arrival::Constant { rate_per_s } => rate_per_s,
                Arrival::ClosedLoop => f64::from(s.concurrency),
            };
            (per_s * secs).ceil() as u64
        })
        .sum()
}

/// A stage's problems, for the cell's validation.
pub fn check(spec: &CellSpec) -> Result<(), SpecError> {
    // A trace and sessions set their own arrivals (a dataset's sample
    // cycles through the stages' requests).
    if !spec.stages.is_empty()
        && matches!(
            spec.traffic,
            crate::workload::traffic::Traffic::Trace(_) | crate::workload::traffic::Traffic::Sessions(_)
        )
    {
        return Err(SpecError::StagesWithOwnArrivals);
    }
    for (stage, s) in (1..).zip(&spec.stages) {
        if s.duration_ms == 0 {
            return Err(SpecError::ZeroStageDuration { stage });
        }
        if s.concurrency == 0 {
            return Err(SpecError::ZeroStageConcurrency { stage });
        }
        if let Arrival::Poisson { rate_per_s } | Arrival::Constant { rate_per_s } = s.arrival
            && !(rate_per_s.is_finite() && rate_per_s > 0.0)
        {
            return Err(SpecError::BadStageRate { stage, rate: rate_per_s });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(arrival: Arrival, concurrency: u32, duration_ms: u64) -> Stage {
        Stage { arrival, concurrency, duration_ms }
    }

    #[test]
    fn windows_follow_each_other() {
        let stages = [
            stage(Arrival::Constant { rate_per_s: 5.0 }, 8, 2000),
            stage(Arrival::ClosedLoop, 4, 500),
            stage(Arrival::Poisson { rate_per_s: 1.0 }, 8, 1500),
        ];
        assert_eq!(windows_ms(&stages), vec![(0.0, 2000.0), (2000.0, 2500.0), (2500.0, 4000.0)]);
        assert_eq!(widest(&CellSpec { stages: stages.to_vec(), ..CellSpec::default() }), (8, true));
    }

    #[test]
    fn arrivals_fill_their_window_only() {
        let start = Instant::now();
        let constant =
            arrivals_in(start, Duration::from_millis(1000), Arrival::Constant { rate_per_s: 10.0 }, 1, 0, 0);
        assert_eq!(constant.len(), 10);
        assert!(constant.iter().all(|t| *t < start + Duration::from_millis(1000)));
        let poisson = |stage| {
            arrivals_in(start, Duration::from_secs(20), Arrival::Poisson { rate_per_s: 100.0 }, 3, 0, stage)
        };
        let (a, b) = (poisson(0), poisson(1));
        assert_eq!(a, poisson(0), "seeded");
        assert_ne!(a, b, "each stage draws its own gaps");
        // 2,000 expected arrivals: within a few percent.
        assert!((1800..2200).contains(&a.len()), "{}", a.len());
    }

    #[test]
    fn bad_stages_are_named() {
        let spec = |s| CellSpec { stages: vec![stage(Arrival::ClosedLoop, 1, 10), s], ..CellSpec::default() };
        let zero = check(&spec(stage(Arrival::ClosedLoop, 1, 0))).unwrap_err();
        assert_eq!(zero, SpecError::ZeroStageDuration { stage: 2 });
        assert_eq!(zero.to_string(), "stage 2 has a zero duration");
        let bad_rate = check(&spec(stage(Arrival::Poisson { rate_per_s: -1.0 }, 1, 5)));
        assert!(bad_rate.unwrap_err().to_string().contains("stage 2: rate"));
    }
}
