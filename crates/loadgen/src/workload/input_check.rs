//! A workload's input file read through once before anything runs: a trace
//! or a dataset that the replay would refuse is refused here, at the file's
//! line and column, while no server is up yet.
//!
//! Both checks stream: a trace line by line, a ShareGPT array item by item
//! (each conversation is read and dropped), so a large file costs a buffer,
//! not a second copy of itself.
//!
//! A key the format does not read is not an error (real traces carry more
//! fields than a replay needs) but it may be a typo of one it does: each
//! such key is reported once per file, at the first line that holds it.

use std::cell::Cell;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSummary {
    /// Trace lines, or a dataset's usable prompts.
    pub usable: u64,
    /// A dataset's conversations without a usable prompt (the replay skips them).
    pub skipped: u64,
    /// Keys the format does not read (ignored), each once, in order of
    /// first appearance; at most [`UNKNOWN_KEYS_NAMED`].
    pub unknown_keys: Vec<UnknownKey>,
    /// More unknown keys than those were seen.
    pub more_unknown_keys: bool,
}

/// The most unknown keys of one file that are named: a file whose keys
/// are ids of their own would otherwise name every line.
pub const UNKNOWN_KEYS_NAMED: usize = 16;

/// A key a format does not read, where it first appears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    pub key: String,
    /// 1-based line of the file where it first appears.
    pub line: u64,
    /// What holds it ("a line", "a conversation", "a turn") and the keys
    /// the format reads there.
    pub within: &'static str,
    pub known: &'static [&'static str],
    /// The known key it is a likely typo of.
    pub like: Option<&'static str>,
}

impl fmt::Display for UnknownKey {
    /// "unknown key `promt`, ignored (did you mean `prompt`?)"
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key as written, control characters escaped and a long one cut.
        let mut shown: String = self.key.chars().take(64).flat_map(char::escape_debug).collect();
        if self.key.chars().nth(64).is_some() {
            shown.push('…');
        }
        write!(f, "unknown key `{shown}`, ignored ")?;
        match self.like {
            Some(like) => write!(f, "(did you mean `{like}`?)"),
            None => {
                let known: Vec<String> = self.known.iter().map(|k| format!("`{k}`")).collect();
                write!(f, "({} reads {})", self.within, known.join(", "))
            }
        }
    }
}

/// The known key `key` is a likely typo of: at most two edits away, and
/// fewer than a third of its characters.
pub(crate) fn likely_typo(key: &str, known: &'static [&'static str]) -> Option<&'static str> {
    if key.len() > 64 {
        return None;
    }
    let key: Vec<char> = key.chars().collect();
    known
        .iter()
        .map(|k| (edit_distance(&key, &k.chars().collect::<Vec<_>>()), *k))
        .filter(|(d, _)| *d <= 2 && d * 3 <= key.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance (insert, delete, replace), case-insensitive.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let same = |x: char, y: char| x.to_lowercase().eq(y.to_lowercase());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let replaced = diagonal + usize::from(!same(x, y));
            diagonal = row[j + 1];
            row[j + 1] = replaced.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// The unknown keys of one file, each once.
#[derive(Default)]
struct KeyLog {
    first: Vec<UnknownKey>,
    more: bool,
}

impl KeyLog {
    fn see(&mut self, key: &str, line: u64, within: &'static str, known: &'static [&'static str]) {
        if self.first.iter().any(|k| k.key == key && k.within == within) {
            return;
        }
        if self.first.len() >= UNKNOWN_KEYS_NAMED {
            self.more = true;
            return;
        }
        let like = likely_typo(key, known);
        self.first.push(UnknownKey { key: key.to_owned(), line, within, known, like });
    }

    fn summary(self, usable: u64, skipped: u64) -> InputSummary {
        InputSummary { usable, skipped, unknown_keys: self.first, more_unknown_keys: self.more }
    }
}

/// An object's key: the known one it is (`None` for another, which is
/// logged at the line the reader is on: `lines` read before it, plus one).
struct KeySeed<'k> {
    known: &'static [&'static str],
    within: &'static str,
    log: &'k mut KeyLog,
    lines: &'k Cell<u64>,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<&'static str>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<&'static str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        let found = self.known.iter().find(|k| **k == key).copied();
        if found.is_none() {
            self.log.see(key, self.lines.get() + 1, self.within, self.known);
        }
        Ok(found)
    }
}

/// Log the keys of one line that already parsed (an object), values skipped.
fn log_line_keys(
    text: &str,
    number: u64,
    known: &'static [&'static str],
    log: &mut KeyLog,
) -> Result<(), FileProblem> {
    struct LineKeys<'k>(KeySeed<'k>);
    impl<'de> Visitor<'de> for LineKeys<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let KeySeed { known, within, log, lines } = self.0;
            while map.next_key_seed(KeySeed { known, within, log: &mut *log, lines })?.is_some() {
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let lines = Cell::new(number - 1);
    let seed = KeySeed { known, within: "a line", log, lines: &lines };
    let mut json = serde_json::Deserializer::from_str(text);
    serde::Deserializer::deserialize_map(&mut json, LineKeys(seed))
        .map_err(|e| FileProblem::at(number, LineProblem::from_json(&e)))
}

/// Read buffer for a pass over a trace file: 64 KiB, not 1 MiB. A large
/// file touches all of a buffer (which the allocator then keeps resident)
/// where a small one touches a little: 1 MiB buffers made peak memory
/// grow with the file.
const READ_AHEAD: usize = 64 * 1024;

pub(crate) fn open(path: &Path) -> Result<BufReader<File>, FileProblem> {
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
    let mut keys = KeyLog::default();
    for line in non_blank_lines(reader) {
        let (number, text) = line?;
        let line = trace_line::parse(format, &text).map_err(|p| FileProblem::at(number, p))?;
        trace_line::check_order(line.at_ms, previous).map_err(|p| FileProblem::at(number, p))?;
        previous = Some((number, line.at_ms));
        // A second, lighter read of a line that parsed: its keys.
        log_line_keys(&text, number, trace_line::known_keys(format), &mut keys)?;
        usable += 1;
    }
    if usable == 0 {
        return Err(FileProblem::whole("holds no request (no non-empty line)"));
    }
    Ok(keys.summary(usable, 0))
}

/// Read a dataset through as the replay will, and count its usable prompts.
pub fn check_dataset(path: &Path, format: DatasetFormat) -> Result<InputSummary, FileProblem> {
    check_dataset_from(open(path)?, format)
}

pub(crate) fn check_dataset_from(
    reader: impl BufRead,
    format: DatasetFormat,
) -> Result<InputSummary, FileProblem> {
    let summary = match (format, format.scored()) {
        (_, Some(scored)) => {
            let items = crate::workload::scored::check(reader, scored)
                .map_err(|(line, message)| FileProblem { line, column: None, message })?;
            InputSummary { usable: items, skipped: 0, unknown_keys: Vec::new(), more_unknown_keys: false }
        }
        (DatasetFormat::Sharegpt, None) => check_sharegpt(reader)?,
        (_, None) => check_jsonl_dataset(reader)?,
    };
    if summary.usable == 0 {
        return Err(FileProblem::whole(match summary.skipped {
            0 => "holds no prompt".to_string(),
            n => format!("holds no usable prompt ({n} conversations without a non-empty first human turn)"),
        }));
    }
    Ok(summary)
}

/// The keys a line of a jsonl dataset reads.
const DATASET_JSONL_KEYS: &[&str] = &["prompt", "output_tokens"];
/// The keys a ShareGPT conversation and one of its turns read (`id`, in
/// the published files, is known and not read).
const SHAREGPT_KEYS: &[&str] = &["conversations", "id"];
const SHAREGPT_TURN_KEYS: &[&str] = &["from", "value"];

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
    let mut keys = KeyLog::default();
    for line in non_blank_lines(reader) {
        let (number, text) = line?;
        serde_json::from_str::<JsonlItem>(&text)
            .map_err(|e| FileProblem::at(number, LineProblem::from_json(&e)))?;
        log_line_keys(&text, number, DATASET_JSONL_KEYS, &mut keys)?;
        usable += 1;
    }
    Ok(keys.summary(usable, 0))
}

// ShareGPT is read as the replay's derived structs read it (`conversations`
// optional, `from` and `value` required strings, a struct also as an array
// of its fields, a field twice refused), by hand so that the keys it does
// not read are seen, at the line the reader is on.

/// Counts the array's usable conversations, dropping each once read.
struct CountConversations<'k> {
    log: &'k mut KeyLog,
    lines: &'k Cell<u64>,
}

impl<'de> DeserializeSeed<'de> for CountConversations<'_> {
    type Value = (u64, u64);
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(u64, u64), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for CountConversations<'_> {
    type Value = (u64, u64);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of conversations (ShareGPT)")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(u64, u64), A::Error> {
        let (mut usable, mut skipped) = (0, 0);
        let lines = self.lines;
        while let Some(has_prompt) = seq.next_element_seed(Conversation { log: &mut *self.log, lines })? {
            if has_prompt {
                usable += 1;
            } else {
                skipped += 1;
            }
        }
        Ok((usable, skipped))
    }
}

/// One conversation: whether it has a usable prompt.
struct Conversation<'k> {
    log: &'k mut KeyLog,
    lines: &'k Cell<u64>,
}

impl<'de> DeserializeSeed<'de> for Conversation<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_struct("Conversation", &["conversations"], self)
    }
}

impl<'de> Visitor<'de> for Conversation<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct Conversation")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        Ok(seq.next_element_seed(Turns { log: self.log, lines: self.lines })?.unwrap_or(false))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let (log, lines) = (self.log, self.lines);
        let mut has_prompt = None;
        while let Some(key) = map.next_key_seed(KeySeed {
            known: SHAREGPT_KEYS,
            within: "a conversation",
            log: &mut *log,
            lines,
        })? {
            if key != Some("conversations") {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            if has_prompt.is_some() {
                return Err(A::Error::duplicate_field("conversations"));
            }
            has_prompt = Some(map.next_value_seed(Turns { log: &mut *log, lines })?);
        }
        Ok(has_prompt.unwrap_or(false))
    }
}

/// A conversation's turns: whether its first human (or user) turn is not
/// blank (the replay's rule).
struct Turns<'k> {
    log: &'k mut KeyLog,
    lines: &'k Cell<u64>,
}

impl<'de> DeserializeSeed<'de> for Turns<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Turns<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut first_human: Option<bool> = None;
        while let Some((from, value)) =
            seq.next_element_seed(Turn { log: &mut *self.log, lines: self.lines })?
        {
            if first_human.is_none() && (from == "human" || from == "user") {
                first_human = Some(!value.trim().is_empty());
            }
        }
        Ok(first_human.unwrap_or(false))
    }
}

/// One turn: its `from` and `value`.
struct Turn<'k> {
    log: &'k mut KeyLog,
    lines: &'k Cell<u64>,
}

impl<'de> DeserializeSeed<'de> for Turn<'_> {
    type Value = (String, String);
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(String, String), D::Error> {
        d.deserialize_struct("Turn", SHAREGPT_TURN_KEYS, self)
    }
}

impl<'de> Visitor<'de> for Turn<'_> {
    type Value = (String, String);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct Turn")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(String, String), A::Error> {
        let missing = |n| A::Error::invalid_length(n, &"struct Turn with 2 elements");
        let from = seq.next_element::<String>()?.ok_or_else(|| missing(0))?;
        let value = seq.next_element::<String>()?.ok_or_else(|| missing(1))?;
        Ok((from, value))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(String, String), A::Error> {
        let (mut from, mut value) = (None, None);
        let (log, lines) = (self.log, self.lines);
        while let Some(key) =
            map.next_key_seed(KeySeed { known: SHAREGPT_TURN_KEYS, within: "a turn", log: &mut *log, lines })?
        {
            let slot = match key {
                Some("from") => &mut from,
                Some(_) => &mut value,
                None => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if slot.is_some() {
                return Err(A::Error::duplicate_field(key.unwrap_or_default()));
            }
            *slot = Some(map.next_value::<String>()?);
        }
        let from = from.ok_or_else(|| A::Error::missing_field("from"))?;
        let value = value.ok_or_else(|| A::Error::missing_field("value"))?;
        Ok((from, value))
    }
}

fn check_sharegpt(reader: impl Read) -> Result<InputSummary, FileProblem> {
    // The replay reads the file as one string: bytes that are not UTF-8
    // anywhere, even in a field it ignores, fail it.
    let lines = Rc::new(Cell::new(0));
    let checked = Utf8Checked { inner: reader, pending: Vec::new(), newlines: Rc::clone(&lines) };
    let mut json = serde_json::Deserializer::from_reader(checked);
    let at = |e: serde_json::Error| {
        let position = (e.line() > 0).then_some(e.line() as u64);
        FileProblem { line: position, ..FileProblem::at(0, LineProblem::from_json(&e)) }
    };
    let mut log = KeyLog::default();
    let (usable, skipped) =
        CountConversations { log: &mut log, lines: &lines }.deserialize(&mut json).map_err(at)?;
    json.end().map_err(at)?;
    Ok(log.summary(usable, skipped))
}

/// A reader that fails at the first byte sequence that is not UTF-8.
/// It also counts the lines read: the JSON reader reads a byte at a
/// time, so a key's visitor finds its own line there.
struct Utf8Checked<R> {
    inner: R,
    /// The start of a character the last read cut (at most 3 bytes).
    pending: Vec<u8>,
    newlines: Rc<Cell<u64>>,
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
        let read = memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        self.newlines.set(self.newlines.get() + read);
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
        let summary = dataset(good, DatasetFormat::Sharegpt).unwrap();
        assert_eq!((summary.usable, summary.skipped), (1, 1));
        let trailing = "[] x";
        assert!(dataset(trailing, DatasetFormat::Sharegpt).unwrap_err().message.contains("trailing"));
    }

    #[test]
    fn keys_that_exclude_each_other_are_refused_at_their_line() {
        let cases = [
            (
                TraceFormat::Jsonl,
                r#"{"timestamp_ms": 5, "input_tokens": 3, "prompt": "a b", "output_tokens": 1}"#,
                "`input_tokens` and `prompt`",
            ),
            (
                TraceFormat::Jsonl,
                r#"{"timestamp_ms": 5, "prompt": "a b", "prefix": "s", "output_tokens": 1}"#,
                "`prefix` and `prompt`",
            ),
            (
                TraceFormat::Jsonl,
                r#"{"timestamp_ms": 5, "prompt": "a b", "prefix_tokens": 4, "output_tokens": 1}"#,
                "`prefix_tokens` and `prompt`",
            ),
            (
                TraceFormat::Mooncake,
                r#"{"timestamp": 5, "input_length": 3, "text_input": "a b"}"#,
                "`input_length` and `text_input`",
            ),
            (
                TraceFormat::Mooncake,
                r#"{"timestamp": 5, "hash_ids": [1], "text_input": "a b"}"#,
                "`hash_ids` and `text_input`",
            ),
        ];
        for (format, line, says) in cases {
            let first = match format {
                TraceFormat::Jsonl => r#"{"timestamp_ms": 0, "input_tokens": 3, "output_tokens": 1}"#,
                TraceFormat::Mooncake => r#"{"timestamp": 0, "input_length": 3}"#,
            };
            let problem = trace(&format!("{first}\n\n{line}\n"), format).unwrap_err();
            assert_eq!(problem.line, Some(3), "{problem}");
            assert!(
                problem.message.contains(&format!("holds both {says}, which exclude each other")),
                "{problem}"
            );
        }
        // A `null` value is no value: the line says one thing.
        let null =
            r#"{"timestamp_ms": 0, "input_tokens": null, "prompt": "a", "prefix": null, "output_tokens": 1}"#;
        assert_eq!(trace(null, TraceFormat::Jsonl).unwrap().usable, 1);
        let empty_ids = r#"{"timestamp": 0, "hash_ids": [], "text_input": "a"}"#;
        assert_eq!(trace(empty_ids, TraceFormat::Mooncake).unwrap().usable, 1);
    }

    #[test]
    fn an_unknown_key_is_named_once_at_its_first_line() {
        let text = concat!(
            "{\"timestamp_ms\": 0, \"input_tokens\": 3, \"output_tokens\": 1}\n",
            "\n",
            "{\"timestamp_ms\": 1, \"input_tokens\": 3, \"output_tokens\": 1, \"promt\": \"x\", \"user\": {\"a\": [1]}}\n",
            "{\"timestamp_ms\": 2, \"input_tokens\": 3, \"output_tokens\": 1, \"promt\": \"y\", \"Session\": 4}\n",
        );
        let summary = trace(text, TraceFormat::Jsonl).unwrap();
        let named: Vec<_> = summary.unknown_keys.iter().map(|k| (k.key.as_str(), k.line, k.like)).collect();
        assert_eq!(named, [("promt", 3, Some("prompt")), ("user", 3, None), ("Session", 4, Some("session"))]);
        assert_eq!(
            summary.unknown_keys[0].to_string(),
            "unknown key `promt`, ignored (did you mean `prompt`?)"
        );
        assert_eq!(
            summary.unknown_keys[1].to_string(),
            "unknown key `user`, ignored (a line reads `timestamp_ms`, `input_tokens`, `prompt`, \
             `output_tokens`, `session`, `prefix`, `prefix_tokens`)"
        );
        assert!(!summary.more_unknown_keys);
        // The format's own keys raise nothing; Mooncake's are its own.
        let known =
            r#"{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1], "session_id": 2}"#;
        let summary = trace(known, TraceFormat::Mooncake).unwrap();
        assert_eq!(summary.unknown_keys.iter().map(|k| k.key.as_str()).collect::<Vec<_>>(), ["session_id"]);
        // Many distinct keys: the first few are named, and that there were more.
        let many: String =
            (0..40).map(|i| format!("{{\"timestamp\": {i}, \"input_length\": 1, \"k{i}\": 0}}\n")).collect();
        let summary = trace(&many, TraceFormat::Mooncake).unwrap();
        assert_eq!(summary.unknown_keys.len(), UNKNOWN_KEYS_NAMED);
        assert_eq!(summary.unknown_keys[15].line, 16);
        assert!(summary.more_unknown_keys);
    }

    #[test]
    fn a_dataset_s_unknown_keys_are_named_at_their_line() {
        let summary =
            dataset("{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"output_token\": 3}\n", DatasetFormat::Jsonl)
                .unwrap();
        let named: Vec<_> = summary.unknown_keys.iter().map(|k| (k.key.as_str(), k.line, k.like)).collect();
        assert_eq!(named, [("output_token", 2, Some("output_tokens"))]);
        // ShareGPT: the line the key is on, inside the one array; `id` is known.
        let text = "[\n {\"id\": \"a\", \"conversations\": [\n  {\"from\": \"human\", \"value\": \"hi\", \"lang\": \"en\"},\n  {\"from\": \"gpt\", \"value\": \"yo\"}],\n  \"conversation\": []\n },\n {\"id\": 7, \"conversations\": [{\"from\": \"human\", \"value\": \"x\", \"lang\": \"fr\"}]}\n]\n";
        let summary = dataset(text, DatasetFormat::Sharegpt).unwrap();
        let named: Vec<_> = summary.unknown_keys.iter().map(|k| (k.key.as_str(), k.line, k.within)).collect();
        assert_eq!(named, [("lang", 3, "a turn"), ("conversation", 5, "a conversation")]);
        assert_eq!((summary.usable, summary.skipped), (2, 0));
        // Read as the replay reads it: a field twice is refused, an unknown one twice is not.
        let twice = r#"[{"conversations": [{"from": "human", "value": "a", "from": "gpt"}]}]"#;
        assert!(
            dataset(twice, DatasetFormat::Sharegpt).unwrap_err().message.contains("duplicate field `from`")
        );
        let ids = r#"[{"id": 1, "id": 2, "conversations": [["human", "a"]]}]"#;
        assert_eq!(dataset(ids, DatasetFormat::Sharegpt).unwrap().usable, 1);
    }

    #[test]
    fn sharegpt_shapes_are_judged_as_the_replay_judges_them() {
        use crate::workload::dataset::Dataset;
        use crate::workload::traffic::DatasetSpec;
        let shapes = [
            r#"[[[["human", "a"]]]]"#,
            r#"[[[]]]"#,
            r#"[[]]"#,
            r#"[{"conversations": [["human"]]}]"#,
            r#"[{"conversations": [["human", "a", "b"]]}]"#,
            r#"[{"conversations": null}]"#,
            r#"[{"conversations": [], "conversations": []}]"#,
            r#"[{"conversations": [{"value": "a"}]}]"#,
            r#"[{"conversations": [{"from": "user", "value": " "}, {"from": "human", "value": "b"}]}]"#,
            r#"[{"x": {"from": 1}, "conversations": [{"from": "human", "value": "a", "from ": 2}]}]"#,
        ];
        for shape in shapes {
            let mut file = tempfile::NamedTempFile::new().unwrap();
            std::io::Write::write_all(&mut file, shape.as_bytes()).unwrap();
            let spec = DatasetSpec {
                path: file.path().to_path_buf(),
                format: DatasetFormat::Sharegpt,
                min_prompt_tokens: None,
                max_prompt_tokens: None,
                truncate: false,
            };
            let checked = dataset(shape, DatasetFormat::Sharegpt);
            let loaded = Dataset::load(&spec, 1, 1, 1, None);
            assert_eq!(checked.is_ok(), loaded.is_ok(), "{shape}: {checked:?} {:?}", loaded.err());
        }
    }

    #[test]
    fn a_jsonl_dataset_line_without_a_prompt_is_named() {
        let problem = dataset("{\"prompt\": \"a\"}\n{\"text\": \"b\"}\n", DatasetFormat::Jsonl).unwrap_err();
        assert_eq!(problem.line, Some(2));
        assert!(problem.message.contains("missing field `prompt`"), "{problem}");
    }
}
