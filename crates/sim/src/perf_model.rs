//! How long one engine step takes, from the profile's performance numbers.
//!
//! step = (decode-step-ms
//!         + decode-step-ms-per-seq × decoding seqs / data-parallel
//!         + spec-draft-tokens × spec-draft-token-ms   (when any seq decodes)
//!         + prefill tokens / (prefill-tok-s × data-parallel) × 1000)
//!        / tensor-parallel^0.85

use std::time::Duration;

use crate::profile::SimProfile;

/// Tensor parallelism does not scale linearly (all-reduce cost): a degree
/// of `tp` speeds a step up by `tp^TP_SCALING_EXPONENT`.
pub const TP_SCALING_EXPONENT: f64 = 0.85;

#[derive(Debug, Clone)]
pub struct PerfModel {
    base_ms: f64,
    per_seq_ms: f64,
    prefill_tok_per_ms: f64,
    spec_ms: f64,
    speedup: f64,
    data_parallel: f64,
    /// Prompt tokens prefilled per step, over all data-parallel replicas.
    pub prefill_budget: u32,
    /// Running-batch capacity, over all data-parallel replicas.
    pub max_running: usize,
    pub spec_draft_tokens: u32,
    pub spec_acceptance: f64,
}

impl PerfModel {
    pub fn new(profile: &SimProfile) -> Self {
        let dp = profile.data_parallel.max(1);
        Self {
            base_ms: profile.decode_step_ms,
            per_seq_ms: profile.decode_step_ms_per_seq,
            prefill_tok_per_ms: profile.prefill_tok_s * f64::from(dp) / 1000.0,
            spec_ms: f64::from(profile.spec_draft_tokens) * profile.spec_draft_token_ms,
            speedup: f64::from(profile.tensor_parallel.max(1)).powf(TP_SCALING_EXPONENT),
            data_parallel: f64::from(dp),
            prefill_budget: profile.chunked_prefill_tokens.saturating_mul(dp),
            max_running: (profile.max_running_seqs as usize).saturating_mul(dp as usize).max(1),
            spec_draft_tokens: profile.spec_draft_tokens,
            spec_acceptance: profile.spec_acceptance,
        }
    }

    /// Duration of a step that decodes `decoding` sequences and prefills
    /// `prefill_tokens` prompt tokens.
    pub fn step_duration(&self, decoding: usize, prefill_tokens: u32) -> Duration {
        let mut ms = self.base_ms;
        if decoding > 0 {
            ms += self.per_seq_ms * decoding as f64 / self.data_parallel + self.spec_ms;
        }
        ms += f64::from(prefill_tokens) / self.prefill_tok_per_ms;
        Duration::from_secs_f64((ms / self.speedup).max(0.0) / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_grows_with_batch_and_prefill_and_shrinks_with_tp() {
        let mut profile = SimProfile::default();
        let model = PerfModel::new(&profile);
        assert!(model.step_duration(64, 0) > model.step_duration(1, 0));
        assert!(model.step_duration(1, 4096) > model.step_duration(1, 0));
        profile.tensor_parallel = 4;
        assert!(PerfModel::new(&profile).step_duration(8, 512) < model.step_duration(8, 512));
        profile.data_parallel = 2;
        assert_eq!(PerfModel::new(&profile).max_running, 512);
    }
}
