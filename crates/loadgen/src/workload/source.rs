//! What each request of a cell is: a synthetic capacity-v4 prompt, a line
//! of a recorded trace, an entry of a prompt dataset, or a turn of a
//! multi-turn session. The [`Traffic`] is what the recipe asked for; the
//! [`Source`] is it loaded (files read once, kept compact), and
//! [`Source::plan`] builds request `index`'s content only when it is sent.

use std::sync::Arc;

use anyhow::Context as _;

use crate::workload::agent_plan::AgentPlan;
use crate::workload::dataset::Dataset;
use crate::workload::prompt::PromptBuilder;
use crate::workload::request::{Content, Origin, Planned};
use crate::workload::session::SessionPlan;
use crate::workload::trace::Trace;
use crate::workload::traffic::Traffic;

/// The loaded traffic.
#[derive(Debug, Clone)]
pub enum Source {
    Synthetic,
    Trace(Arc<Trace>),
    Dataset(Arc<Dataset>),
    Sessions(Arc<SessionPlan>),
    Agents(Arc<AgentPlan>),
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
        if staged_below.is_some()
            && matches!(traffic, Traffic::Trace(_) | Traffic::Sessions(_) | Traffic::Agents(_))
        {
            anyhow::bail!(
                "a trace, sessions or agents set their own arrivals: they cannot run in load stages"
            );
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
            Traffic::Agents(a) => Self::Agents(Arc::new(
                AgentPlan::load(a, repeats)
                    .map_err(anyhow::Error::msg)
                    .with_context(|| format!("reading the agent trace {}", a.path.display()))?,
            )),
        })
    }

    /// Measured requests per repeat, when the traffic fixes it (a trace's
    /// window, sessions × turns); `None`: the cell's `requests`.
    pub fn requests(&self) -> Option<u64> {
        match self {
            Self::Synthetic => None,
            Self::Dataset(d) => d.scored_requests(),
            Self::Trace(t) => Some(t.requests()),
            Self::Sessions(s) => Some(s.requests()),
            Self::Agents(a) => Some(a.requests()),
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

    /// Whether requests run as agent tasks (each call after its parents' replies).
    pub fn agents(&self) -> Option<Arc<AgentPlan>> {
        match self {
            Self::Agents(a) => Some(a.clone()),
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
            exact_tokens: synthetic.exact_tokens(),
        };
        match self {
            Self::Synthetic => synthetic_prompt(),
            Self::Sessions(s) => {
                s.plan(index, seed, synthetic.context_tokens, max_tokens).unwrap_or_else(synthetic_prompt)
            }
            Self::Trace(t) => t.plan(index, seed, &synthetic.filler).unwrap_or_else(synthetic_prompt),
            Self::Dataset(d) => d.plan(index, max_tokens).unwrap_or_else(synthetic_prompt),
            Self::Agents(a) => {
                a.plan(index, seed, &synthetic.filler, max_tokens).unwrap_or_else(synthetic_prompt)
            }
        }
    }

    /// The scored dataset item a request's dataset `entry` sent, by its id.
    pub fn item_id(&self, entry: Option<u64>) -> Option<&str> {
        match self {
            Self::Dataset(d) => d.item_id(entry?),
            _ => None,
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
            Self::Agents(a) => a.describe(),
        }
    }
}
