//! An agent trace made ready to replay: which tasks run, which request
//! index each call is, and what each call's prompt says.
//!
//! Request indices: the calls of one measured run, task after task in
//! file order (task `t`'s call `c` is `first_call[t] + c`); repeat `r`
//! adds `r × calls`. A call's prompt is built when it is sent:
//! - blocks: each block id's words come from (campaign seed, block id)
//!   alone, so every call that names a block (its own, inherited from a
//!   parent, or shared with another task) sends that block's text
//!   exactly; with the model's tokenizer a block is exactly `block_tokens`
//!   of its tokens, so the server's prefix cache sees what an agent's
//!   repeated history would give it. Tokens past the blocks are the
//!   call's own.
//! - text: sent as written.
//!
//! The replay itself is [`crate::send::agents`].

use serde_json::{Value, json};

use crate::workload::agent_trace::{AgentTask, AgentTrace, CallPrompt};
use crate::workload::filler::Filler;
use crate::workload::request::{Content, Origin, Planned};
use crate::workload::split_mix::SplitMix64;
use crate::workload::traffic::AgentSpec;

/// Generator streams of agent prompts, apart from every other prompt's.
mod streams {
    /// A block id's words: `BLOCK_BASE ^ id`.
    pub const BLOCK_BASE: u64 = 0x6167_656e_7400_0000;
    /// A call's own words past its blocks: `CALL_BASE + line`.
    pub const CALL_BASE: u64 = 9 << 40;
}

/// The tasks of one measured run and where each call's index lies.
#[derive(Debug)]
pub struct AgentPlan {
    pub(crate) spec: AgentSpec,
    pub(crate) tasks: Vec<AgentTask>,
    /// Request slot of each task's first call.
    pub(crate) first_call: Vec<u64>,
    /// Per task, per call: the prompt tokens an unbounded prefix cache
    /// holds for sure when the call is sent (its ancestors' blocks).
    ideal_cached: Vec<Vec<Option<u64>>>,
    calls: u64,
    repeats: u64,
}

impl AgentPlan {
    /// Reads the trace and keeps the tasks the spec asks for.
    pub fn load(spec: &AgentSpec, repeats: u32) -> Result<Self, String> {
        if spec.block_tokens == 0 {
            return Err("block-tokens must be at least 1".into());
        }
        if !(spec.time_scale.is_finite() && spec.time_scale > 0.0) {
            return Err(format!("time-scale must be a positive number, got {}", spec.time_scale));
        }
        let trace = AgentTrace::read(&spec.path, spec.format).map_err(|p| match p.line {
            Some(line) => format!("line {line}: {}", p.message),
            None => p.message,
        })?;
        let mut tasks = trace.tasks;
        if let Some(max) = spec.max_tasks {
            tasks.truncate(max.max(1) as usize);
        }
        if spec.recorded_arrivals
            && let Some(task) = tasks.iter().find(|t| t.arrival_ms.is_none())
        {
            return Err(format!(
                "task `{}` (line {}) has no arrival_ms, and the replay was asked to start tasks at their recorded arrivals",
                task.id, task.line
            ));
        }
        let mut first_call = Vec::with_capacity(tasks.len());
        let mut calls = 0u64;
        for task in &tasks {
            first_call.push(calls);
            calls += task.calls.len() as u64;
        }
        let ideal_cached = tasks.iter().map(|t| t.ideal_cached_tokens(spec.block_tokens)).collect();
        Ok(Self {
            spec: spec.clone(),
            tasks,
            first_call,
            ideal_cached,
            calls,
            repeats: u64::from(repeats.max(1)),
        })
    }

    /// Calls of one measured run.
    pub fn requests(&self) -> u64 {
        self.calls
    }

    /// The task and call of request `index`, if it is one of the trace's.
    pub fn locate(&self, index: u64) -> Option<(usize, u32)> {
        if self.calls == 0 || index >= self.calls * self.repeats {
            return None;
        }
        let slot = index % self.calls;
        let task = self.first_call.partition_point(|&first| first <= slot) - 1;
        Some((task, (slot - self.first_call[task]) as u32))
    }

    /// When task `t` arrives after the run starts, ms (recorded arrivals,
    /// scaled; relative to the earliest task's).
    pub fn recorded_arrival_ms(&self, task: usize) -> Option<f64> {
        let first = self.tasks.iter().filter_map(|t| t.arrival_ms).fold(f64::INFINITY, f64::min);
        self.tasks[task].arrival_ms.map(|a| (a - first) * self.spec.time_scale)
    }

    /// The call's delay after its parents (tool or think time), scaled.
    pub fn delay_ms(&self, task: usize, call: u32) -> f64 {
        self.tasks[task].calls[call as usize].delay_ms * self.spec.time_scale
    }

    /// Request `index`'s call, ready to send.
    pub fn plan(&self, index: u64, seed: u64, filler: &Filler, default_max_tokens: u32) -> Option<Planned> {
        let (t, c) = self.locate(index)?;
        let call = &self.tasks[t].calls[c as usize];
        let (text, planned_tokens, exact) = match &call.prompt {
            CallPrompt::Text(text) => (text.clone(), None, false),
            CallPrompt::Blocks { blocks, .. } => {
                let tokens = call.prompt.tokens(self.spec.block_tokens).unwrap_or(0);
                let mut text = String::with_capacity(tokens as usize * 5);
                let mut left = tokens;
                for &id in blocks {
                    if left == 0 {
                        break;
                    }
                    let words = left.min(u64::from(self.spec.block_tokens));
                    filler.push(&mut text, &mut SplitMix64::new(seed, streams::BLOCK_BASE ^ id), words);
                    left -= words;
                }
                if left > 0 {
                    filler.push(&mut text, &mut SplitMix64::new(seed, streams::CALL_BASE + call.line), left);
                }
                if !filler.is_token_exact() {
                    text.truncate(text.trim_end().len());
                }
                (text, Some(tokens), filler.is_token_exact())
            }
        };
        let max_tokens =
            call.output_tokens.map_or(default_max_tokens, |n| n.clamp(1, u64::from(u32::MAX)) as u32);
        Some(Planned {
            content: Content::Prompt(text),
            max_tokens,
            ignore_eos: self.spec.ignore_eos && call.output_tokens.is_some(),
            origin: Origin {
                trace_line: Some(call.line),
                requested_output_tokens: call.output_tokens,
                planned_input_tokens: planned_tokens,
                ideal_cached_tokens: self.ideal_cached[t][c as usize],
                ..Origin::default()
            },
            exact_tokens: if exact { planned_tokens } else { None },
        })
    }

    /// The artifact's `traffic` object.
    pub fn describe(&self) -> Value {
        let deadlines = self.tasks.iter().filter(|t| t.deadline_ms.is_some()).count();
        json!({
            "kind": "agents",
            "file": self.spec.path.file_name().map(|f| f.to_string_lossy().into_owned()),
            "format": self.spec.format.as_str(),
            "block_tokens": self.spec.block_tokens,
            "time_scale": self.spec.time_scale,
            "arrivals": if self.spec.recorded_arrivals { "recorded" } else { "the cell's" },
            "tasks": self.tasks.len(),
            "calls": self.calls,
            "tasks_with_own_deadline": deadlines,
            "default_deadline_ms": self.spec.deadline_ms,
        })
    }
}
