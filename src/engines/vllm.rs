//! vLLM's OpenAI-compatible server (`python -m vllm.entrypoints.openai.api_server`).

use serde_json::{Value, json};

use super::preset::{EnginePreset, PythonFlags, python_command_line};

/// vLLM's prefix-cache block on GPUs (`CacheConfig.DEFAULT_BLOCK_SIZE`);
/// its CPU platform uses 128. The running engine says which in its
/// `/metrics` (`vllm:cache_config_info{block_size=…}`), read first.
pub const CACHE_BLOCK_TOKENS: u64 = 16;

pub fn command_line(p: &EnginePreset) -> Vec<String> {
    let flags = PythonFlags {
        module: "vllm.entrypoints.openai.api_server",
        model: "--model",
        tensor_parallel: "--tensor-parallel-size",
        chunked_prefill: "--max-num-batched-tokens",
    };
    let mut argv = python_command_line(p, &flags);
    if let Some(config) = &p.speculative_config {
        argv.extend(["--speculative-config".into(), config.clone()]);
    }
    // The cached tokens of each reply's usage (`prompt_tokens_details`) are
    // off unless asked for: without them a cell meant cold cannot tell that
    // it hit what an earlier run left in the cache (`tokens.cold`). A flag
    // also in `args` is harmless: vLLM's parser takes it twice.
    argv.push("--enable-prompt-tokens-details".into());
    argv
}

/// vLLM's structured outputs (0.32 reads `structured_outputs`; the older
/// `guided_regex` is ignored there).
pub fn canary_body() -> Value {
    json!({"structured_outputs": {"regex": super::preset::canary_regex()}})
}
