//! What the recipe asks a cell to send: synthetic prompts, a recorded
//! trace, a prompt dataset or multi-turn sessions, and the file formats
//! they are read from. [`crate::workload::source`] loads it.

use std::path::PathBuf;

use anvil_words::words;
use serde::{Deserialize, Serialize};

pub use crate::workload::agent_format::AgentTraceFormat;

/// Where the cell's requests come from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Traffic {
    /// Seeded synthetic prompts of `context_tokens` (capacity-v4).
    #[default]
    Synthetic,
    Trace(TraceSpec),
    Dataset(DatasetSpec),
    Sessions(SessionSpec),
    Agents(AgentSpec),
}

impl Traffic {
    pub fn is_synthetic(&self) -> bool {
        matches!(self, Self::Synthetic)
    }
}

/// `trace "FILE" format=… …`: replay recorded arrivals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSpec {
    pub path: PathBuf,
    pub format: TraceFormat,
    /// Tokens per hash id (mooncake) and per shared-prefix block.
    pub block_tokens: u32,
    /// Multiplies every recorded time: 0.5 replays twice as fast, 2 half as fast.
    pub time_scale: f64,
    /// Trace time (after its first line) where the replay window opens.
    pub start_ms: u64,
    /// Trace time the window spans (looping included).
    pub duration_ms: Option<u64>,
    /// Most requests the window sends (looping included).
    pub max_requests: Option<u64>,
    /// Start the window again when it runs out, until `duration_ms` or `max_requests`.
    pub looped: bool,
    /// Send the engine's ignore-EOS field so output lengths are met.
    pub ignore_eos: bool,
}

impl TraceSpec {
    /// The whole file, once, at its recorded times.
    pub fn whole_file(path: impl Into<PathBuf>, format: TraceFormat, block_tokens: u32) -> TraceSpec {
        TraceSpec {
            path: path.into(),
            format,
            block_tokens,
            time_scale: 1.0,
            start_ms: 0,
            duration_ms: None,
            max_requests: None,
            looped: false,
            ignore_eos: true,
        }
    }
}

words! {
    #[serde]
    /// Which trace layout a file has.
    pub enum TraceFormat { Mooncake = "mooncake", Jsonl = "jsonl" }
}

/// `dataset "FILE" format=…`: prompts sampled (seeded) from a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetSpec {
    pub path: PathBuf,
    pub format: DatasetFormat,
    /// Keep only prompts of at least this many of the model's tokens (needs a tokenizer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_prompt_tokens: Option<u64>,
    /// Keep only prompts of at most this many tokens, or with `truncate`
    /// cut longer ones to it (needs a tokenizer; cutting, a `tokenizer.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncate: bool,
}

impl DatasetSpec {
    /// Whether the spec bounds its prompts by token length.
    pub fn bounds_tokens(&self) -> bool {
        self.min_prompt_tokens.is_some() || self.max_prompt_tokens.is_some()
    }
}

words! {
    #[serde]
    /// Which dataset layout a file has: prompts alone (`sharegpt`,
    /// `jsonl`), or scored items, each with its reference answer (`anvil`,
    /// `gsm8k`, `mmlu`: read by `anvil-quality`; see [`crate::workload::scored`]).
    pub enum DatasetFormat {
        Sharegpt = "sharegpt",
        Jsonl = "jsonl",
        Anvil = "anvil",
        Gsm8k = "gsm8k",
        Mmlu = "mmlu",
    }
}

/// `sessions N turns=… think-time=…`: conversations that resend their history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSpec {
    pub sessions: u32,
    pub turns: u32,
    pub think_time_ms: u64,
    /// The user's text of each turn; generated (`context_tokens` words) where absent.
    pub turn_texts: Vec<String>,
}

/// `agents "FILE" format=…`: agent runs replayed as graphs of calls
/// (docs/workloads.md "Agent traces"). A call is sent once every parent's
/// reply has ended plus its delay; tasks start as `concurrency` agents
/// become free (closed loop), on the cell's `arrival` rate (tasks per
/// second), or at their recorded `arrival_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    pub path: PathBuf,
    pub format: AgentTraceFormat,
    /// Tokens per block id of the trace.
    pub block_tokens: u32,
    /// Multiplies every recorded delay and arrival: 0.5 replays twice as fast.
    pub time_scale: f64,
    /// Start each task at its recorded `arrival_ms` (open loop).
    pub recorded_arrivals: bool,
    /// Replay only the file's first tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tasks: Option<u64>,
    /// Send the engine's ignore-EOS field so output lengths are met.
    pub ignore_eos: bool,
    /// A task's deadline where its trace names none, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<f64>,
}
