//! vLLM's OpenAI-compatible server (`python -m vllm.entrypoints.openai.api_server`).

use serde_json::{Value, json};

use super::preset::EnginePreset;

/// vLLM's prefix-cache block on GPUs (`CacheConfig.DEFAULT_BLOCK_SIZE`);
/// its CPU platform uses 128. The running engine says which in its
/// `/metrics` (`vllm:cache_config_info{block_size=…}`), read first.
pub const CACHE_BLOCK_TOKENS: u64 = 16;

pub fn command_line(p: &EnginePreset) -> Vec<String> {
    let mut argv: Vec<String> =
        ["-m", "vllm.entrypoints.openai.api_server", "--model", &p.weights].map(String::from).to_vec();
    if let Some(revision) = &p.revision {
        argv.extend(["--revision".into(), revision.clone()]);
    }
    argv.extend(
        ["--served-model-name", &p.served_name, "--host", "{host}", "--port", "{port}"].map(String::from),
    );
    if let Some(tp) = p.tensor_parallel {
        argv.extend(["--tensor-parallel-size".into(), tp.to_string()]);
    }
    if let Some(tokens) = p.chunked_prefill {
        argv.extend(["--max-num-batched-tokens".into(), tokens.to_string()]);
    }
    if let Some(config) = &p.speculative_config {
        argv.extend(["--speculative-config".into(), config.clone()]);
    }
    argv
}

/// vLLM's structured outputs (0.32 reads `structured_outputs`; the older
/// `guided_regex` is ignored there).
pub fn canary_body() -> Value {
    json!({"structured_outputs": {"regex": super::preset::canary_regex()}})
}
