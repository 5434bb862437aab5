//! A workload's input file read through once before anything runs: a trace
//! or a dataset that the replay would refuse is refused here, at the file's
//! line and column, while no server is up yet.
//!
//! Both checks stream: a trace line by line, a ShareGPT array item by item
//! (each conversation is read and dropped), so a large file costs a buffer,
//! not a second copy of itself.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Deserialize;
use serde::de::{DeserializeSeed, SeqAccess, Visitor};

use crate::workload::trace_line::{self, LineProblem};
use crate::workload::traffic::{DatasetFormat, TraceFormat};

/// Where in the file, and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    /// 1-based; `None` for a problem of the whole file (unreadable, empty).
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub message: String,
}

impl FileProblem {
    fn whole(message: impl Into<String>) -> FileProblem {
        FileProblem { line: None, column: None, message: message.into() }
    }

    fn at(line: u64, problem: LineProblem) -> FileProblem {
        FileProblem { line: Some(line), column: problem.column, message: problem.message }
    }

    /// "line 2, column 18" (or "line 2"), or `None` for the whole file.
    pub fn position(&self) -> Option<String> {
        let line = self.line?;
        Some(match self.column {
            Some(column) => format!("line {line}, column {column}"),
            None => format!("line {line}"),
        })
    }
}

impl fmt::Display for FileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position() {
            Some(at) => write!(f, "{at}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// What a file that passed holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputSummary {
    /// Trace lines, or a dataset's usable prompts.
    pub usable: u64,
    /// A dataset's conversations without a usable prompt (the replay skips them).
    pub skipped: u64,
}

/// Read buffer for a pass over a trace file: 64 KiB, not 1 MiB. A large
/// file touches all of a buffer (which the allocator then keeps resident)
/// where a small one touches a little: 1 MiB buffers made peak memory
/// grow with the file.
const READ_AHEAD: usize = 64 * 1024;

fn open(path: &Path) -> Result<BufReader<File>, FileProblem> {
    let file = File::open(path).map_err(|e| FileProblem::whole(format!("cannot be read: {e}")))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(FileProblem::whole("is a folder, not a file"));
    }
    Ok(BufReader::with_capacity(READ_AHEAD, file))
}

/// Read every line of a trace as the replay will: each must parse in
/// `format`, and no line may be earlier than the one before it.
pub fn check_trace(path: &Path, format: TraceFormat) -> Result<InputSummary, FileProblem> {
    check_trace_from(open(path)?, format)
}

/// The file's non-blank lines with their 1-based numbers; a line that is
/// not UTF-8 text ends it with a problem at that line.
fn non_blank_lines(reader: impl BufRead) -> impl Iterator<Item = Result<(u64, String), FileProblem>> {
    reader
        .lines()
        .enumerate()
        .map(|(n, text)| {
            let number = n as u64 + 1;
            text.map(|text| (number, text)).map_err(|e| FileProblem {
                line: Some(number),
                column: None,
                message: format!("cannot be read as text: {e}"),
            })
        })
        .filter(|line| line.as_ref().map_or(true, |(_, text)| !text.trim().is_empty()))
}

pub(crate) fn check_trace_from(
    reader: impl BufRead,
    format: TraceFormat,
) -> Result<InputSummary, FileProblem> {
    let mut previous: Option<(u64, f64)> = None;
    let mut usable = 0u64;
    for line in non_blank_lines(reader) {
        let (number, text) = line?;
        let line = trace_line::parse(format, &text).map_err(|p| FileProblem::at(number, p))?;
        trace_line::check_order(line.at_ms, previous).map_err(|p| FileProblem::at(number, p))?;
        previous = Some((number, line.at_ms));
        usable += 1;
    }
    if usable == 0 {
        return Err(FileProblem::whole("holds no request (no non-empty line)"));
    }
    Ok(InputSummary { usable, skipped: 0 })
}

/// Read a dataset through as the replay will, and count its usable prompts.
pub fn check_dataset(path: &Path, format: DatasetFormat) -> Result<InputSummary, FileProblem> {
    check_dataset_from(open(path)?, format)
}

pub(crate) fn check_dataset_from(
    reader: impl BufRead,
    format: DatasetFormat,
) -> Result<InputSummary, FileProblem> {
    let summary = match format {
        DatasetFormat::Jsonl => check_jsonl_dataset(reader)?,
        DatasetFormat::Sharegpt => check_sharegpt(reader)?,
    };
    if summary.usable == 0 {
        return Err(FileProblem::whole(match summary.skipped {
            0 => "holds no prompt".to_string(),
            n => format!("holds no usable prompt ({n} conversations without a non-empty first human turn)"),
        }));
    }
    Ok(summary)
}

#[derive(Deserialize)]
struct JsonlItem {
    #[allow(dead_code)] // read to check it is a string
    prompt: String,
    #[serde(default)]
    #[allow(dead_code)]
    output_tokens: Option<u32>,
}

fn check_jsonl_dataset(reader: impl BufRead) -> Result<InputSummary, FileProblem> {
    let mut usable = 0;
    for line in non_blank_lines(reader) {
        let (number, text) = line?;
        serde_json::from_str::<JsonlItem>(&text)
            .map_err(|e| FileProblem::at(number, LineProblem::from_json(&e)))?;
        usable += 1;
    }
    Ok(InputSummary { usable, skipped: 0 })
}

#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    conversations: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    from: String,
    value: String,
}

/// Counts the array's usable conversations, dropping each once read.
struct CountConversations;

impl<'de> DeserializeSeed<'de> for CountConversations {
    type Value = InputSummary;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<InputSummary, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for CountConversations {
    type Value = InputSummary;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of conversations (ShareGPT)")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<InputSummary, A::Error> {
        let mut summary = InputSummary { usable: 0, skipped: 0 };
        while let Some(item) = seq.next_element::<Conversation>()? {
            // The replay's rule: the first human (or user) turn, not blank.
            let first = item.conversations.iter().find(|t| t.from == "human" || t.from == "user");
            match first {
                Some(turn) if !turn.value.trim().is_empty() => summary.usable += 1,
                _ => summary.skipped += 1,
            }
        }
        Ok(summary)
    }
}

fn check_sharegpt(reader: impl Read) -> Result<InputSummary, FileProblem> {
    // The replay reads the file as one string: bytes that are not UTF-8
    // anywhere, even in a field it ignores, fail it.
    let mut json = serde_json::Deserializer::from_reader(Utf8Checked { inner: reader, pending: Vec::new() });
    let at = |e: serde_json::Error| {
        let position = (e.line() > 0).then_some(e.line() as u64);
        FileProblem { line: position, ..FileProblem::at(0, LineProblem::from_json(&e)) }
    };
    let summary = CountConversations.deserialize(&mut json).map_err(at)?;
    json.end().map_err(at)?;
    Ok(summary)
}

/// A reader that fails at the first byte sequence that is not UTF-8.
struct Utf8Checked<R> {
    inner: R,
    /// The start of a character the last read cut (at most 3 bytes).
    pending: Vec<u8>,
}

impl<R: Read> Read for Utf8Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 {
            if !self.pending.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the file ends inside a UTF-8 character",
                ));
            }
            return Ok(0);
        }
        let mut seen = std::mem::take(&mut self.pending);
        seen.extend_from_slice(&buf[..n]);
        if let Err(e) = std::str::from_utf8(&seen) {
            if e.error_len().is_some() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the file is not UTF-8 text",
                ));
            }
            self.pending = seen[e.valid_up_to()..].to_vec();
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(text: &str, format: TraceFormat) -> Result<InputSummary, FileProblem> {
        check_trace_from(text.as_bytes(), format)
    }

    fn dataset(text: &str, format: DatasetFormat) -> Result<InputSummary, FileProblem> {
        check_dataset_from(text.as_bytes(), format)
    }

    #[test]
    fn a_bad_trace_line_is_named_with_its_column() {
        let text = "{\"timestamp\": 0, \"input_length\": 3}\n{\"timestamp\": 5, \"input_length\": \"x\"}\n";
        let problem = trace(text, TraceFormat::Mooncake).unwrap_err();
        assert_eq!(problem.line, Some(2));
        assert_eq!(problem.column, Some(36), "{problem}"); // the end of the bad value, as serde_json counts
        assert!(problem.message.starts_with("invalid type: string \"x\""), "{problem}");
    }

    #[test]
    fn time_going_backwards_is_refused_at_the_line() {
        let text = "{\"timestamp\": 0, \"input_length\": 3}\n{\"timestamp\": 9, \"input_length\": 3}\n\n{\"timestamp\": 4, \"input_length\": 3}\n";
        let problem = trace(text, TraceFormat::Mooncake).unwrap_err();
        assert_eq!(problem.line, Some(4));
        assert!(problem.message.contains("before line 2's (9)"), "{problem}");
        let ok = "{\"timestamp\": 0, \"input_length\": 3}\n{\"timestamp\": 0, \"input_length\": 3}\n";
        assert_eq!(trace(ok, TraceFormat::Mooncake).unwrap().usable, 2, "equal times are in order");
    }

    #[test]
    fn an_empty_trace_or_dataset_is_a_whole_file_problem() {
        assert_eq!(trace("\n\n", TraceFormat::Jsonl).unwrap_err().line, None);
        assert!(dataset("[]", DatasetFormat::Sharegpt).unwrap_err().message.contains("no prompt"));
        let blank = r#"[{"conversations": [{"from": "gpt", "value": "hi"}]}]"#;
        let problem = dataset(blank, DatasetFormat::Sharegpt).unwrap_err();
        assert!(problem.message.contains("no usable prompt (1 conversations"), "{problem}");
    }

    #[test]
    fn sharegpt_must_be_an_array_and_is_located_in_the_file() {
        let problem = dataset("{\"conversations\": []}", DatasetFormat::Sharegpt).unwrap_err();
        assert_eq!(problem.line, Some(1));
        assert!(problem.message.contains("expected a JSON array of conversations"), "{problem}");
        let text = "[\n {\"conversations\": [{\"from\": \"human\", \"value\": \"a\"}]},\n {\"conversations\": [{\"from\": \"human\", \"value\": 3}]}\n]";
        let problem = dataset(text, DatasetFormat::Sharegpt).unwrap_err();
        assert_eq!((problem.line, problem.column), (Some(3), Some(49)), "{problem}");
        let good =
            "[{\"conversations\": [{\"from\": \"human\", \"value\": \"a\"}]}, {\"conversations\": []}]";
        assert_eq!(dataset(good, DatasetFormat::Sharegpt).unwrap(), InputSummary { usable: 1, skipped: 1 });
        let trailing = "[] x";
        assert!(dataset(trailing, DatasetFormat::Sharegpt).unwrap_err().message.contains("trailing"));
    }

    #[test]
    fn a_jsonl_dataset_line_without_a_prompt_is_named() {
        let problem = dataset("{\"prompt\": \"a\"}\n{\"text\": \"b\"}\n", DatasetFormat::Jsonl).unwrap_err();
        assert_eq!(problem.line, Some(2));
        assert!(problem.message.contains("missing field `prompt`"), "{problem}");
    }
}
