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
    /// See `SimProfile::prefill_attention_tokens` (0 = off).
    attention_tokens: f64,
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
            attention_tokens: f64::from(profile.prefill_attention_tokens),
        }
    }

    /// Prefill work, in tokens, of a chunk of `chunk` prompt tokens that
    /// starts after `done` tokens of the same prompt: each token attends to
    /// those before it, so later chunks cost more when attention is modelled.
    pub fn prefill_work(&self, done: u32, chunk: u32) -> f64 {
        if self.attention_tokens <= 0.0 {
            return f64::from(chunk);
        }
        let middle = f64::from(done) + f64::from(chunk) / 2.0;
        f64::from(chunk) * (1.0 + middle / self.attention_tokens)
    }

    /// Duration of a step that decodes `decoding` sequences and prefills
    /// `prefill_tokens` prompt tokens' worth of work.
    pub fn step_duration(&self, decoding: usize, prefill_tokens: f64) -> Duration {
        let mut ms = self.base_ms;
        if decoding > 0 {
            ms += self.per_seq_ms * decoding as f64 / self.data_parallel + self.spec_ms;
        }
        ms += prefill_tokens / self.prefill_tok_per_ms;
        Duration::from_secs_f64((ms / self.speedup).max(0.0) / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_makes_later_chunks_of_a_long_prompt_cost_more() {
        let mut profile = SimProfile::default();
        assert_eq!(PerfModel::new(&profile).prefill_work(80_000, 1000), 1000.0);
        profile.prefill_attention_tokens = 8192;
        let model = PerfModel::new(&profile);
        assert!(model.prefill_work(80_000, 1000) > 5.0 * model.prefill_work(0, 1000));
        // Whole-prompt work grows faster than linearly with its length.
        let whole = |n: u32| model.prefill_work(0, n);
        assert!(whole(80_000) > 10.0 * whole(8_000) * 2.0);
    }

    #[test]
    fn step_grows_with_batch_and_prefill_and_shrinks_with_tp() {
        let mut profile = SimProfile::default();
        let model = PerfModel::new(&profile);
        assert!(model.step_duration(64, 0.0) > model.step_duration(1, 0.0));
        assert!(model.step_duration(1, 4096.0) > model.step_duration(1, 0.0));
        profile.tensor_parallel = 4;
        assert!(PerfModel::new(&profile).step_duration(8, 512.0) < model.step_duration(8, 512.0));
        profile.data_parallel = 2;
        assert_eq!(PerfModel::new(&profile).max_running, 512);
    }
}
