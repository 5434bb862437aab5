//! One line of a trace file, read and checked on its own: what the replay
//! loads and what the recipe's input check reads through before anything
//! runs, so both refuse the same lines with the same words.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::workload::traffic::TraceFormat;

/// What is wrong with one line: the column where it is (1-based, when the
/// JSON reader knows it) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProblem {
    pub column: Option<u64>,
    pub message: String,
}

impl LineProblem {
    fn new(message: impl Into<String>) -> LineProblem {
        LineProblem { column: None, message: message.into() }
    }

    /// A JSON reader's error, without the "at line 1 column N" it appends
    /// (the caller knows the file's line; the column is kept apart).
    pub(crate) fn from_json(err: &serde_json::Error) -> LineProblem {
        let text = err.to_string();
        let suffix = format!(" at line {} column {}", err.line(), err.column());
        let message = text.strip_suffix(&suffix).unwrap_or(&text).to_string();
        LineProblem { column: Some(err.column() as u64), message }
    }
}

/// What a line asks for its prompt: a length, or its own text.
pub(crate) enum Prompt<'a> {
    Tokens(u64),
    Text(Cow<'a, str>),
}

/// One line as read, before it is placed in the replay.
pub(crate) struct TraceLine<'a> {
    pub at_ms: f64,
    pub prompt: Prompt<'a>,
    pub output_tokens: u64,
    pub hash_ids: Vec<u64>,
    pub session: Option<Value>,
    /// A shared-prefix id (jsonl) and its length in tokens, when given.
    pub prefix: Option<(Value, Option<u64>)>,
}

#[derive(Deserialize)]
struct MooncakeLine<'a> {
    timestamp: f64,
    #[serde(default)]
    input_length: Option<u64>,
    #[serde(default)]
    output_length: Option<u64>,
    #[serde(default)]
    hash_ids: Vec<u64>,
    #[serde(default, borrow)]
    text_input: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct JsonlLine<'a> {
    timestamp_ms: f64,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default, borrow)]
    prompt: Option<Cow<'a, str>>,
    output_tokens: u64,
    #[serde(default)]
    session: Option<Value>,
    #[serde(default)]
    prefix: Option<Value>,
    #[serde(default)]
    prefix_tokens: Option<u64>,
}

/// The keys a line of each format reads (docs/workloads.md). Any other key
/// is ignored; the input check warns about it (a typo of one of these).
pub(crate) const MOONCAKE_KEYS: &[&str] =
    &["timestamp", "input_length", "output_length", "hash_ids", "text_input"];
pub(crate) const JSONL_KEYS: &[&str] =
    &["timestamp_ms", "input_tokens", "prompt", "output_tokens", "session", "prefix", "prefix_tokens"];

/// The keys a line of `format` reads.
pub(crate) fn known_keys(format: TraceFormat) -> &'static [&'static str] {
    match format {
        TraceFormat::Mooncake => MOONCAKE_KEYS,
        TraceFormat::Jsonl => JSONL_KEYS,
    }
}

/// A line holding two keys that exclude each other (a `null` value counts
/// as absent, as it reads).
fn exclusive(a: &str, b: &str, why: &str) -> LineProblem {
    LineProblem::new(format!("holds both `{a}` and `{b}`, which exclude each other: {why}"))
}

/// Read one non-empty line of a trace in `format`.
pub(crate) fn parse(format: TraceFormat, text: &str) -> Result<TraceLine<'_>, LineProblem> {
    let line = match format {
        TraceFormat::Mooncake => {
            let l: MooncakeLine = serde_json::from_str(text).map_err(|e| LineProblem::from_json(&e))?;
            // A line is built from its length and ids, or sent as its text:
            // one holding both would be a guess either way.
            const EITHER: &str =
                "a line is built from `input_length` and its `hash_ids`, or sent as its `text_input`";
            let prompt = match (l.input_length, l.text_input) {
                (Some(_), Some(_)) => return Err(exclusive("input_length", "text_input", EITHER)),
                (None, Some(_)) if !l.hash_ids.is_empty() => {
                    return Err(exclusive("hash_ids", "text_input", EITHER));
                }
                (None, Some(t)) => Prompt::Text(t),
                (Some(n), None) => Prompt::Tokens(n),
                (None, None) => return Err(LineProblem::new("needs `input_length` or `text_input`")),
            };
            TraceLine {
                at_ms: l.timestamp,
                prompt,
                output_tokens: l.output_length.unwrap_or(0),
                hash_ids: l.hash_ids,
                session: None,
                prefix: None,
            }
        }
        TraceFormat::Jsonl => {
            let l: JsonlLine = serde_json::from_str(text).map_err(|e| LineProblem::from_json(&e))?;
            // A prompt is generated to a length (a shared prefix first) or
            // given as text: one holding both would be a guess either way.
            const PREFIXED: &str =
                "a shared prefix begins a generated prompt (`input_tokens`); a `prompt` is sent as written";
            let prompt = match (l.input_tokens, l.prompt) {
                (Some(_), Some(_)) => {
                    return Err(exclusive(
                        "input_tokens",
                        "prompt",
                        "a line's prompt is one of the two, a length to generate or the text to send",
                    ));
                }
                (None, Some(_)) if l.prefix.is_some() => return Err(exclusive("prefix", "prompt", PREFIXED)),
                (None, Some(_)) if l.prefix_tokens.is_some() => {
                    return Err(exclusive("prefix_tokens", "prompt", PREFIXED));
                }
                (None, Some(t)) => Prompt::Text(t),
                (Some(n), None) => Prompt::Tokens(n),
                (None, None) => return Err(LineProblem::new("needs `input_tokens` or `prompt`")),
            };
            for (what, id) in [("session", &l.session), ("prefix", &l.prefix)] {
                if let Some(id) = id
                    && !matches!(id, Value::String(_) | Value::Number(_))
                {
                    return Err(LineProblem::new(format!(
                        "{what}: an id must be a string or a number, found {id}"
                    )));
                }
            }
            TraceLine {
                at_ms: l.timestamp_ms,
                prompt,
                output_tokens: l.output_tokens,
                hash_ids: Vec::new(),
                session: l.session,
                prefix: l.prefix.map(|p| (p, l.prefix_tokens)),
            }
        }
    };
    if !(line.at_ms.is_finite() && line.at_ms >= 0.0) {
        return Err(LineProblem::new("the timestamp must be a non-negative number of milliseconds"));
    }
    // The replay keeps lengths in 32 bits: refused here, not mid-run.
    let lengths = [
        ("input tokens", if let Prompt::Tokens(n) = line.prompt { n } else { 0 }),
        ("output tokens", line.output_tokens),
        ("prefix_tokens", line.prefix.as_ref().and_then(|p| p.1).unwrap_or(0)),
    ];
    for (what, n) in lengths {
        if n > u64::from(u32::MAX) {
            return Err(LineProblem::new(format!("{what} {n} is too large (at most {})", u32::MAX)));
        }
    }
    Ok(line)
}

/// The order rule: a line is never earlier than the line before it
/// (`previous`: that line's number and time), since requests are sent in
/// the file's order.
pub(crate) fn check_order(at_ms: f64, previous: Option<(u64, f64)>) -> Result<(), LineProblem> {
    match previous {
        Some((line, before)) if at_ms < before => Err(LineProblem::new(format!(
            "timestamp {at_ms} is before line {line}'s ({before}): the trace must be sorted by time"
        ))),
        _ => Ok(()),
    }
}
