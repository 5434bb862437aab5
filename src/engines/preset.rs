//! The types of an engine known by name, a leaf the per-engine files and
//! the dispatch in `mod.rs` both import.

use anvil_words::words;

words! {
    #[serde]
    /// An engine anvil knows by name.
    pub enum EngineName { Vllm = "vllm", Sglang = "sglang", LlamaCpp = "llama.cpp" }
}

impl EngineName {
    /// Whether the engine is a Python program started by an interpreter
    /// (`python`), rather than a binary (`binary`).
    pub fn is_python(self) -> bool {
        matches!(self, EngineName::Vllm | EngineName::Sglang)
    }

    /// The program run when the recipe names none.
    pub fn default_program(self) -> &'static str {
        match self {
            EngineName::Vllm | EngineName::Sglang => "python3",
            EngineName::LlamaCpp => "llama-server",
        }
    }
}

/// A launched engine known by name, with the settings a user varies.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EnginePreset {
    pub name: EngineName,
    /// The interpreter whose environment holds the engine (vLLM, SGLang),
    /// or the `llama-server` binary.
    pub program: String,
    /// A local folder or file, or a hub id (`Org/Name`).
    pub weights: String,
    /// The hub revision (branch, tag or commit) of `weights`.
    pub revision: Option<String>,
    /// The model name requests carry (`--served-model-name`, `--alias`).
    pub served_name: String,
    pub tensor_parallel: Option<u64>,
    /// Prompt tokens prefilled per step (vLLM's `--max-num-batched-tokens`,
    /// SGLang's `--chunked-prefill-size`, llama.cpp's `--batch-size`).
    pub chunked_prefill: Option<u64>,
    /// vLLM's `--speculative-config` JSON, as written.
    pub speculative_config: Option<String>,
}

/// The regex every reply must match: the marker, a space, then any text
/// without an underscore. A small model asked for the marker tends to say
/// it again (`ANVIL_REQ_…` is in its prompt), and a second marker fails the
/// canary; no underscore means no second marker, at the cost of one
/// character prose rarely needs.
pub(super) fn canary_regex() -> &'static str {
    "{marker} [^_]*"
}

/// The flags a Python engine's launcher shares with the other's, in their
/// own spellings: `-m MODULE MODEL_FLAG W [--revision R] --served-model-name
/// M --host {host} --port {port} [TP_FLAG N] [CHUNK_FLAG C]`.
pub(super) struct PythonFlags<'a> {
    pub module: &'a str,
    pub model: &'a str,
    pub tensor_parallel: &'a str,
    pub chunked_prefill: &'a str,
}

pub(super) fn python_command_line(p: &EnginePreset, flags: &PythonFlags<'_>) -> Vec<String> {
    let mut argv: Vec<String> = ["-m", flags.module, flags.model, &p.weights].map(String::from).to_vec();
    if let Some(revision) = &p.revision {
        argv.extend(["--revision".into(), revision.clone()]);
    }
    argv.extend(
        ["--served-model-name", &p.served_name, "--host", "{host}", "--port", "{port}"].map(String::from),
    );
    if let Some(tp) = p.tensor_parallel {
        argv.extend([flags.tensor_parallel.to_string(), tp.to_string()]);
    }
    if let Some(tokens) = p.chunked_prefill {
        argv.extend([flags.chunked_prefill.to_string(), tokens.to_string()]);
    }
    argv
}
