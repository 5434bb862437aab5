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

impl SimProfile {
    /// The highest request rate, in requests per second, that this profile
    /// sustains for requests of `prompt_tokens` uncached prompt tokens and
    /// `output_tokens` generated tokens. Past it the waiting queue, and with
    /// it TTFT, grows without bound.
    ///
    /// Derivation from the step-time model above (times in ms, rate λ in
    /// requests per ms). A request spends `S = C + D` steps in the running
    /// batch: `C = ⌈P / prefill-budget⌉` steps of prefill (the last one samples
    /// the first token) and `D = (O − 1) / g` decode steps, where
    /// `g = 1 + Σᵢ₌₁..K aⁱ` is the expected tokens per decode step with K draft
    /// tokens accepted in turn with probability a. With the engine always busy,
    /// a step of mean length T decodes `λ·D·T` sequences and prefills `λ·W·T`
    /// tokens of work (W = P, or P + P²/2A with attention modelled, whatever the
    /// chunking), so
    ///
    ///   T = c₀ + k·λ·T,  c₀ = (decode-step-ms + K·spec-draft-token-ms) / tp^0.85,
    ///                    k  = (decode-step-ms-per-seq·D / dp + W / prefill-tok-per-ms) / tp^0.85,
    ///
    /// i.e. `T = c₀ / (1 − k·λ)`. Two limits bind before `λ = 1/k`:
    /// - the running batch holds `λ·S·T` sequences (Little's law in steps),
    ///   at most `max-running-seqs·dp = M`: `λ ≤ M / (S·c₀ + M·k)`;
    /// - a step prefills `λ·P·T` prompt tokens, at most the budget B:
    ///   `λ ≤ B / (P·c₀ + B·k)`.
    ///
    /// The capacity is the smaller of the two, times 1000. It is exact for the
    /// mean step time; speculative decoding and prompts longer than one chunk
    /// make it an expectation. Prefix-cache hits are not counted (unique prompts).
    pub fn capacity_rps(&self, prompt_tokens: u32, output_tokens: u32) -> f64 {
        let model = PerfModel::new(self);
        let prompt = f64::from(prompt_tokens.max(1));
        let accepted: f64 = (1..=model.spec_draft_tokens).map(|i| model.spec_acceptance.powi(i as i32)).sum();
        let decode_steps = f64::from(output_tokens.max(1) - 1) / (1.0 + accepted);
        let prefill_steps = (prompt / f64::from(model.prefill_budget)).ceil();
        let steps_in_batch = prefill_steps + decode_steps;
        let spec_ms = if decode_steps > 0.0 { model.spec_ms } else { 0.0 };
        let fixed_ms = (model.base_ms + spec_ms) / model.speedup;
        let prefill_work = model.prefill_work(0, prompt_tokens.max(1));
        let per_request_ms = (model.per_seq_ms * decode_steps / model.data_parallel
            + prefill_work / model.prefill_tok_per_ms)
            / model.speedup;
        let batch = model.max_running as f64;
        let budget = f64::from(model.prefill_budget);
        let batch_bound = batch / (steps_in_batch * fixed_ms + batch * per_request_ms);
        let budget_bound = budget / (prompt * fixed_ms + budget * per_request_ms);
        1000.0 * batch_bound.min(budget_bound)
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
    fn capacity_fills_the_batch_exactly_when_the_batch_binds() {
        // Default profile, 512-token prompts, 128 output tokens: a request
        // stays S = 1 + 127 steps in the batch; at capacity the mean step is
        // T = c0 / (1 - k·λ) and the batch λ·S·T holds max-running-seqs.
        let profile = SimProfile::default();
        let rate_per_ms = profile.capacity_rps(512, 128) / 1000.0;
        let k = 0.25 * 127.0 + 512.0 / 20.0;
        let step_ms = 10.0 / (1.0 - k * rate_per_ms);
        let batch = rate_per_ms * 128.0 * step_ms;
        assert!((batch - 256.0).abs() < 1e-6, "batch at capacity {batch}");
    }

    #[test]
    fn capacity_grows_with_batch_room_and_parallelism_and_shrinks_with_length() {
        let base = SimProfile::default();
        let capacity = |p: &SimProfile| p.capacity_rps(512, 128);
        let mut bigger = base.clone();
        bigger.max_running_seqs = 1024;
        assert!(capacity(&bigger) > capacity(&base));
        let mut tp = base.clone();
        tp.tensor_parallel = 4;
        assert!(capacity(&tp) > capacity(&base));
        assert!(base.capacity_rps(512, 256) < capacity(&base));
        assert!(base.capacity_rps(8192, 128) < capacity(&base));
        // A tiny prefill budget is the binding limit for long prompts.
        let mut small_budget = base.clone();
        small_budget.chunked_prefill_tokens = 64;
        assert!(small_budget.capacity_rps(4096, 2) < base.capacity_rps(4096, 2));
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
