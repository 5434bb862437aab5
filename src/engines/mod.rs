//! What anvil knows of each engine it launches by name (`engine "vllm"`,
//! `"sglang"`, `"llama.cpp"`): the command line a recipe's typed settings
//! make, when the server is ready, how long its stop may take, how its own
//! constrained decoding makes any model begin a reply with its canary, which
//! installed packages decide its results (for the fingerprint) and the size
//! of its prefix-cache blocks. Anything else is `engine "command"`.
//!
//! A preset is a leaf: the recipe builds one from a server's settings, the
//! launcher, the planner and the load generator's resolved cell read it.

mod llama_cpp;
mod preset;
mod sglang;
mod vllm;

use std::time::Duration;

use serde_json::Value;

pub use preset::{EngineName, EnginePreset};

impl EnginePreset {
    /// The program and its arguments before the recipe's `args`, with the
    /// run-time placeholders `{host}` and `{port}` left to fill.
    pub fn command_line(&self) -> Vec<String> {
        let mut argv = match self.name {
            EngineName::Vllm => vllm::command_line(self),
            EngineName::Sglang => sglang::command_line(self),
            EngineName::LlamaCpp => llama_cpp::command_line(self),
        };
        argv.insert(0, self.program.clone());
        argv
    }

    /// The readiness probe: the path that answers 200 once the engine serves.
    pub fn ready_path(&self) -> &'static str {
        match self.name {
            // vLLM's /health answers once its API server is up; /v1/models
            // once the engine behind it is loaded.
            EngineName::Vllm => "/v1/models",
            // SGLang's /health is 503 until its own warm-up request has run
            // (its /v1/models answers before that request ends, and the
            // request would count in the first cell's counters).
            EngineName::Sglang | EngineName::LlamaCpp => "/health",
        }
    }

    /// How long a stop waits after SIGTERM: vLLM and SGLang shut down an
    /// engine-core process and its workers, and free their memory.
    pub fn grace(&self) -> Duration {
        match self.name {
            EngineName::Vllm | EngineName::Sglang => Duration::from_secs(30),
            EngineName::LlamaCpp => Duration::from_secs(10),
        }
    }

    /// The request-body fields that make the engine's constrained decoding
    /// begin every reply with its canary (`{marker}` is filled per request),
    /// so canaries hold on models that do not follow the instruction.
    pub fn canary_body(&self) -> Value {
        match self.name {
            EngineName::Vllm => vllm::canary_body(),
            EngineName::Sglang => sglang::canary_body(),
            EngineName::LlamaCpp => llama_cpp::canary_body(),
        }
    }

    /// The installed distributions whose versions and files decide a Python
    /// engine's results (empty for a binary: its bytes are hashed instead).
    pub fn distributions(&self) -> &'static [&'static str] {
        match self.name {
            EngineName::Vllm => anvil_proc::VLLM_DISTRIBUTIONS,
            EngineName::Sglang => anvil_proc::SGLANG_DISTRIBUTIONS,
            EngineName::LlamaCpp => &[],
        }
    }

    /// The engine's prefix-cache block, in tokens, at its defaults: a cached
    /// prefix counts only whole blocks, counted from the templated prompt's
    /// first token, so the ideal cached tokens round down to it.
    pub fn cache_block_tokens(&self) -> u64 {
        match self.name {
            EngineName::Vllm => vllm::CACHE_BLOCK_TOKENS,
            EngineName::Sglang => sglang::CACHE_BLOCK_TOKENS,
            EngineName::LlamaCpp => llama_cpp::CACHE_BLOCK_TOKENS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: EngineName) -> EnginePreset {
        EnginePreset {
            name,
            program: name.default_program().into(),
            weights: "/models/smol".into(),
            revision: Some("main".into()),
            served_name: "smol".into(),
            tensor_parallel: Some(2),
            chunked_prefill: Some(2048),
            speculative_config: None,
        }
    }

    #[test]
    fn each_engine_gets_its_own_flags_for_the_same_settings() {
        let vllm = preset(EngineName::Vllm).command_line().join(" ");
        assert_eq!(
            vllm,
            "python3 -m vllm.entrypoints.openai.api_server --model /models/smol --revision main \
             --served-model-name smol --host {host} --port {port} --tensor-parallel-size 2 \
             --max-num-batched-tokens 2048 --enable-prompt-tokens-details"
        );
        let sglang = preset(EngineName::Sglang).command_line().join(" ");
        assert_eq!(
            sglang,
            "python3 -m sglang.launch_server --model-path /models/smol --revision main \
             --served-model-name smol --host {host} --port {port} --tp-size 2 --chunked-prefill-size 2048 \
             --enable-metrics --enable-cache-report"
        );
        let llama = preset(EngineName::LlamaCpp).command_line().join(" ");
        assert_eq!(
            llama,
            "llama-server -m /models/smol --alias smol --host {host} --port {port} --metrics \
             --batch-size 2048"
        );
    }

    #[test]
    fn canary_bodies_carry_the_marker_placeholder() {
        for name in [EngineName::Vllm, EngineName::Sglang, EngineName::LlamaCpp] {
            let body = preset(name).canary_body().to_string();
            assert!(body.contains("{marker}"), "{name:?}: {body}");
        }
    }
}
