//! llama.cpp's `llama-server`.

use serde_json::{Value, json};

use super::preset::EnginePreset;

/// llama-server reuses a slot's cached prompt token by token.
pub const CACHE_BLOCK_TOKENS: u64 = 1;

pub fn command_line(p: &EnginePreset) -> Vec<String> {
    let mut argv: Vec<String> =
        ["-m", &p.weights, "--alias", &p.served_name, "--host", "{host}", "--port", "{port}", "--metrics"]
            .map(String::from)
            .to_vec();
    if let Some(tokens) = p.chunked_prefill {
        argv.extend(["--batch-size".into(), tokens.to_string()]);
    }
    argv
}

/// A GBNF grammar: the marker, a space, then any text without an
/// underscore (see `canary_regex`).
pub fn canary_body() -> Value {
    json!({"grammar": "root ::= \"{marker} \" [^_\\x00]*"})
}
