//! Where a workload's requests come from, when not synthetic prompts:
//! `trace "FILE" format=…`, `dataset "FILE" format=…`, or
//! `sessions N turns=… think-time=… { turn "…" }`, or
//! `agents "FILE" format=…` (docs/workloads.md).

use std::time::Duration;

use serde_json::{Map, Value};

use super::super::super::problem::Problems;
use super::super::super::settings::Draft;

/// `trace` formats.
pub const TRACE_FORMATS: &[&str] = anvil_loadgen::TraceFormat::WORDS;
/// `dataset` formats.
pub const DATASET_FORMATS: &[&str] = anvil_loadgen::DatasetFormat::WORDS;
/// `agents` formats.
pub const AGENT_FORMATS: &[&str] = anvil_loadgen::AgentTraceFormat::WORDS;
/// Tokens per hash id when a trace does not say (Mooncake's).
pub const DEFAULT_BLOCK_TOKENS: u64 = 512;

const TRACE_KEYS: &[&str] = &[
    "value",
    "format",
    "block-tokens",
    "time-scale",
    "start",
    "duration",
    "max-requests",
    "loop",
    "ignore-eos",
];
const DATASET_KEYS: &[&str] = &["value", "format", "min-prompt-tokens", "max-prompt-tokens", "truncate"];
const SESSION_KEYS: &[&str] = &["value", "turns", "think-time", "turn"];
const AGENT_KEYS: &[&str] =
    &["value", "format", "block-tokens", "time-scale", "arrivals", "max-tasks", "ignore-eos", "deadline"];

#[derive(Debug, Clone, PartialEq)]
pub enum TrafficDecl {
    Synthetic,
    Trace(TraceDecl),
    Dataset(DatasetDecl),
    Sessions(SessionsDecl),
    Agents(AgentsDecl),
}

#[derive(Debug, Clone, PartialEq)]
pub struct TraceDecl {
    /// As written (relative to the recipe's folder).
    pub file: String,
    pub format: String,
    pub block_tokens: u64,
    pub time_scale: f64,
    pub start: Duration,
    pub duration: Option<Duration>,
    pub max_requests: Option<u64>,
    pub looped: bool,
    pub ignore_eos: bool,
}

impl TraceDecl {
    /// `format` (a checked word) as the load generator names it.
    pub fn format(&self) -> anvil_loadgen::TraceFormat {
        anvil_loadgen::TraceFormat::from_word(&self.format).unwrap_or(anvil_loadgen::TraceFormat::Mooncake)
    }
}

impl DatasetDecl {
    /// `format` (a checked word) as the load generator names it.
    pub fn format(&self) -> anvil_loadgen::DatasetFormat {
        anvil_loadgen::DatasetFormat::from_word(&self.format)
            .unwrap_or(anvil_loadgen::DatasetFormat::Sharegpt)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DatasetDecl {
    pub file: String,
    pub format: String,
    /// Token bounds on the prompts (the model's tokens: its server needs a `tokenizer`).
    pub min_prompt_tokens: Option<u64>,
    pub max_prompt_tokens: Option<u64>,
    /// Cut longer prompts to `max-prompt-tokens` instead of dropping them.
    pub truncate: bool,
}

/// `agents "FILE" format=… block-tokens=… time-scale=… arrivals="recorded"
/// max-tasks=… ignore-eos=… deadline="60s"`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentsDecl {
    pub file: String,
    pub format: String,
    pub block_tokens: u64,
    pub time_scale: f64,
    /// `arrivals="recorded"`: tasks start at their `arrival_ms` (else the
    /// cell's arrival: `concurrency` agents, or a rate of tasks per second).
    pub recorded_arrivals: bool,
    pub max_tasks: Option<u64>,
    pub ignore_eos: bool,
    /// A task's deadline where its trace names none.
    pub deadline: Option<Duration>,
}

impl AgentsDecl {
    /// `format` (a checked word) as the load generator names it.
    pub fn format(&self) -> anvil_loadgen::AgentTraceFormat {
        anvil_loadgen::AgentTraceFormat::from_word(&self.format)
            .unwrap_or(anvil_loadgen::AgentTraceFormat::Jsonl)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionsDecl {
    pub sessions: u64,
    pub turns: u64,
    pub think_time: Duration,
    pub turn_texts: Vec<String>,
}

/// The names of the settings read here, from `LoadDecl`'s declaration.
pub(super) struct Keys {
    pub trace: &'static str,
    pub dataset: &'static str,
    pub sessions: &'static str,
    pub agents: &'static str,
    pub stage: &'static str,
}

/// Reads one `Headed` setting's properties, reporting what is wrong at the setting.
struct Props<'a> {
    draft: &'a Draft,
    key: &'static str,
    map: &'a Map<String, Value>,
    problems: &'a mut Problems,
}

impl Props<'_> {
    fn bad(&mut self, message: String, help: &str) {
        let problem = self.draft.problem_at(self.key, message).label("invalid value");
        self.problems.push(if help.is_empty() { problem } else { problem.help(help) });
    }

    fn check_keys(&mut self, known: &[&str]) {
        let unknown: Vec<String> =
            self.map.keys().filter(|k| !known.contains(&k.as_str())).cloned().collect();
        for k in unknown {
            let list = known.iter().filter(|k| **k != "value").copied().collect::<Vec<_>>().join(", ");
            self.bad(format!("`{}` has no property `{k}`", self.key), &format!("it takes {list}"));
        }
    }

    fn file(&mut self) -> String {
        match self.map.get("value") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => {
                self.bad(
                    format!("`{}` takes a file path first", self.key),
                    "e.g. \"examples/traces/x.jsonl\"",
                );
                String::new()
            }
        }
    }

    fn word(&mut self, prop: &str, words: &[&str]) -> String {
        match self.map.get(prop).and_then(Value::as_str) {
            Some(w) if words.contains(&w) => w.to_string(),
            found => {
                let list = words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" or ");
                let found = found.map_or("nothing".to_string(), |w| format!("\"{w}\""));
                self.bad(format!("`{}` needs {prop}= {list}, found {found}", self.key), "");
                String::new()
            }
        }
    }

    fn int(&mut self, prop: &str) -> Option<u64> {
        let value = self.map.get(prop)?;
        let n = value.as_u64();
        if n.is_none() {
            self.bad(format!("`{} {prop}=` takes a whole number, found {value}", self.key), "");
        }
        n
    }

    fn number(&mut self, prop: &str) -> Option<f64> {
        let value = self.map.get(prop)?;
        let n = value.as_f64().filter(|v| v.is_finite() && *v > 0.0);
        if n.is_none() {
            self.bad(format!("`{} {prop}=` takes a positive number, found {value}", self.key), "");
        }
        n
    }

    fn flag(&mut self, prop: &str) -> Option<bool> {
        let value = self.map.get(prop)?;
        let b = value.as_bool();
        if b.is_none() {
            self.bad(format!("`{} {prop}=` takes #true or #false, found {value}", self.key), "");
        }
        b
    }

    fn duration(&mut self, prop: &str) -> Option<Duration> {
        let value = self.map.get(prop)?;
        match value.as_str().map(super::super::super::schema::parse_duration) {
            Some(Ok(d)) => Some(d),
            Some(Err(e)) => {
                self.bad(format!("`{} {prop}=`: {e}", self.key), "");
                None
            }
            None => {
                self.bad(
                    format!("`{} {prop}=` takes a duration such as \"30s\", found {value}", self.key),
                    "",
                );
                None
            }
        }
    }
}

/// The declaration's traffic and the files it reads (their content enters
/// the fingerprint; a bundle carries them).
pub(super) fn build(draft: &Draft, keys: &Keys, problems: &mut Problems) -> (TrafficDecl, Vec<String>) {
    let s = &draft.settings;
    let set: Vec<&'static str> = [keys.trace, keys.dataset, keys.sessions, keys.agents]
        .into_iter()
        .filter(|k| s.contains(k))
        .collect();
    if set.len() > 1 {
        problems.push(
            draft
                .problem_at(set[1], format!("{} sets both `{}` and `{}`", draft.what(), set[0], set[1]))
                .label("one source of requests")
                .help("a workload replays a trace, samples a dataset, runs sessions or replays agent runs: choose one"),
        );
    }
    let Some(&source) = set.first() else { return (TrafficDecl::Synthetic, Vec::new()) };
    if source != keys.dataset && s.contains(keys.stage) {
        problems.push(
            draft
                .problem_at(keys.stage, format!("{} sets both `{source}` and `stage`", draft.what()))
                .label("its own arrivals")
                .help("a trace, sessions or agent runs decide when each request is sent; stages apply to synthetic prompts and datasets"),
        );
    }
    let empty = Map::new();
    let map = s.get(source).and_then(Value::as_object).unwrap_or(&empty);
    let mut p = Props { draft, key: source, map, problems };
    match source {
        trace if trace == keys.trace => trace_decl(&mut p),
        dataset if dataset == keys.dataset => dataset_decl(&mut p),
        agents if agents == keys.agents => agents_decl(&mut p),
        _ => (sessions_decl(&mut p), Vec::new()),
    }
}

/// `trace "FILE" format=… …`: the trace and the file it reads.
fn trace_decl(p: &mut Props<'_>) -> (TrafficDecl, Vec<String>) {
    p.check_keys(TRACE_KEYS);
    let file = p.file();
    let decl = TraceDecl {
        format: p.word("format", TRACE_FORMATS),
        block_tokens: p.int("block-tokens").unwrap_or(DEFAULT_BLOCK_TOKENS),
        time_scale: p.number("time-scale").unwrap_or(1.0),
        start: p.duration("start").unwrap_or_default(),
        duration: p.duration("duration"),
        max_requests: p.int("max-requests"),
        looped: p.flag("loop").unwrap_or(false),
        ignore_eos: p.flag("ignore-eos").unwrap_or(true),
        file: file.clone(),
    };
    if decl.block_tokens == 0 {
        p.bad("`trace block-tokens=` must be at least 1".into(), "");
    }
    if decl.looped && decl.duration.is_none() && decl.max_requests.is_none() {
        p.bad(
            "a looping trace needs `duration=` or `max-requests=` to end".into(),
            "e.g. trace \"t.jsonl\" format=\"mooncake\" loop=#true duration=\"10m\"",
        );
    }
    (TrafficDecl::Trace(decl), vec![file])
}

/// `dataset "FILE" format=… …`: the dataset and the file it reads.
fn dataset_decl(p: &mut Props<'_>) -> (TrafficDecl, Vec<String>) {
    p.check_keys(DATASET_KEYS);
    let file = p.file();
    let format = p.word("format", DATASET_FORMATS);
    let decl = DatasetDecl {
        file: file.clone(),
        format,
        min_prompt_tokens: p.int("min-prompt-tokens"),
        max_prompt_tokens: p.int("max-prompt-tokens"),
        truncate: p.flag("truncate").unwrap_or(false),
    };
    if decl.truncate && decl.max_prompt_tokens.is_none() {
        p.bad(
            "`truncate=#true` cuts prompts to `max-prompt-tokens=`: set it".into(),
            "e.g. dataset \"d.json\" format=\"sharegpt\" max-prompt-tokens=1024 truncate=#true",
        );
    }
    if let (Some(min), Some(max)) = (decl.min_prompt_tokens, decl.max_prompt_tokens)
        && min > max
    {
        p.bad(format!("`min-prompt-tokens={min}` is above `max-prompt-tokens={max}`"), "");
    }
    (TrafficDecl::Dataset(decl), vec![file])
}

/// `agents "FILE" format=… …`: the agent runs and the file they come from.
fn agents_decl(p: &mut Props<'_>) -> (TrafficDecl, Vec<String>) {
    p.check_keys(AGENT_KEYS);
    let file = p.file();
    let recorded_arrivals = match p.map.get("arrivals") {
        None => false,
        Some(_) => p.word("arrivals", &["recorded", "cell"]) == "recorded",
    };
    let decl = AgentsDecl {
        format: p.word("format", AGENT_FORMATS),
        block_tokens: p.int("block-tokens").unwrap_or(DEFAULT_BLOCK_TOKENS),
        time_scale: p.number("time-scale").unwrap_or(1.0),
        recorded_arrivals,
        max_tasks: p.int("max-tasks"),
        ignore_eos: p.flag("ignore-eos").unwrap_or(true),
        deadline: p.duration("deadline"),
        file: file.clone(),
    };
    if decl.block_tokens == 0 {
        p.bad("`agents block-tokens=` must be at least 1".into(), "");
    }
    if decl.max_tasks == Some(0) {
        p.bad("`agents max-tasks=` must be at least 1".into(), "");
    }
    (TrafficDecl::Agents(decl), vec![file])
}

/// `sessions N turns=… think-time=… { turn "…" }`.
fn sessions_decl(p: &mut Props<'_>) -> TrafficDecl {
    p.check_keys(SESSION_KEYS);
    let sessions = match p.map.get("value").and_then(Value::as_u64) {
        Some(n) if n > 0 => n,
        _ => {
            p.bad(
                "`sessions` takes the number of sessions first, at least 1".into(),
                "e.g. sessions 8 turns=3",
            );
            1
        }
    };
    let turns = p.int("turns").unwrap_or(1).max(1);
    let think_time = p.duration("think-time").unwrap_or_default();
    let mut turn_texts = Vec::new();
    let given: Vec<Value> = p.map.get("turn").and_then(Value::as_array).cloned().unwrap_or_default();
    for t in &given {
        match t.as_str() {
            Some(text) => turn_texts.push(text.to_string()),
            None => p.bad(format!("`turn` takes the user's text as one string, found {t}"), ""),
        }
    }
    if turn_texts.len() as u64 > turns {
        p.bad(
            format!("`sessions` gives {} `turn` texts for {turns} turns", turn_texts.len()),
            "set turns= to at least the number of turn lines",
        );
    }
    TrafficDecl::Sessions(SessionsDecl { sessions, turns, think_time, turn_texts })
}
