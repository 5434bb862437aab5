//! SGLang's server (`python -m sglang.launch_server`).

use serde_json::{Value, json};

use super::preset::{EnginePreset, PythonFlags, python_command_line};

/// SGLang's radix cache matches whole pages, of 1 token with its default
/// backends on Ampere and Hopper (64 or 128 with some Blackwell backends):
/// the running engine says which in its `/metrics` (`sglang:page_size`),
/// read first.
pub const CACHE_BLOCK_TOKENS: u64 = 1;

pub fn command_line(p: &EnginePreset) -> Vec<String> {
    let flags = PythonFlags {
        module: "sglang.launch_server",
        model: "--model-path",
        tensor_parallel: "--tp-size",
        chunked_prefill: "--chunked-prefill-size",
    };
    let mut argv = python_command_line(p, &flags);
    // Its Prometheus /metrics is off unless asked for, and so are the
    // cached tokens in each reply's usage.
    argv.extend(["--enable-metrics".into(), "--enable-cache-report".into()]);
    argv
}

/// SGLang reads `regex` as a sampling parameter of its OpenAI API.
pub fn canary_body() -> Value {
    json!({"regex": super::preset::canary_regex()})
}
