//! What every importer hands back: one peer result read into anvil's
//! terms, before it becomes an artifact. The importers fill it from the
//! file; `artifact` derives the rest with anvil's own definitions.

use anvil_words::words;
use serde::Serialize;
use serde_json::{Map, Value};

words! {
    #[serde]
    /// The peer tools anvil reads, by the name `--from` takes and the artifact records.
    pub enum Tool { VllmBench = "vllm-bench", Aiperf = "aiperf", Guidellm = "guidellm" }
}

impl Tool {
    /// The tool as its users call it.
    pub fn title(self) -> &'static str {
        match self {
            Tool::VllmBench => "vLLM bench serve",
            Tool::Aiperf => "AIPerf",
            Tool::Guidellm => "guidellm",
        }
    }
}

/// A file the import read, named and hashed (the fingerprint covers it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceFile {
    pub name: String,
    pub blake3: String,
}

/// An anvil field the file could not fill, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unfilled {
    pub field: String,
    pub why: String,
}

/// One summary value the tool printed into its file, next to the same
/// statistic re-computed from the file's per-request data with the tool's
/// own definition (its percentile method, its per-request formula).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// anvil's word for the metric (TTFT, TPOT, ITL, E2E).
    pub metric: String,
    /// Where the tool printed it (`p99_ttft_ms`, `time_to_first_token.p99`).
    pub printed_at: String,
    /// `mean`, `median`, `std`, `p99`, ….
    pub stat: String,
    pub unit: String,
    pub printed: f64,
    /// `None`: the per-request data holds no value to compute it from.
    pub rederived: Option<f64>,
}

/// Relative tolerance of a re-derived value: the tools write full doubles,
/// so only summation order and unit scaling separate the two.
const CHECK_TOLERANCE: f64 = 1e-9;

impl Check {
    pub fn matches(&self) -> bool {
        self.rederived.is_some_and(|d| {
            (d - self.printed).abs() <= CHECK_TOLERANCE * d.abs().max(self.printed.abs()) + 1e-12
        })
    }
}

/// One peer result in anvil's terms.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Imported {
    pub tool: Tool,
    /// The tool's version as the file records it.
    pub version: Option<String>,
    /// Why there is no version, when there is none.
    pub version_note: Option<String>,
    /// The files read, the main one first (AIPerf: its summary, then its records).
    pub files: Vec<SourceFile>,
    /// Which result of a file that holds several (a guidellm sweep, vLLM's
    /// `--append-result` lines); `None` for a file of one.
    pub part: Option<usize>,
    /// One per request, failed ones included, in send order: anvil's field
    /// names and units, raw moments only; a key is absent where the file
    /// has no value (never 0).
    pub records: Vec<Map<String, Value>>,
    /// The workload facts the file records, as benchmark/v1 top-level keys
    /// (`model`, `api`, `concurrency`, `arrival`, `context_tokens`, …).
    pub workload: Map<String, Value>,
    pub unfilled: Vec<Unfilled>,
    pub checks: Vec<Check>,
    /// What the importer had to assume or leave out, in words.
    pub notes: Vec<String>,
}

impl Imported {
    pub fn new(tool: Tool, files: Vec<SourceFile>) -> Imported {
        Imported {
            tool,
            version: None,
            version_note: None,
            files,
            part: None,
            records: Vec::new(),
            workload: Map::new(),
            unfilled: Vec::new(),
            checks: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn unfilled(&mut self, field: &str, why: impl Into<String>) {
        self.unfilled.push(Unfilled { field: field.to_string(), why: why.into() });
    }

    /// Sets workload fact `field` when the file has it; else says why not.
    pub fn workload_or_unfilled(&mut self, field: &str, value: Option<impl Into<Value>>, why: &str) {
        match value {
            Some(value) => {
                self.workload.insert(field.to_string(), value.into());
            }
            None => self.unfilled(field, why),
        }
    }

    /// Failed requests: those whose record says they are not eligible.
    pub fn failed(&self) -> usize {
        self.records.iter().filter(|r| r.get("performance_eligible") == Some(&Value::Bool(false))).count()
    }
}

/// Puts `key` into a record only when there is a value.
pub fn put(record: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        record.insert(key.to_string(), value.into());
    }
}

/// A failed request's record: not eligible, with the tool's reason.
pub fn fail(record: &mut Map<String, Value>, detail: &str) {
    // The tools' reasons can be whole tracebacks: the last line says what happened.
    let last = detail.trim().lines().last().unwrap_or("").trim();
    let detail: String = last.chars().take(300).collect();
    record.insert("performance_eligible".into(), Value::Bool(false));
    record.insert("failure".into(), serde_json::json!({"class": "peer_reported", "detail": detail}));
}

/// A successful request's record: eligible, no failure.
pub fn succeed(record: &mut Map<String, Value>) {
    record.insert("performance_eligible".into(), Value::Bool(true));
    record.insert("failure".into(), Value::Null);
}

/// Gaps in ms as anvil stores them: whole µs.
pub fn gaps_us(gaps_ms: impl IntoIterator<Item = f64>) -> Value {
    Value::from(gaps_ms.into_iter().map(|ms| (ms * 1000.0).round().max(0.0) as u32).collect::<Vec<u32>>())
}
