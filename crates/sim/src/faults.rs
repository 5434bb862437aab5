//! Which injected faults hit one request. Each fault draws from its own
//! stream of the request seed, so a request's faults are reproducible and
//! independent of each other.

use std::time::Duration;

use axum::http::StatusCode;

use crate::profile::FaultProfile;
use crate::rng::SimRng;

/// The faults drawn for one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultDraw {
    /// Answer with this error status instead of generating.
    pub http_status: Option<StatusCode>,
    pub disconnect: bool,
    pub stall: Option<Duration>,
    pub malformed_sse: bool,
    pub missing_usage: bool,
    pub canary_leak: bool,
    pub json_duplicate_after_think: bool,
}

impl FaultDraw {
    pub fn draw(faults: &FaultProfile, seed: u64) -> Self {
        let hit = |purpose: &str, rate: f64| SimRng::for_purpose(seed, purpose).chance(rate);
        let http_status = [
            ("fault.http-429", faults.http_429_rate, StatusCode::TOO_MANY_REQUESTS),
            ("fault.http-503", faults.http_503_rate, StatusCode::SERVICE_UNAVAILABLE),
            ("fault.http-500", faults.http_500_rate, StatusCode::INTERNAL_SERVER_ERROR),
        ]
        .into_iter()
        .find(|(purpose, rate, _)| hit(purpose, *rate))
        .map(|(_, _, status)| status);
        Self {
            http_status,
            disconnect: hit("fault.disconnect", faults.disconnect_rate),
            stall: hit("fault.stall", faults.stall_rate).then(|| Duration::from_millis(faults.stall_ms)),
            malformed_sse: hit("fault.malformed-sse", faults.malformed_sse_rate),
            missing_usage: hit("fault.missing-usage", faults.missing_usage_rate),
            canary_leak: hit("fault.canary-leak", faults.canary_leak_rate),
            json_duplicate_after_think: hit("fault.json-duplicate", faults.json_duplicate_after_think_rate),
        }
    }

    /// Names of the faults that hit, for ground truth.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if let Some(status) = self.http_status {
            names.push(match status.as_u16() {
                429 => "http-429",
                503 => "http-503",
                _ => "http-500",
            });
        }
        let flags = [
            (self.disconnect, "disconnect"),
            (self.stall.is_some(), "stall"),
            (self.malformed_sse, "malformed-sse"),
            (self.missing_usage, "missing-usage"),
            (self.canary_leak, "canary-leak"),
            (self.json_duplicate_after_think, "json-duplicate-after-think"),
        ];
        names.extend(flags.into_iter().filter(|(on, _)| *on).map(|(_, name)| name));
        names
    }
}
