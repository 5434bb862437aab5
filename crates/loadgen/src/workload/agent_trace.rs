//! Agent runs described as graphs of model calls: the trace formats, read
//! and checked, and the per-task graph queries the replay
//! ([`crate::send::agents`]) and the job metrics stand on. Nothing here
//! sends a request.
//!
//! Two layouts, both one JSON object per line (docs/workloads.md, "Agent
//! traces"):
//!
//! - `jsonl`, anvil's own: a line is one call of one task, with its
//!   `parents` (the calls whose replies must have ended), the `delay_ms`
//!   after them (tool or think time), its prompt (a length, blocks of a
//!   shared history, or text) and its output length;
//! - `agentic-mooncake`, the rows NVIDIA Dynamo's request-trace converter
//!   writes for its simulator (Mooncake rows plus `request_id`, `wait_for`,
//!   `delay` and `tool_wait_ms`); a task is a set of rows joined by
//!   `wait_for`.
//!
//! Both are read into the same [`AgentTrace`]: tasks of calls in file
//! order, every call's parents earlier in its task (so file order is a
//! topological order), every prompt's blocks resolved. The rules a file
//! must keep (ids unique, parents known and earlier, no cycle, no two keys
//! that exclude each other, delays not negative) are checked here, each
//! broken one named at its line as the trace check names a trace's; a key
//! the format does not read is a warning at the first line holding it.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::BufRead;
use std::path::Path;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::workload::agent_format::AgentTraceFormat;
use crate::workload::input_check::{
    FileProblem, InputSummary, UNKNOWN_KEYS_NAMED, UnknownKey, likely_typo, open,
};
use crate::workload::trace_line::LineProblem;

/// What a call sends as its prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum CallPrompt {
    /// Text, sent as written (its blocks are unknown: no ideal cache count).
    Text(String),
    /// A generated prompt: `blocks` are all its block ids in order (the
    /// inherited ones first), each `block-tokens` long; `input_tokens`, when
    /// given, is the whole prompt's length (else the blocks' length).
    Blocks {
        input_tokens: Option<u64>,
        blocks: Vec<u64>,
        /// The parent whose blocks begin this prompt (an index into the
        /// task's calls), and how many blocks came from it.
        inherited: Option<(u32, usize)>,
    },
}

impl CallPrompt {
    /// The prompt's length in tokens when a block is `block_tokens` long;
    /// `None` for text.
    pub fn tokens(&self, block_tokens: u32) -> Option<u64> {
        match self {
            CallPrompt::Text(_) => None,
            CallPrompt::Blocks { input_tokens, blocks, .. } => {
                Some(input_tokens.unwrap_or(blocks.len() as u64 * u64::from(block_tokens)))
            }
        }
    }

    fn blocks(&self) -> &[u64] {
        match self {
            CallPrompt::Text(_) => &[],
            CallPrompt::Blocks { blocks, .. } => blocks,
        }
    }
}

/// One model call of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCall {
    pub id: String,
    /// 1-based line of the file.
    pub line: u64,
    /// The calls whose replies must have ended before this one is sent:
    /// indices into the task's calls, each below this call's own.
    pub parents: Vec<u32>,
    /// Milliseconds after the last parent's reply ends (after the task's
    /// start for a root) before the call is sent: tool or think time.
    pub delay_ms: f64,
    pub prompt: CallPrompt,
    /// `max_tokens` and the length the reply is checked against; `None`
    /// when the trace names none.
    pub output_tokens: Option<u64>,
}

/// One agent run: calls in file order, which is a topological order.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTask {
    pub id: String,
    /// The line of its first call.
    pub line: u64,
    /// When the task arrived, ms, as the trace recorded it (for an open
    /// loop "as recorded"); `None` when it names none.
    pub arrival_ms: Option<f64>,
    /// The task must end within this many ms of its start (goodput).
    pub deadline_ms: Option<f64>,
    pub calls: Vec<AgentCall>,
    children: Vec<Vec<u32>>,
}

/// When a call is sent and when its reply ends, ms after the task's start,
/// given how long each call takes on the server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallTimes {
    pub start_ms: f64,
    pub end_ms: f64,
}

/// The chain of calls that sets a task's completion time.
#[derive(Debug, Clone, PartialEq)]
pub struct CriticalPath {
    /// The task's completion time: the last reply's end after its start.
    pub length_ms: f64,
    /// Its calls, first to last (indices into the task's calls).
    pub calls: Vec<u32>,
    /// Of `length_ms`, the time its calls spent on the server...
    pub server_ms: f64,
    /// ...and the delays before them (tool and think time).
    pub delay_ms: f64,
}

impl AgentTask {
    /// Calls without parents: sent when the task starts (plus their delay).
    pub fn roots(&self) -> Vec<u32> {
        (0..self.calls.len() as u32).filter(|&c| self.calls[c as usize].parents.is_empty()).collect()
    }

    /// The calls that name `call` among their parents, in file order.
    pub fn children(&self, call: u32) -> &[u32] {
        &self.children[call as usize]
    }

    /// An order in which every call comes after its parents: the file's
    /// (the check refuses a parent that comes later).
    pub fn topological_order(&self) -> Vec<u32> {
        (0..self.calls.len() as u32).collect()
    }

    /// Every call's send and end when call `c` spends `durations_ms[c]` on
    /// the server: a root is sent at its delay, any other call at its
    /// parents' last end plus its delay. The replay's rule, on paper.
    pub fn schedule(&self, durations_ms: &[f64]) -> Vec<CallTimes> {
        assert_eq!(durations_ms.len(), self.calls.len(), "one duration per call of task {}", self.id);
        let mut times: Vec<CallTimes> = Vec::with_capacity(self.calls.len());
        for (call, duration) in self.calls.iter().zip(durations_ms) {
            let ready = call.parents.iter().map(|&p| times[p as usize].end_ms).fold(0.0, f64::max);
            let start_ms = ready + call.delay_ms;
            times.push(CallTimes { start_ms, end_ms: start_ms + duration });
        }
        times
    }

    /// The chain of calls whose delays and durations add up to the task's
    /// completion time (ties go to the earlier line).
    pub fn critical_path(&self, durations_ms: &[f64]) -> CriticalPath {
        let times = self.schedule(durations_ms);
        let last_of = |calls: &mut dyn Iterator<Item = u32>| {
            calls.fold(None, |best: Option<u32>, c| match best {
                Some(b) if times[b as usize].end_ms >= times[c as usize].end_ms => Some(b),
                _ => Some(c),
            })
        };
        let mut calls = Vec::new();
        let mut at = last_of(&mut (0..self.calls.len() as u32));
        while let Some(c) = at {
            calls.push(c);
            at = last_of(&mut self.calls[c as usize].parents.iter().copied());
        }
        calls.reverse();
        let length_ms = calls.last().map_or(0.0, |&c| times[c as usize].end_ms);
        let server_ms = calls.iter().map(|&c| durations_ms[c as usize]).sum();
        let delay_ms = calls.iter().map(|&c| self.calls[c as usize].delay_ms).sum();
        CriticalPath { length_ms, calls, server_ms, delay_ms }
    }

    /// The prompt tokens of each call that an unbounded prefix cache holds
    /// for sure when the call is sent, from the graph alone: block-tokens ×
    /// the longest run of leading blocks an ancestor's prompt began with
    /// (an ancestor's reply has ended before the call is sent; a sibling's
    /// may not have), at most the prompt's length. `None` for a text
    /// prompt. Hits across tasks (a system prompt every task shares) depend
    /// on the order tasks run in and are the replay's to add.
    pub fn ideal_cached_tokens(&self, block_tokens: u32) -> Vec<Option<u64>> {
        let mut walk = AncestorWalk::new(self.calls.len());
        (0..self.calls.len() as u32)
            .map(|c| {
                let call = &self.calls[c as usize];
                let tokens = call.prompt.tokens(block_tokens)?;
                let mine = call.prompt.blocks();
                // Longest prompts first: none shorter than the best so far
                // can beat it (a chain's parent settles it at once).
                let mut ancestors = walk.of(c, |a| &self.calls[a as usize].parents);
                ancestors.sort_by_key(|&a| std::cmp::Reverse(self.calls[a as usize].prompt.blocks().len()));
                let mut shared = 0;
                for a in ancestors {
                    let theirs = self.calls[a as usize].prompt.blocks();
                    if theirs.len() <= shared {
                        break;
                    }
                    shared = shared.max(mine.iter().zip(theirs).take_while(|(x, y)| x == y).count());
                }
                Some((shared as u64 * u64::from(block_tokens)).min(tokens))
            })
            .collect()
    }

    /// The most calls on one chain from a root.
    fn longest_chain(&self) -> u64 {
        let mut depth: Vec<u64> = Vec::with_capacity(self.calls.len());
        for call in &self.calls {
            depth.push(1 + call.parents.iter().map(|&p| depth[p as usize]).max().unwrap_or(0));
        }
        depth.into_iter().max().unwrap_or(0)
    }
}

/// A whole agent trace file, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTrace {
    pub format: AgentTraceFormat,
    /// In the order of their first line.
    pub tasks: Vec<AgentTask>,
    /// Keys the format does not read, each once, at its first line.
    pub unknown_keys: Vec<UnknownKey>,
    pub more_unknown_keys: bool,
}

/// What a file that passed holds: the plan prints its warnings from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTraceSummary {
    pub tasks: u64,
    pub calls: u64,
    /// Calls with two parents or more.
    pub joins: u64,
    /// Calls with two children or more.
    pub fan_outs: u64,
    /// The most calls on one chain of one task.
    pub longest_chain: u64,
    pub text_prompts: u64,
    pub tasks_with_deadline: u64,
    /// `usable` is the calls; the unknown keys, for the plan's warnings
    /// (the same shape a trace's check returns).
    pub keys: InputSummary,
}

impl AgentTrace {
    /// Read and check `path` in `format`.
    pub fn read(path: &Path, format: AgentTraceFormat) -> Result<AgentTrace, FileProblem> {
        AgentTrace::read_from(open(path)?, format)
    }

    /// Read and check an agent trace from `reader`.
    pub fn read_from(reader: impl BufRead, format: AgentTraceFormat) -> Result<AgentTrace, FileProblem> {
        let mut keys = KeyLog::default();
        let mut raws = Vec::new();
        let mut seen = Seen::default();
        for (n, text) in reader.lines().enumerate() {
            let number = n as u64 + 1;
            let text = text.map_err(|e| FileProblem {
                line: Some(number),
                column: None,
                message: format!("cannot be read as text: {e}"),
            })?;
            if text.trim().is_empty() {
                continue;
            }
            let at = |problem: LineProblem| at_line(number, problem);
            let mut raw = match format {
                AgentTraceFormat::Jsonl => parse_jsonl(&text),
                AgentTraceFormat::AgenticMooncake => parse_agentic_mooncake(&text),
            }
            .map_err(at)?;
            raw.line = number;
            seen.admit(&raw, format).map_err(at)?;
            for key in line_keys(&text).map_err(|e| at(LineProblem::from_json(&e)))? {
                keys.see(key, number, format.known_keys());
            }
            raws.push(raw);
        }
        if raws.is_empty() {
            return Err(FileProblem {
                line: None,
                column: None,
                message: "holds no call (no non-empty line)".into(),
            });
        }
        if format == AgentTraceFormat::AgenticMooncake {
            group_by_dependency(&mut raws)?;
        }
        let tasks = build_tasks(raws, format)?;
        Ok(AgentTrace { format, tasks, unknown_keys: keys.first, more_unknown_keys: keys.more })
    }

    pub fn summary(&self) -> AgentTraceSummary {
        let calls = self.tasks.iter().map(|t| t.calls.len() as u64).sum();
        let count = |f: &dyn Fn(&AgentTask) -> u64| self.tasks.iter().map(f).sum::<u64>();
        AgentTraceSummary {
            tasks: self.tasks.len() as u64,
            calls,
            joins: count(&|t| t.calls.iter().filter(|c| c.parents.len() > 1).count() as u64),
            fan_outs: count(&|t| t.children.iter().filter(|c| c.len() > 1).count() as u64),
            longest_chain: self.tasks.iter().map(AgentTask::longest_chain).max().unwrap_or(0),
            text_prompts: count(&|t| {
                t.calls.iter().filter(|c| matches!(c.prompt, CallPrompt::Text(_))).count() as u64
            }),
            tasks_with_deadline: self.tasks.iter().filter(|t| t.deadline_ms.is_some()).count() as u64,
            keys: InputSummary {
                usable: calls,
                skipped: 0,
                unknown_keys: self.unknown_keys.clone(),
                more_unknown_keys: self.more_unknown_keys,
            },
        }
    }
}

/// The plan-time check: read `path` as the replay will and say what it
/// holds, or the first problem, at its line (the caller names the file).
pub fn check_file(path: &Path, format: AgentTraceFormat) -> Result<AgentTraceSummary, FileProblem> {
    AgentTrace::read(path, format).map(|trace| trace.summary())
}

fn at_line(line: u64, problem: LineProblem) -> FileProblem {
    FileProblem { line: Some(line), column: problem.column, message: problem.message }
}

fn problem(message: impl Into<String>) -> LineProblem {
    LineProblem { column: None, message: message.into() }
}

// ---------------------------------------------------------------------------
// One line

/// A line as read, before its task is assembled.
#[derive(Debug)]
struct Raw {
    line: u64,
    /// anvil's layout: the line's `task`; Agentic Mooncake: filled in once
    /// the rows are grouped by `wait_for`.
    task: String,
    id: String,
    parents: Vec<String>,
    inherit: Option<String>,
    delay_ms: f64,
    /// Agentic Mooncake: the row's `timestamp` (a root starts then).
    at_ms: Option<f64>,
    /// Agentic Mooncake: its `session_id`, to name its task.
    session: Option<String>,
    prompt: CallPrompt,
    output_tokens: Option<u64>,
    deadline_ms: Option<f64>,
    arrival_ms: Option<f64>,
}

#[derive(Deserialize)]
struct JsonlCall<'a> {
    task: Value,
    call: Value,
    #[serde(default)]
    parents: Option<Vec<Value>>,
    #[serde(default)]
    delay_ms: Option<f64>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    hash_ids: Option<Vec<u64>>,
    #[serde(default)]
    inherit: Option<Value>,
    #[serde(default, borrow)]
    prompt: Option<Cow<'a, str>>,
    output_tokens: u64,
    #[serde(default)]
    deadline_ms: Option<f64>,
    #[serde(default)]
    arrival_ms: Option<f64>,
}

#[derive(Deserialize)]
struct AgenticMooncakeRow {
    request_id: Value,
    #[serde(default)]
    session_id: Option<Value>,
    #[serde(default)]
    input_length: Option<u64>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_length: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    hash_ids: Option<Vec<u64>>,
    #[serde(default)]
    timestamp: Option<f64>,
    #[serde(default)]
    created_time: Option<f64>,
    #[serde(default)]
    delay: Option<f64>,
    #[serde(default)]
    delay_ms: Option<f64>,
    #[serde(default)]
    wait_for: Option<Vec<Value>>,
    #[serde(default)]
    tool_wait_ms: Option<f64>,
}

/// An id: a string, or a number written as its decimal text (so `7` and
/// `"7"` are the same id).
fn id(what: &str, value: &Value) -> Result<String, LineProblem> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(problem(format!("`{what}`: an id must be a string or a number, found {other}"))),
    }
}

/// A list of ids, none twice.
fn ids(what: &str, values: Option<Vec<Value>>) -> Result<Vec<String>, LineProblem> {
    let mut out: Vec<String> = Vec::new();
    for value in values.unwrap_or_default() {
        let name = id(what, &value)?;
        if out.contains(&name) {
            return Err(problem(format!("`{what}` names `{name}` twice")));
        }
        out.push(name);
    }
    Ok(out)
}

fn exclusive(a: &str, b: &str, why: &str) -> LineProblem {
    problem(format!("holds both `{a}` and `{b}`, which exclude each other: {why}"))
}

/// One of two keys that name the same value.
fn either<T>(a: (&str, Option<T>), b: (&str, Option<T>)) -> Result<Option<T>, LineProblem> {
    match (a.1, b.1) {
        (Some(_), Some(_)) => Err(exclusive(a.0, b.0, "they are two names of the same value")),
        (x, y) => Ok(x.or(y)),
    }
}

/// A duration of milliseconds that may not be negative.
fn not_negative(what: &str, ms: Option<f64>, meaning: &str) -> Result<f64, LineProblem> {
    match ms {
        Some(ms) if ms < 0.0 => Err(problem(format!("`{what}` {ms} is negative: {meaning}, at least 0"))),
        Some(ms) => Ok(ms),
        None => Ok(0.0),
    }
}

/// A length the replay keeps in 32 bits: refused here, not mid-run.
fn length(what: &str, n: Option<u64>) -> Result<Option<u64>, LineProblem> {
    match n {
        Some(n) if n > u64::from(u32::MAX) => {
            Err(problem(format!("`{what}` {n} is too large (at most {})", u32::MAX)))
        }
        n => Ok(n),
    }
}

fn parse_jsonl(text: &str) -> Result<Raw, LineProblem> {
    let l: JsonlCall = serde_json::from_str(text).map_err(|e| LineProblem::from_json(&e))?;
    let task = id("task", &l.task)?;
    let call = id("call", &l.call)?;
    let parents = ids("parents", l.parents)?;
    let inherit = l.inherit.as_ref().map(|v| id("inherit", v)).transpose()?;
    // A prompt is generated (a length, blocks, a parent's blocks) or sent
    // as written: a line holding both would be a guess either way.
    const EITHER: &str = "a call's prompt is generated (a length, blocks) or sent as written, not both";
    let prompt = match l.prompt {
        Some(_) if l.input_tokens.is_some() => return Err(exclusive("input_tokens", "prompt", EITHER)),
        Some(_) if l.hash_ids.is_some() => return Err(exclusive("hash_ids", "prompt", EITHER)),
        Some(_) if inherit.is_some() => return Err(exclusive("inherit", "prompt", EITHER)),
        Some(text) => CallPrompt::Text(text.into_owned()),
        None if l.input_tokens.is_none() && l.hash_ids.is_none() && inherit.is_none() => {
            return Err(problem(
                "needs a prompt: `input_tokens`, `hash_ids` or `inherit` (generated), or `prompt` (text)",
            ));
        }
        None => CallPrompt::Blocks {
            input_tokens: length("input_tokens", l.input_tokens)?,
            blocks: l.hash_ids.unwrap_or_default(),
            inherited: None,
        },
    };
    let delay_ms = not_negative("delay_ms", l.delay_ms, "it is the wait after the parents' replies end, ms")?;
    if let Some(d) = l.deadline_ms
        && d <= 0.0
    {
        return Err(problem(format!("`deadline_ms` {d} must be above 0 (ms from the task's start)")));
    }
    if let Some(a) = l.arrival_ms {
        not_negative("arrival_ms", Some(a), "it is when the task arrives, ms")?;
    }
    Ok(Raw {
        line: 0,
        task,
        id: call,
        parents,
        inherit,
        delay_ms,
        at_ms: None,
        session: None,
        prompt,
        output_tokens: length("output_tokens", Some(l.output_tokens))?,
        deadline_ms: l.deadline_ms,
        arrival_ms: l.arrival_ms,
    })
}

fn parse_agentic_mooncake(text: &str) -> Result<Raw, LineProblem> {
    let r: AgenticMooncakeRow = serde_json::from_str(text).map_err(|e| LineProblem::from_json(&e))?;
    let request = id("request_id", &r.request_id)?;
    let session = r.session_id.as_ref().map(|v| id("session_id", v)).transpose()?;
    let parents = ids("wait_for", r.wait_for)?;
    let input_tokens = either(("input_length", r.input_length), ("input_tokens", r.input_tokens))?;
    let output_tokens = either(("output_length", r.output_length), ("output_tokens", r.output_tokens))?;
    let at_ms = either(("timestamp", r.timestamp), ("created_time", r.created_time))?;
    let delay = either(("delay", r.delay), ("delay_ms", r.delay_ms))?;
    if input_tokens.is_none() && r.hash_ids.is_none() {
        return Err(problem("needs `input_length` or `hash_ids`"));
    }
    if parents.is_empty() && at_ms.is_none() {
        return Err(problem("a row without `wait_for` needs a `timestamp` (when it starts)"));
    }
    let after = "it is a wait after the dependencies end, ms";
    let delay_ms =
        not_negative("delay", delay, after)? + not_negative("tool_wait_ms", r.tool_wait_ms, after)?;
    let at_ms =
        at_ms.map(|t| not_negative("timestamp", Some(t), "it is when the row starts, ms")).transpose()?;
    Ok(Raw {
        line: 0,
        task: String::new(),
        id: request,
        parents,
        inherit: None,
        delay_ms,
        at_ms,
        session,
        prompt: CallPrompt::Blocks {
            input_tokens: length("input_length", input_tokens)?,
            blocks: r.hash_ids.unwrap_or_default(),
            inherited: None,
        },
        output_tokens: length("output_length", output_tokens)?,
        deadline_ms: None,
        arrival_ms: None,
    })
}

/// What the lines read so far define: refuses a line that repeats an id
/// or gives its task a second deadline or arrival.
#[derive(Default)]
struct Seen {
    /// (task, call) → line; Agentic Mooncake: ("", request) → line.
    calls: HashMap<(String, String), u64>,
    /// Per task: its first line, deadline and arrival, each with the line
    /// that set it.
    tasks: HashMap<String, TaskFacts>,
}

#[derive(Clone, Copy)]
struct TaskFacts {
    deadline: Option<(f64, u64)>,
    arrival: Option<(f64, u64)>,
}

impl Seen {
    fn admit(&mut self, raw: &Raw, format: AgentTraceFormat) -> Result<(), LineProblem> {
        let key = (raw.task.clone(), raw.id.clone());
        if let Some(&first) = self.calls.get(&key) {
            return Err(problem(match format {
                AgentTraceFormat::Jsonl => format!(
                    "call `{}` of task `{}` is already defined at line {first}: a call's id is unique in its task",
                    raw.id, raw.task
                ),
                AgentTraceFormat::AgenticMooncake => {
                    format!("`request_id` `{}` is already used at line {first}", raw.id)
                }
            }));
        }
        self.calls.insert(key, raw.line);
        if format == AgentTraceFormat::AgenticMooncake {
            return Ok(());
        }
        let facts = self.tasks.entry(raw.task.clone()).or_insert(TaskFacts { deadline: None, arrival: None });
        for (what, slot, value) in [
            ("deadline_ms", &mut facts.deadline, raw.deadline_ms),
            ("arrival_ms", &mut facts.arrival, raw.arrival_ms),
        ] {
            match (*slot, value) {
                (Some((before, line)), Some(now)) if before != now => {
                    return Err(problem(format!(
                        "`{what}` {now} differs from line {line}'s {before} for task `{}`: a task has one",
                        raw.task
                    )));
                }
                (None, Some(now)) => *slot = Some((now, raw.line)),
                _ => {}
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Unknown keys

/// The keys of one line, in order (values skipped).
fn line_keys(text: &str) -> Result<Vec<String>, serde_json::Error> {
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                keys.push(key);
            }
            Ok(keys)
        }
    }
    serde::Deserializer::deserialize_map(&mut serde_json::Deserializer::from_str(text), Keys)
}

/// The unknown keys of one file, each once, at its first line.
#[derive(Default)]
struct KeyLog {
    first: Vec<UnknownKey>,
    more: bool,
}

impl KeyLog {
    fn see(&mut self, key: String, line: u64, known: &'static [&'static str]) {
        if known.contains(&key.as_str()) || self.first.iter().any(|k| k.key == key) {
            return;
        }
        if self.first.len() >= UNKNOWN_KEYS_NAMED {
            self.more = true;
            return;
        }
        let like = likely_typo(&key, known);
        self.first.push(UnknownKey { key, line, within: "a line", known, like });
    }
}

// ---------------------------------------------------------------------------
// Tasks

/// Agentic Mooncake: a task is a set of rows joined by `wait_for` (a
/// subagent's rows wait for its parent's, so they join the parent's task).
/// Each task is named after its first row's `session_id` (its `request_id`
/// when it has none or an earlier task took the name); its roots start at
/// their `timestamp`s, the earliest being the task's arrival.
fn group_by_dependency(raws: &mut [Raw]) -> Result<(), FileProblem> {
    let index: HashMap<&str, usize> = raws.iter().enumerate().map(|(i, r)| (r.id.as_str(), i)).collect();
    let mut leader: Vec<usize> = (0..raws.len()).collect();
    fn find(leader: &mut [usize], mut i: usize) -> usize {
        while leader[i] != i {
            leader[i] = leader[leader[i]];
            i = leader[i];
        }
        i
    }
    for (i, raw) in raws.iter().enumerate() {
        for parent in &raw.parents {
            let Some(&p) = index.get(parent.as_str()) else {
                return Err(at_line(
                    raw.line,
                    problem(format!("`wait_for` names `{parent}`, which no row of the file defines")),
                ));
            };
            let (a, b) = (find(&mut leader, i), find(&mut leader, p));
            // The earlier row leads, so a task's leader is its first row.
            leader[a.max(b)] = a.min(b);
        }
    }
    let mut names: HashMap<usize, String> = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    let mut arrival: HashMap<usize, f64> = HashMap::new();
    for (i, raw) in raws.iter().enumerate() {
        let lead = find(&mut leader, i);
        if lead == i {
            let name = match &raw.session {
                Some(s) if !taken.contains(s) => s.clone(),
                _ => raw.id.clone(),
            };
            taken.insert(name.clone());
            names.insert(i, name);
        }
        if raw.parents.is_empty() {
            let at = raw.at_ms.unwrap_or(0.0);
            arrival.entry(lead).and_modify(|a| *a = a.min(at)).or_insert(at);
        }
    }
    for (i, raw) in raws.iter_mut().enumerate() {
        let lead = find(&mut leader, i);
        raw.task = names[&lead].clone();
        // A dependency cycle has no root: its arrival is unknown, and the
        // task check refuses it anyway.
        let start = arrival.get(&lead).copied();
        raw.arrival_ms = start;
        if raw.parents.is_empty() {
            raw.delay_ms += raw.at_ms.unwrap_or(0.0) - start.unwrap_or(0.0);
        }
    }
    Ok(())
}

/// Group the lines into tasks (in the order of their first lines) and
/// check each one's graph; the problem at the earliest line if any.
fn build_tasks(raws: Vec<Raw>, format: AgentTraceFormat) -> Result<Vec<AgentTask>, FileProblem> {
    let mut order: HashMap<String, usize> = HashMap::new();
    let mut grouped: Vec<Vec<Raw>> = Vec::new();
    for raw in raws {
        let slot = *order.entry(raw.task.clone()).or_insert_with(|| {
            grouped.push(Vec::new());
            grouped.len() - 1
        });
        grouped[slot].push(raw);
    }
    let mut tasks = Vec::with_capacity(grouped.len());
    let mut first_problem: Option<FileProblem> = None;
    for calls in grouped {
        match build_task(calls, format) {
            Ok(task) => tasks.push(task),
            Err(p) => {
                if first_problem.as_ref().is_none_or(|f| p.line < f.line) {
                    first_problem = Some(p);
                }
            }
        }
    }
    match first_problem {
        Some(p) => Err(p),
        None => Ok(tasks),
    }
}

/// The earliest of `problems` (by line), if any.
fn earliest(problems: Vec<FileProblem>) -> Result<(), FileProblem> {
    match problems.into_iter().min_by_key(|p| p.line) {
        Some(p) => Err(p),
        None => Ok(()),
    }
}

/// One task's calls, in file order: parents named, known, earlier, and no
/// cycle; then the blocks each prompt inherits resolved.
fn build_task(raws: Vec<Raw>, format: AgentTraceFormat) -> Result<AgentTask, FileProblem> {
    let key = format.parents_key();
    let task_id = raws[0].task.clone();
    let index: HashMap<&str, u32> = raws.iter().enumerate().map(|(i, r)| (r.id.as_str(), i as u32)).collect();
    let parents = parent_places(&raws, &index, key, &task_id)?;
    // Cycles, before order: a cycle breaks the order rule too, and says more.
    no_cycle(&raws, &parents)?;
    parents_come_first(&raws, &parents, key)?;
    let inherits = inherited_calls(&raws, &index, &parents, &task_id)?;
    // Resolve the inherited blocks (inherited calls are earlier, so resolved).
    let mut calls: Vec<AgentCall> = Vec::with_capacity(raws.len());
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); raws.len()];
    let (mut deadline_ms, mut arrival_ms) = (None, None);
    for (c, raw) in raws.into_iter().enumerate() {
        for &p in &parents[c] {
            children[p as usize].push(c as u32);
        }
        deadline_ms = deadline_ms.or(raw.deadline_ms);
        arrival_ms = arrival_ms.or(raw.arrival_ms);
        let prompt = match (raw.prompt, inherits[c]) {
            (CallPrompt::Blocks { input_tokens, blocks: own, .. }, Some(from)) => {
                let parent = &calls[from as usize];
                if let CallPrompt::Text(_) = parent.prompt {
                    return Err(at_line(
                        raw.line,
                        problem(format!(
                            "`inherit` names `{}`, whose prompt is text (line {}): only blocks are inherited",
                            parent.id, parent.line
                        )),
                    ));
                }
                let mut blocks = parent.prompt.blocks().to_vec();
                let count = blocks.len();
                blocks.extend(own);
                CallPrompt::Blocks { input_tokens, blocks, inherited: Some((from, count)) }
            }
            (prompt, _) => prompt,
        };
        calls.push(AgentCall {
            id: raw.id,
            line: raw.line,
            parents: parents[c].clone(),
            delay_ms: raw.delay_ms,
            prompt,
            output_tokens: raw.output_tokens,
        });
    }
    Ok(AgentTask { id: task_id, line: calls[0].line, arrival_ms, deadline_ms, calls, children })
}

/// Each call's parents as places in the task; every parent named must be
/// a call of the task (`key`: the format's name for the parents' field).
fn parent_places(
    raws: &[Raw],
    index: &HashMap<&str, u32>,
    key: &str,
    task_id: &str,
) -> Result<Vec<Vec<u32>>, FileProblem> {
    let unknown = raws.iter().flat_map(|raw| {
        raw.parents.iter().filter(|p| !index.contains_key(p.as_str())).map(|p| {
            at_line(
                raw.line,
                problem(format!("`{key}` names `{p}`, which no line of task `{task_id}` defines")),
            )
        })
    });
    earliest(unknown.collect())?;
    Ok(raws.iter().map(|r| r.parents.iter().map(|p| index[p.as_str()]).collect()).collect())
}

/// No call waits for itself through its parents: a cycle is named from
/// its earliest line, around and back.
fn no_cycle(raws: &[Raw], parents: &[Vec<u32>]) -> Result<(), FileProblem> {
    let Some(cycle) = find_cycle(parents) else { return Ok(()) };
    let first = *cycle.iter().min_by_key(|&&c| raws[c as usize].line).expect("a cycle has a call");
    let at = cycle.iter().position(|&c| c == first).expect("it is on the cycle");
    let around: Vec<u32> = cycle[at..].iter().chain(&cycle[..at]).copied().collect();
    let names: Vec<&str> = around.iter().chain([&first]).map(|&c| raws[c as usize].id.as_str()).collect();
    let lines: Vec<String> = around.iter().map(|&c| raws[c as usize].line.to_string()).collect();
    Err(at_line(
        raws[first as usize].line,
        problem(format!(
            "call `{}` waits for itself: {} (lines {}); a task's calls form a graph without cycles",
            names[0],
            names.join(" → "),
            lines.join(", ")
        )),
    ))
}

/// Every parent on an earlier line than its call.
fn parents_come_first(raws: &[Raw], parents: &[Vec<u32>], key: &str) -> Result<(), FileProblem> {
    let late = raws.iter().enumerate().flat_map(|(c, raw)| {
        parents[c].iter().filter(move |&&p| p as usize > c).map(move |&p| {
            at_line(
                raw.line,
                problem(format!(
                    "`{key}` names `{}`, which is defined later (line {}): a call's parents come before it in the file",
                    raws[p as usize].id, raws[p as usize].line
                )),
            )
        })
    });
    earliest(late.collect())
}

/// The call whose prompt each call inherits, if any: one it waits for,
/// directly or not (its reply has ended, so its prompt is in the cache for sure).
fn inherited_calls(
    raws: &[Raw],
    index: &HashMap<&str, u32>,
    parents: &[Vec<u32>],
    task_id: &str,
) -> Result<Vec<Option<u32>>, FileProblem> {
    let mut walk = AncestorWalk::new(raws.len());
    let mut inherits: Vec<Option<u32>> = Vec::with_capacity(raws.len());
    for (c, raw) in raws.iter().enumerate() {
        let Some(from) = &raw.inherit else {
            inherits.push(None);
            continue;
        };
        let Some(&a) = index.get(from.as_str()) else {
            let says = format!("`inherit` names `{from}`, which no line of task `{task_id}` defines");
            return Err(at_line(raw.line, problem(says)));
        };
        if !walk.of(c as u32, |p| &parents[p as usize]).contains(&a) {
            return Err(at_line(
                raw.line,
                problem(format!(
                    "`inherit` names `{from}`, which it does not wait for: a call inherits the prompt of a call \
                     among its `parents` or theirs"
                )),
            ));
        }
        inherits.push(Some(a));
    }
    Ok(inherits)
}

/// The calls one call waits for, directly or not, found by walking
/// parents; the marks are reused from call to call.
struct AncestorWalk {
    marks: Vec<u32>,
    stamp: u32,
}

impl AncestorWalk {
    fn new(calls: usize) -> AncestorWalk {
        AncestorWalk { marks: vec![0; calls], stamp: 0 }
    }

    /// Each ancestor of `call` once, in no set order.
    fn of<'p>(&mut self, call: u32, parents: impl Fn(u32) -> &'p [u32]) -> Vec<u32> {
        self.stamp += 1;
        let mut found = Vec::new();
        let mut stack = vec![call];
        while let Some(c) = stack.pop() {
            for &p in parents(c) {
                if self.marks[p as usize] != self.stamp {
                    self.marks[p as usize] = self.stamp;
                    found.push(p);
                    stack.push(p);
                }
            }
        }
        found
    }
}

/// A cycle of `parents` (calls in the order each waits for the next), if
/// there is one. Kahn's walk removes every call whose parents are all
/// removed; each call left waits for another call left, so following
/// parents among them from any one must come round.
fn find_cycle(parents: &[Vec<u32>]) -> Option<Vec<u32>> {
    let n = parents.len();
    let mut waiting: Vec<usize> = parents.iter().map(Vec::len).collect();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (c, ps) in parents.iter().enumerate() {
        for &p in ps {
            children[p as usize].push(c as u32);
        }
    }
    let mut ready: Vec<u32> = (0..n as u32).filter(|&c| waiting[c as usize] == 0).collect();
    let mut removed = vec![false; n];
    while let Some(c) = ready.pop() {
        removed[c as usize] = true;
        for &child in &children[c as usize] {
            waiting[child as usize] -= 1;
            if waiting[child as usize] == 0 {
                ready.push(child);
            }
        }
    }
    let start = (0..n).find(|&c| !removed[c])?;
    let mut path: Vec<u32> = Vec::new();
    let mut at = start as u32;
    loop {
        if let Some(k) = path.iter().position(|&c| c == at) {
            return Some(path.split_off(k));
        }
        path.push(at);
        at = *parents[at as usize]
            .iter()
            .find(|&&p| !removed[p as usize])
            .expect("a call left waits for one left");
    }
}

#[cfg(test)]
#[path = "agent_trace_tests.rs"]
mod tests;
