//! SGLang's server (`python -m sglang.launch_server`).

use serde_json::{Value, json};

use super::preset::EnginePreset;

/// SGLang's radix cache matches whole pages, of 1 token with its default
/// backends on Ampere and Hopper (64 or 128 with some Blackwell backends):
/// the running engine says which in its `/metrics` (`sglang:page_size`),
/// read first.
pub const CACHE_BLOCK_TOKENS: u64 = 1;

pub fn command_line(p: &EnginePreset) -> Vec<String> {
    let mut argv: Vec<String> =
        ["-m", "sglang.launch_server", "--model-path", &p.weights].map(String::from).to_vec();
    if let Some(revision) = &p.revision {
        argv.extend(["--revision".into(), revision.clone()]);
    }
    argv.extend(
        ["--served-model-name", &p.served_name, "--host", "{host}", "--port", "{port}"].map(String::from),
    );
    if let Some(tp) = p.tensor_parallel {
        argv.extend(["--tp-size".into(), tp.to_string()]);
    }
    if let Some(tokens) = p.chunked_prefill {
        argv.extend(["--chunked-prefill-size".into(), tokens.to_string()]);
    }
    // Its Prometheus /metrics is off unless asked for, and so are the
    // cached tokens in each reply's usage.
    argv.extend(["--enable-metrics".into(), "--enable-cache-report".into()]);
    argv
}

/// SGLang reads `regex` as a sampling parameter of its OpenAI API.
pub fn canary_body() -> Value {
    json!({"regex": super::preset::canary_regex()})
}
