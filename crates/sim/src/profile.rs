//! The sim's settings: performance model, reply defaults and faults.
//!
//! A recipe sets them key by key (`SimProfile::set`), anvil hands them to the
//! child process as JSON (`--profile-json`), and `serve` reads them once.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ProfileError, SimError};

/// Every setting of the simulated engine. Defaults model a mid-size model on
/// one accelerator; see `docs/sim.md` for what each key means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct SimProfile {
    /// Model name the server answers to; `None` accepts any model name.
    pub model: Option<String>,
    /// Base seed mixed into every request's seed.
    pub seed: u64,
    /// Prompt tokens processed per second by one replica at tensor-parallel 1.
    pub prefill_tok_s: f64,
    /// Most prompt tokens prefilled in one engine step (shared by all requests).
    pub chunked_prefill_tokens: u32,
    /// Fixed cost of one decode step in milliseconds.
    pub decode_step_ms: f64,
    /// Extra decode step cost per running sequence, in milliseconds.
    pub decode_step_ms_per_seq: f64,
    /// Most sequences in the running batch; the rest wait in a FIFO queue.
    pub max_running_seqs: u32,
    /// Most requests in that waiting queue; a request beyond it is rejected
    /// at once with `overload-status`. `None`: the queue is unbounded.
    pub max_queue: Option<u64>,
    /// The HTTP status of a request rejected by `max-queue`: 429 or 503.
    pub overload_status: u16,
    /// Longest prompt + completion a request may ask for.
    pub max_model_len: u32,
    /// Whether a repeated prompt prefix skips prefill for the cached blocks.
    pub prefix_cache: bool,
    /// Tokens per prefix-cache block (only whole blocks are reused).
    pub prefix_cache_block_tokens: u32,
    /// Most blocks the prefix cache holds before evicting the oldest.
    pub prefix_cache_max_blocks: u32,
    /// Speculative decoding: draft tokens proposed per step (0 = off).
    pub spec_draft_tokens: u32,
    /// Probability that each successive draft token is accepted.
    pub spec_acceptance: f64,
    /// Extra step cost per draft token, in milliseconds.
    pub spec_draft_token_ms: f64,
    /// Attention makes long prompts cost more per token: a prompt token at
    /// position p costs (1 + p / prefill-attention-tokens) tokens of prefill
    /// work. 0 turns the effect off (every token costs the same).
    pub prefill_attention_tokens: u32,
    /// Run-to-run noise: every step's time times a slowly drifting factor
    /// whose spread is this many percent (0: none; `jitter.rs`).
    pub step_jitter_pct: f64,
    /// Tensor-parallel degree: divides step compute time by `tp^0.85`.
    pub tensor_parallel: u32,
    /// Data-parallel degree: multiplies batch capacity and prefill rate.
    pub data_parallel: u32,
    /// Completion length (in tokens) when the prompt asks for no word count.
    pub output_tokens: u32,
    /// Whether thinking is on when the request does not say.
    pub thinking: bool,
    /// Reasoning tokens emitted before the answer when thinking is on.
    pub reasoning_tokens: u32,
    /// Whether per-request ground-truth timings are kept for `/debug/ground-truth`.
    pub ground_truth: bool,
    /// Optional JSONL file that every finished request's ground truth is appended to.
    pub ground_truth_file: Option<String>,
    /// Injected failures.
    pub faults: FaultProfile,
    /// Answers of known quality (`answer_book.rs`).
    pub answers: AnswerProfile,
}

/// What the sim answers to a scored dataset's items, and how often its
/// replies diverge (see `answer_book.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct AnswerProfile {
    /// A scored dataset file whose items are answered right or wrong.
    pub dataset: Option<String>,
    /// Its layout: `anvil`, `gsm8k` or `mmlu`.
    pub format: String,
    /// The share of its items answered right (drawn per item and seed).
    pub accuracy: f64,
    /// The share of prompts whose reply changes from its middle word on.
    pub diverge_rate: f64,
}

impl Default for AnswerProfile {
    fn default() -> Self {
        Self { dataset: None, format: "anvil".into(), accuracy: 1.0, diverge_rate: 0.0 }
    }
}

/// Failures the sim injects on demand. Every rate is a probability in [0, 1]
/// drawn deterministically from the request's seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct FaultProfile {
    pub http_500_rate: f64,
    pub http_503_rate: f64,
    pub http_429_rate: f64,
    /// Drop the connection mid-stream (no `[DONE]`).
    pub disconnect_rate: f64,
    /// Pause of `stall-ms` in the middle of a stream.
    pub stall_rate: f64,
    pub stall_ms: u64,
    /// Emit one broken SSE event mid-stream.
    pub malformed_sse_rate: f64,
    /// Leave out the usage (chunk or field) even when asked for.
    pub missing_usage_rate: f64,
    /// The reply also carries another request's `ANVIL_REQ_` marker.
    pub canary_leak_rate: f64,
    /// Structured output becomes `{json}</think>{json}`.
    pub json_duplicate_after_think_rate: f64,
    /// The process exits with status 3 after this many finished requests.
    pub exit_after_requests: Option<u64>,
}

impl Default for SimProfile {
    fn default() -> Self {
        Self {
            model: None,
            seed: 0,
            prefill_tok_s: 20_000.0,
            chunked_prefill_tokens: 8192,
            decode_step_ms: 10.0,
            decode_step_ms_per_seq: 0.25,
            max_running_seqs: 256,
            max_queue: None,
            overload_status: 429,
            max_model_len: 131_072,
            prefix_cache: true,
            prefix_cache_block_tokens: 16,
            prefix_cache_max_blocks: 1_000_000,
            spec_draft_tokens: 0,
            spec_acceptance: 0.7,
            spec_draft_token_ms: 0.4,
            prefill_attention_tokens: 0,
            step_jitter_pct: 0.0,
            tensor_parallel: 1,
            data_parallel: 1,
            output_tokens: 128,
            thinking: false,
            reasoning_tokens: 48,
            ground_truth: true,
            ground_truth_file: None,
            faults: FaultProfile::default(),
            answers: AnswerProfile::default(),
        }
    }
}

impl Default for FaultProfile {
    fn default() -> Self {
        Self {
            http_500_rate: 0.0,
            http_503_rate: 0.0,
            http_429_rate: 0.0,
            disconnect_rate: 0.0,
            stall_rate: 0.0,
            stall_ms: 2000,
            malformed_sse_rate: 0.0,
            missing_usage_rate: 0.0,
            canary_leak_rate: 0.0,
            json_duplicate_after_think_rate: 0.0,
            exit_after_requests: None,
        }
    }
}

/// Every key `SimProfile::set` accepts, in declaration order.
/// A unit test checks it against the serialized default profile.
const KEYS: &[&str] = &[
    "model",
    "seed",
    "prefill-tok-s",
    "chunked-prefill-tokens",
    "decode-step-ms",
    "decode-step-ms-per-seq",
    "max-running-seqs",
    "max-queue",
    "overload-status",
    "max-model-len",
    "prefix-cache",
    "prefix-cache-block-tokens",
    "prefix-cache-max-blocks",
    "spec-draft-tokens",
    "spec-acceptance",
    "spec-draft-token-ms",
    "prefill-attention-tokens",
    "step-jitter-pct",
    "tensor-parallel",
    "data-parallel",
    "output-tokens",
    "thinking",
    "reasoning-tokens",
    "ground-truth",
    "ground-truth-file",
    "faults.http-500-rate",
    "faults.http-503-rate",
    "faults.http-429-rate",
    "faults.disconnect-rate",
    "faults.stall-rate",
    "faults.stall-ms",
    "faults.malformed-sse-rate",
    "faults.missing-usage-rate",
    "faults.canary-leak-rate",
    "faults.json-duplicate-after-think-rate",
    "faults.exit-after-requests",
    "answers.dataset",
    "answers.format",
    "answers.accuracy",
    "answers.diverge-rate",
];

impl SimProfile {
    /// Set one key from text, e.g. `("decode-step-ms", "12")` or
    /// `("faults.http-500-rate", "0.1")`. The value is read as the key's type;
    /// `none`/`null` clears an optional key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ProfileError> {
        if !KEYS.contains(&key) {
            return Err(unknown_key(key));
        }
        let mut tree = serde_json::to_value(&*self).map_err(|e| ProfileError::Encode(e.to_string()))?;
        let slot = key
            .split('.')
            .try_fold(&mut tree, |node, part| node.get_mut(part))
            .ok_or_else(|| unknown_key(key))?;
        *slot = parse_value_like(key, slot, value)?;
        let updated: SimProfile = serde_json::from_value(tree).map_err(|e| ProfileError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason: e.to_string(),
        })?;
        updated.validate()?;
        *self = updated;
        Ok(())
    }

    /// Every settable key (for "did you mean" in recipe errors and docs).
    pub fn keys() -> &'static [&'static str] {
        KEYS
    }

    /// Read a profile from the JSON that `--profile-json` carries, and check it.
    pub fn from_json(text: &str) -> Result<Self, SimError> {
        let profile: SimProfile = serde_json::from_str(text)
            .map_err(|e| SimError::InvalidProfile(ProfileError::NotJson(e.to_string())))?;
        profile.validate().map_err(SimError::InvalidProfile)?;
        Ok(profile)
    }

    /// Reject values the performance model cannot run with.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let out_of_range = |key, rule, value| Err(ProfileError::OutOfRange { key, rule, value });
        let positive = [
            ("prefill-tok-s", self.prefill_tok_s),
            ("chunked-prefill-tokens", f64::from(self.chunked_prefill_tokens)),
            ("max-running-seqs", f64::from(self.max_running_seqs)),
            ("prefix-cache-block-tokens", f64::from(self.prefix_cache_block_tokens)),
            ("tensor-parallel", f64::from(self.tensor_parallel)),
            ("data-parallel", f64::from(self.data_parallel)),
        ];
        for (key, value) in positive {
            if !(value.is_finite() && value > 0.0) {
                return out_of_range(key, "must be > 0", value);
            }
        }
        let non_negative = [
            ("decode-step-ms", self.decode_step_ms),
            ("decode-step-ms-per-seq", self.decode_step_ms_per_seq),
            ("spec-draft-token-ms", self.spec_draft_token_ms),
            ("step-jitter-pct", self.step_jitter_pct),
        ];
        for (key, value) in non_negative {
            if !(value.is_finite() && value >= 0.0) {
                return out_of_range(key, "must be >= 0", value);
            }
        }
        if !matches!(self.overload_status, 429 | 503) {
            return out_of_range("overload-status", "must be 429 or 503", f64::from(self.overload_status));
        }
        let f = &self.faults;
        let rates = [
            ("spec-acceptance", self.spec_acceptance),
            ("faults.http-500-rate", f.http_500_rate),
            ("faults.http-503-rate", f.http_503_rate),
            ("faults.http-429-rate", f.http_429_rate),
            ("faults.disconnect-rate", f.disconnect_rate),
            ("faults.stall-rate", f.stall_rate),
            ("faults.malformed-sse-rate", f.malformed_sse_rate),
            ("faults.missing-usage-rate", f.missing_usage_rate),
            ("faults.canary-leak-rate", f.canary_leak_rate),
            ("faults.json-duplicate-after-think-rate", f.json_duplicate_after_think_rate),
            ("answers.accuracy", self.answers.accuracy),
            ("answers.diverge-rate", self.answers.diverge_rate),
        ];
        for (key, value) in rates {
            if !(0.0..=1.0).contains(&value) {
                return out_of_range(key, "is a probability in [0, 1]", value);
            }
        }
        Ok(())
    }
}

/// Turn `text` into a JSON value of the same type as the key's current value.
fn parse_value_like(key: &str, current: &Value, text: &str) -> Result<Value, ProfileError> {
    let text = text.trim();
    let bad = |expected| ProfileError::Unreadable { key: key.to_owned(), expected, text: text.to_owned() };
    if matches!(text, "none" | "null" | "#null") {
        // Clears an optional key; any other key rejects null when read back.
        return Ok(Value::Null);
    }
    match current {
        Value::Bool(_) => match text {
            "true" | "on" | "yes" | "#true" => Ok(Value::Bool(true)),
            "false" | "off" | "no" | "#false" => Ok(Value::Bool(false)),
            _ => Err(bad("true or false")),
        },
        Value::Number(n) if n.is_f64() => text
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| bad("a number")),
        Value::Number(_) => {
            text.parse::<u64>().map(|v| Value::Number(v.into())).map_err(|_| bad("a non-negative integer"))
        }
        Value::String(_) => Ok(Value::String(text.to_owned())),
        // An unset optional key: a number stays a number (serde reports a
        // type mismatch where a string is wanted), anything else is a string.
        _ => Ok(match text.parse::<u64>() {
            Ok(n) => Value::Number(n.into()),
            Err(_) => Value::String(text.to_owned()),
        }),
    }
}

fn unknown_key(key: &str) -> ProfileError {
    ProfileError::UnknownKey { key: key.to_owned(), message: unknown_key_message(key) }
}

fn unknown_key_message(key: &str) -> String {
    let mut near: Vec<(f64, &str)> =
        KEYS.iter().map(|k| (strsim::jaro_winkler(key, k), *k)).filter(|(score, _)| *score > 0.8).collect();
    near.sort_by(|a, b| b.0.total_cmp(&a.0));
    match near.first() {
        Some((_, best)) => format!("unknown sim key `{key}`; did you mean `{best}`?"),
        None => format!("unknown sim key `{key}`; known keys: {}", KEYS.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flatten the serialized default profile into dotted keys.
    fn serialized_keys() -> Vec<String> {
        let tree = serde_json::to_value(SimProfile::default()).expect("profile serializes");
        let mut keys = Vec::new();
        for (name, value) in tree.as_object().expect("profile is an object") {
            match value.as_object() {
                Some(nested) => keys.extend(nested.keys().map(|k| format!("{name}.{k}"))),
                None => keys.push(name.clone()),
            }
        }
        keys
    }

    #[test]
    fn keys_match_the_struct() {
        assert_eq!(serialized_keys(), SimProfile::keys());
    }

    #[test]
    fn set_parses_each_type() {
        let mut p = SimProfile::default();
        p.set("decode-step-ms", "12").unwrap();
        p.set("faults.http-500-rate", "0.1").unwrap();
        p.set("max-running-seqs", "8").unwrap();
        p.set("thinking", "true").unwrap();
        p.set("model", "qwen").unwrap();
        p.set("faults.exit-after-requests", "5").unwrap();
        assert_eq!(p.decode_step_ms, 12.0);
        assert_eq!(p.faults.http_500_rate, 0.1);
        assert_eq!(p.max_running_seqs, 8);
        assert!(p.thinking);
        assert_eq!(p.model.as_deref(), Some("qwen"));
        assert_eq!(p.faults.exit_after_requests, Some(5));
        p.set("faults.exit-after-requests", "none").unwrap();
        assert_eq!(p.faults.exit_after_requests, None);
    }

    #[test]
    fn set_rejects_bad_input_and_keeps_old_value() {
        let mut p = SimProfile::default();
        let err = p.set("decode-step-msx", "1").unwrap_err().to_string();
        assert!(err.contains("did you mean `decode-step-ms`"), "{err}");
        assert!(p.set("decode-step-ms", "fast").is_err());
        assert!(p.set("max-running-seqs", "-3").is_err());
        assert!(p.set("faults.stall-rate", "1.5").is_err());
        assert!(p.set("faults.exit-after-requests", "soon").is_err());
        assert_eq!(p, SimProfile::default());
    }

    #[test]
    fn json_round_trip_and_unknown_fields() {
        let p = SimProfile::default();
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(SimProfile::from_json(&text).unwrap(), p);
        assert_eq!(SimProfile::from_json("{}").unwrap(), p);
        assert!(SimProfile::from_json(r#"{"decode-stepms": 1}"#).is_err());
    }
}
