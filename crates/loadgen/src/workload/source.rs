//! What each request of a cell is: a synthetic capacity-v4 prompt, a line
//! of a recorded trace, an entry of a prompt dataset, or a turn of a
//! multi-turn session. The [`Traffic`] is what the recipe asked for; the
//! [`Source`] is it loaded (files read once, kept compact), and
//! [`Source::plan`] builds request `index`'s content only when it is sent.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::workload::dataset::{Dataset, DatasetFormat};
use crate::workload::prompt::PromptBuilder;
use crate::workload::session::SessionPlan;
use crate::workload::trace::{Trace, TraceFormat};

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

/// `dataset "FILE" format=…`: prompts sampled (seeded) from a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetSpec {
    pub path: PathBuf,
    pub format: DatasetFormat,
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

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: &'static str,
    pub text: String,
}

/// What a request sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// One user prompt.
    Prompt(String),
    /// A whole conversation (chat API), the last message the user's.
    Messages(Vec<Message>),
}

/// Where a request came from, for its record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Origin {
    /// 1-based line of the trace file.
    pub trace_line: Option<u64>,
    /// 0-based entry of the dataset file.
    pub dataset_entry: Option<u64>,
    pub session: Option<u64>,
    /// 0-based turn within its session.
    pub turn: Option<u32>,
    /// The output length the trace or dataset asks for.
    pub requested_output_tokens: Option<u64>,
    /// Prompt length the trace or dataset line names (tokens).
    pub planned_input_tokens: Option<u64>,
}

/// One request, ready to send.
#[derive(Debug, Clone)]
pub struct Planned {
    pub content: Content,
    pub max_tokens: u32,
    pub ignore_eos: bool,
    pub origin: Origin,
}

/// The loaded traffic.
#[derive(Debug, Clone)]
pub enum Source {
    Synthetic,
    Trace(Arc<Trace>),
    Dataset(Arc<Dataset>),
    Sessions(Arc<SessionPlan>),
}

impl Source {
    /// Reads the files the traffic names (once, before the run). A staged
    /// cell (`staged_below`: where its unmeasured request indices start)
    /// sends as many requests as its stages' times allow.
    pub fn load(
        traffic: &Traffic,
        seed: u64,
        requests: u32,
        repeats: u32,
        staged_below: Option<u64>,
    ) -> anyhow::Result<Self> {
        if staged_below.is_some() && matches!(traffic, Traffic::Trace(_) | Traffic::Sessions(_)) {
            anyhow::bail!("a trace or sessions set their own arrivals: they cannot run in load stages");
        }
        Ok(match traffic {
            Traffic::Synthetic => Self::Synthetic,
            Traffic::Trace(t) => {
                let mut trace =
                    Trace::load(t).with_context(|| format!("reading the trace {}", t.path.display()))?;
                trace.set_repeats(repeats);
                Self::Trace(Arc::new(trace))
            }
            Traffic::Dataset(d) => Self::Dataset(Arc::new(
                Dataset::load(d, seed, requests, repeats, staged_below)
                    .with_context(|| format!("reading the dataset {}", d.path.display()))?,
            )),
            Traffic::Sessions(s) => Self::Sessions(Arc::new(SessionPlan::synthetic(s, repeats)?)),
        })
    }

    /// Measured requests per repeat, when the traffic fixes it (a trace's
    /// window, sessions × turns); `None`: the cell's `requests`.
    pub fn requests(&self) -> Option<u64> {
        match self {
            Self::Synthetic | Self::Dataset(_) => None,
            Self::Trace(t) => Some(t.requests()),
            Self::Sessions(s) => Some(s.requests()),
        }
    }

    /// Whether requests run as conversations (each turn after the last one's reply).
    pub fn sessions(&self) -> Option<Arc<SessionPlan>> {
        match self {
            Self::Sessions(s) => Some(s.clone()),
            Self::Trace(t) => t.session_plan(),
            _ => None,
        }
    }

    /// Request `index`'s content. Indices past the traffic's own requests
    /// (warmup, calibration) get synthetic prompts, so they never fill a
    /// prefix cache for a measured request.
    pub fn plan(&self, index: u64, synthetic: &PromptBuilder, max_tokens: u32, seed: u64) -> Planned {
        let synthetic_prompt = || Planned {
            content: Content::Prompt(synthetic.build(index)),
            max_tokens,
            ignore_eos: false,
            origin: Origin::default(),
        };
        match self {
            Self::Synthetic => synthetic_prompt(),
            Self::Sessions(s) => {
                s.plan(index, seed, synthetic.context_tokens, max_tokens).unwrap_or_else(synthetic_prompt)
            }
            Self::Trace(t) => t.plan(index, seed).unwrap_or_else(synthetic_prompt),
            Self::Dataset(d) => d.plan(index, max_tokens).unwrap_or_else(synthetic_prompt),
        }
    }

    /// When request `index` is due after the run starts (a trace's arrivals).
    pub fn schedule(&self) -> Option<&Trace> {
        match self {
            Self::Trace(t) if t.session_plan().is_none() => Some(t),
            _ => None,
        }
    }

    /// The traffic's description for the artifact (`null` when synthetic).
    pub fn describe(&self) -> serde_json::Value {
        match self {
            Self::Synthetic => serde_json::Value::Null,
            Self::Trace(t) => t.describe(),
            Self::Dataset(d) => d.describe(),
            Self::Sessions(s) => s.describe(),
        }
    }
}

/// Words of exactly four letters, so the sim counts one token per word
/// (`crates/sim/src/tokenizer.rs`) and a block of N words is N tokens.
pub fn push_exact_words(out: &mut String, rng: &mut crate::workload::prompt::SplitMix64, count: u64) {
    const LETTERS: &[u8; 20] = b"abdefghiklmnoprstuvz";
    for _ in 0..count {
        let r = rng.next_u64();
        for s in 0..4 {
            out.push(LETTERS[((r >> (16 * s)) % LETTERS.len() as u64) as usize] as char);
        }
        out.push(' ');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::prompt::SplitMix64;

    #[test]
    fn exact_words_are_one_sim_token_each() {
        let mut text = String::new();
        push_exact_words(&mut text, &mut SplitMix64::new(1, 2), 100);
        assert_eq!(text.split_whitespace().count(), 100);
        assert!(text.split_whitespace().all(|w| w.len() == 4));
    }
}
