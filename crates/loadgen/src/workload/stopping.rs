//! A cell that stops when it knows enough: `until "ttft_p99_ms" within="5%"`
//! with `min-requests`, `max-requests` and `max-duration` as bounds.
//!
//! The rule is pre-planned (a group-sequential design): before the run,
//! the looks are fixed at `min, 2·min, 4·min, …, max` ended requests (`K`
//! of them), and every look computes its intervals at one level chosen so
//! that the intervals of all `K` looks hold their true values *together*
//! with probability 95%. Then the interval at whichever look the run stops
//! holds with at least 95% too, however the stop was chosen (Jennison &
//! Turnbull, *Group Sequential Methods with Applications to Clinical
//! Trials*, 2000, ch. 2–3, and §9.1 for stopping on precision). The level
//! is Pocock's idea (Pocock, "Group sequential methods in the design and
//! analysis of clinical trials", *Biometrika* 64(2), 1977) for these
//! looks: an estimate from the first `n` requests moves as `W(n)/√n` for a
//! Brownian motion `W`, so the constant `c` with
//! `P(max_k |W(n_k)|/√n_k > c) = 5%` is found by simulating that maximum
//! (seeded, `observe::precision::PATHS` paths), and each look's level is `2Φ(c) − 1`. The
//! looks overlap (each holds the requests of the one before), so `c` is
//! well below the Bonferroni value for `K` separate tests (5%/K each),
//! which bounds it from above and is used if the simulation says more.
//! Stopping "the first time a 95% interval looks narrow" has no such
//! guarantee: the looks compound the error. The run stops at the first
//! look where every named metric's interval half-width is within `within`
//! of its estimate.

use serde::{Deserialize, Serialize};

use crate::error::SpecError;
use crate::output::interval::Statistic;

/// The error the looks share: their intervals hold together with 95%.
pub const FAMILY_ERROR: f64 = 0.05;
/// `min-requests` when unset: the fewest values batch means read.
pub const DEFAULT_MIN_REQUESTS: u32 = 50;

/// A cell's stopping rule, as the recipe set it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppingRule {
    /// Artifact metric keys whose intervals must be narrow (`ttft_p99_ms`).
    pub until: Vec<String>,
    /// Largest interval half-width allowed, relative to the estimate (0.05).
    pub within: f64,
    pub min_requests: u32,
    pub max_requests: u32,
    /// The measured run stops sending at this time, precise or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_ms: Option<u64>,
}

/// One metric a stopping rule watches: a per-request metric (its base
/// name, as in [`WATCHABLE`]) and a statistic of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watched {
    pub base: &'static str,
    pub statistic: Statistic,
}

/// The per-request metrics a rule may name, as the artifact spells their
/// base, and whether its keys end in `_ms` (the record's values of them:
/// `observe::precision`).
pub const WATCHABLE: &[(&str, bool)] = &[
    ("ttft", true),
    ("time_to_first_output", true),
    ("e2e", true),
    ("generation", true),
    ("visible_generation", true),
    ("tpot", true),
    ("ttft_from_schedule", true),
    ("e2e_from_schedule", true),
    ("decode_tok_s", false),
];

/// Reads `ttft_p99_ms`, `e2e_mean_ms`, `decode_tok_s_p50`: a watchable
/// metric and a percentile (`p1`–`p99`) or `mean`.
pub fn watched(key: &str) -> Result<Watched, SpecError> {
    for (base, millis) in WATCHABLE {
        let Some(rest) = key.strip_prefix(base).and_then(|r| r.strip_prefix('_')) else { continue };
        let stat = match millis {
            true => rest.strip_suffix("_ms"),
            false => Some(rest),
        };
        let statistic = match stat {
            Some("mean") => Statistic::Mean,
            Some(p) => match p.strip_prefix('p').and_then(|n| n.parse::<u32>().ok()) {
                Some(percent @ 1..=99) => Statistic::Percentile(percent),
                _ => continue,
            },
            None => continue,
        };
        return Ok(Watched { base, statistic });
    }
    let watchable =
        WATCHABLE.iter().map(|(b, ms)| format!("{b}_p99{}", if *ms { "_ms" } else { "" })).collect();
    Err(SpecError::NotWatchable { key: key.to_owned(), watchable })
}

impl StoppingRule {
    /// The ended-request counts at which the rule looks: `min`, doubling,
    /// and `max` last.
    pub fn looks(&self) -> Vec<u64> {
        let (min, max) = (u64::from(self.min_requests.max(1)), u64::from(self.max_requests));
        let mut looks = Vec::new();
        let mut n = min;
        while n < max {
            looks.push(n);
            n *= 2;
        }
        looks.push(max);
        looks
    }

    /// What is wrong with the rule, if anything.
    pub fn check(&self) -> Result<(), SpecError> {
        if self.until.is_empty() {
            return Err(SpecError::NoWatchedMetric);
        }
        for key in &self.until {
            watched(key)?;
        }
        if !(self.within.is_finite() && self.within > 0.0) {
            return Err(SpecError::BadWithin { within: self.within });
        }
        if self.min_requests == 0 || self.min_requests > self.max_requests {
            return Err(SpecError::BadMinRequests { min: self.min_requests, max: self.max_requests });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(min: u32, max: u32) -> StoppingRule {
        StoppingRule {
            until: vec!["ttft_p99_ms".into()],
            within: 0.05,
            min_requests: min,
            max_requests: max,
            max_duration_ms: None,
        }
    }

    #[test]
    fn looks_double_from_the_minimum_and_end_at_the_maximum() {
        assert_eq!(rule(100, 1000).looks(), vec![100, 200, 400, 800, 1000]);
        assert_eq!(rule(100, 800).looks(), vec![100, 200, 400, 800]);
        assert_eq!(rule(50, 50).looks(), vec![50]);
    }

    #[test]
    fn metric_keys_read_as_the_artifact_spells_them() {
        assert_eq!(watched("ttft_p99_ms").unwrap().statistic, Statistic::Percentile(99));
        assert_eq!(watched("e2e_mean_ms").unwrap().statistic, Statistic::Mean);
        assert_eq!(watched("ttft_from_schedule_p50_ms").unwrap().statistic, Statistic::Percentile(50));
        assert_eq!(watched("decode_tok_s_p50").unwrap().statistic, Statistic::Percentile(50));
        for wrong in ["ttft_p99", "ttft_p100_ms", "throughput_tok_s", "ttft_max_ms", "decode_tok_s_p50_ms"] {
            assert!(watched(wrong).is_err(), "{wrong}");
        }
        assert!(rule(10, 5).check().is_err());
        assert!(rule(10, 50).check().is_ok());
    }
}
