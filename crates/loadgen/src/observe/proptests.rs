//! Property tests (fuzz targets `sse`, `json_scan` and `chat_chunk`) for the
//! parts of the load generator that read what a server sends: the bytes are
//! hostile, so no input may panic, and the incremental readers must agree
//! with whole-input references (an SSE reference parser here, serde_json
//! for JSON). The HTTP framing has its own in `send/http/proptests.rs`. Driver
//! and seed corpus: `fuzz/harness.rs`, `fuzz/corpus/`, `scripts/fuzz.sh`.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value};

use crate::fuzz_harness as harness;
use crate::observe::chunk::{ChunkView, Usage, parse_event};
use crate::observe::json_scan::{
    object_fields, string_value, u64_value, value_at, walk_array_first, walk_object,
};
use crate::observe::sse::SseParser;
use crate::workload::spec::Api;

// ---------------------------------------------------------------- shared

/// Sorted cut positions for an input of `len` bytes.
pub(crate) fn cut_points(cuts: &[Index], len: usize) -> Vec<usize> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c.index(len + 1)).collect();
    points.sort_unstable();
    points
}

/// `input` split at `cuts` (sorted positions), empty pieces included.
pub(crate) fn pieces<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for &cut in cuts {
        out.push(&input[start..cut]);
        start = cut;
    }
    out.push(&input[start..]);
    out
}

/// Bytes that are mostly the structural characters of `alphabet`, so random
/// inputs reach deep states, plus fully arbitrary ones.
pub(crate) fn hostile_bytes(alphabet: &'static [u8], max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..max),
        vec(proptest::sample::select(alphabet), 0..max),
        vec(prop_oneof![3 => proptest::sample::select(alphabet), 1 => any::<u8>()], 0..max),
    ]
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---------------------------------------------------------------- SSE

/// An event as dispatched: (event name, data).
pub(crate) type Event = (Vec<u8>, Vec<u8>);

/// All events of `pieces` fed in order, and what is left pending.
pub(crate) fn feed_sse<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> (Vec<Event>, usize) {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    for part in parts {
        parser.feed(part, |e| events.push((e.event.to_vec(), e.data.to_vec())));
    }
    (events, parser.pending_bytes())
}

/// A whole-input SSE parser written from the spec (WHATWG HTML §9.2.6),
/// with the parser's two documented choices: the event name is empty when
/// absent, and an event with a `data` field is dispatched even if empty.
pub(crate) fn reference_sse(bytes: &[u8]) -> (Vec<Event>, usize) {
    let mut events = Vec::new();
    let (mut data, mut event, mut has_data) = (Vec::new(), Vec::new(), false);
    let mut start = 0;
    let partial = loop {
        let Some(end) = bytes[start..].iter().position(|b| matches!(b, b'\r' | b'\n')).map(|p| start + p)
        else {
            break bytes.len() - start;
        };
        let line = &bytes[start..end];
        start = if bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n') { end + 2 } else { end + 1 };
        if line.is_empty() {
            if has_data {
                events.push((event.clone(), data.clone()));
            }
            data.clear();
            event.clear();
            has_data = false;
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            if has_data {
                data.push(b'\n');
            }
            data.extend_from_slice(value);
            has_data = true;
        } else if field == b"event" {
            event = value.to_vec();
        }
    };
    (events, partial + data.len() + usize::from(has_data))
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum LineEnd {
    Lf,
    CrLf,
    Cr,
}

impl LineEnd {
    fn bytes(self) -> &'static [u8] {
        match self {
            LineEnd::Lf => b"\n",
            LineEnd::CrLf => b"\r\n",
            LineEnd::Cr => b"\r",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum SseLine {
    Comment(Vec<u8>),
    /// `name`, then (when `colon`) `:`, an optional space and `value`.
    Field {
        name: &'static str,
        colon: bool,
        space: bool,
        value: Vec<u8>,
    },
}

/// A generated stream: its events (each a list of lines, then a blank line)
/// and an unterminated last line, if any.
#[derive(Debug, Clone)]
pub(crate) struct SseStream {
    pub events: Vec<(Vec<(SseLine, LineEnd)>, LineEnd)>,
    pub tail: Option<Vec<u8>>,
}

impl SseStream {
    pub(crate) fn wire(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut previous = None;
        let mut end_line = |out: &mut Vec<u8>, empty: bool, mut end: LineEnd| {
            // `\r` then an empty line ended by `\n` would read as one `\r\n`.
            if empty && previous == Some(LineEnd::Cr) && end == LineEnd::Lf {
                end = LineEnd::CrLf;
            }
            out.extend_from_slice(end.bytes());
            previous = Some(end);
        };
        for (lines, blank) in &self.events {
            for (line, end) in lines {
                match line {
                    SseLine::Comment(text) => {
                        out.push(b':');
                        out.extend_from_slice(text);
                    }
                    SseLine::Field { name, colon, space, value } => {
                        out.extend_from_slice(name.as_bytes());
                        if *colon {
                            out.push(b':');
                            if *space {
                                out.push(b' ');
                            }
                            out.extend_from_slice(value);
                        }
                    }
                }
                end_line(&mut out, false, *end);
            }
            end_line(&mut out, true, *blank);
        }
        if let Some(tail) = &self.tail {
            out.extend_from_slice(tail);
        }
        out
    }

    /// The events a correct parser dispatches.
    pub(crate) fn expected(&self) -> Vec<Event> {
        let mut events = Vec::new();
        for (lines, _) in &self.events {
            let (mut name, mut data, mut has_data) = (Vec::new(), Vec::new(), false);
            for (line, _) in lines {
                let SseLine::Field { name: field, colon, space, value } = line else { continue };
                let value = match (colon, space) {
                    (false, _) => &[][..],
                    (true, true) => &value[..],
                    (true, false) => value.strip_prefix(b" ").unwrap_or(value),
                };
                match *field {
                    "data" => {
                        if has_data {
                            data.push(b'\n');
                        }
                        data.extend_from_slice(value);
                        has_data = true;
                    }
                    "event" => name = value.to_vec(),
                    _ => {}
                }
            }
            if has_data {
                events.push((name, data));
            }
        }
        events
    }
}

/// Field values and comments: anything but CR and LF.
fn line_text() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[ -~]{0,16}".prop_map(String::into_bytes),
        vec(any::<u8>(), 0..16).prop_map(|v| v.into_iter().filter(|b| !matches!(b, b'\r' | b'\n')).collect()),
        Just(b" leading space".to_vec()),
        Just(b"{\"choices\":[{\"delta\":{\"content\":\"x\"}}]}".to_vec()),
        Just(b"[DONE]".to_vec()),
    ]
}

fn line_end() -> impl Strategy<Value = LineEnd> {
    prop_oneof![Just(LineEnd::Lf), Just(LineEnd::CrLf), Just(LineEnd::Cr)]
}

fn sse_line() -> impl Strategy<Value = SseLine> {
    let name =
        proptest::sample::select(&["data", "data", "data", "event", "id", "retry", "Data", "data ", "x"][..]);
    prop_oneof![
        1 => line_text().prop_map(SseLine::Comment),
        6 => (name, any::<bool>(), any::<bool>(), line_text())
            .prop_map(|(name, colon, space, value)| SseLine::Field { name, colon: colon || name == "data", space, value }),
        1 => Just(SseLine::Field { name: "data", colon: false, space: false, value: Vec::new() }),
    ]
}

pub(crate) fn sse_stream() -> impl Strategy<Value = SseStream> {
    let event = (vec((sse_line(), line_end()), 0..6), line_end());
    let tail = proptest::option::of(
        prop_oneof![line_text(), Just(b"data: cut".to_vec())]
            .prop_filter("a tail is a non-empty line", |t| !t.is_empty()),
    );
    (vec(event, 0..6), tail).prop_map(|(events, tail)| SseStream { events, tail })
}

#[test]
fn fuzz_sse_arbitrary_bytes_split_anywhere_match_the_reference() {
    let strategy = (hostile_bytes(b"data:event: \r\n\r\n:", 256), vec(any::<Index>(), 0..8));
    harness::check("sse", "arbitrary_bytes_split_anywhere", 256, strategy, |(bytes, cuts)| {
        let whole = feed_sse([&bytes[..]]);
        let cuts = cut_points(&cuts, bytes.len());
        let split = feed_sse(pieces(&bytes, &cuts));
        prop_assert_eq!(&split, &whole, "split at {:?}", cuts);
        prop_assert_eq!(whole, reference_sse(&bytes));
        Ok(())
    });
}

#[test]
fn fuzz_sse_generated_streams_give_their_events_however_split() {
    let strategy = (sse_stream(), vec(any::<Index>(), 0..10));
    harness::check("sse", "generated_streams_split_anywhere", 256, strategy, |(stream, cuts)| {
        let wire = stream.wire();
        let expected = stream.expected();
        let whole = feed_sse([&wire[..]]);
        prop_assert_eq!(&whole.0, &expected, "wire {:?}", lossy(&wire));
        if stream.tail.is_some() {
            prop_assert!(whole.1 > 0, "a cut-off last line is pending");
        }
        let cuts = cut_points(&cuts, wire.len());
        prop_assert_eq!(feed_sse(pieces(&wire, &cuts)), whole, "wire {:?} split at {:?}", lossy(&wire), cuts);
        // One byte per read, the hardest split.
        prop_assert_eq!(&feed_sse(wire.chunks(1)).0, &expected);
        Ok(())
    });
}

#[test]
fn corpus_sse_replays() {
    for (name, bytes) in harness::corpus("sse") {
        let whole = feed_sse([&bytes[..]]);
        assert_eq!(whole, reference_sse(&bytes), "{name}");
        for cut in 0..=bytes.len() {
            assert_eq!(feed_sse([&bytes[..cut], &bytes[cut..]]), whole, "{name} split at {cut}");
        }
        assert_eq!(feed_sse(bytes.chunks(1)), whole, "{name} byte by byte");
    }
}

#[test]
fn fuzz_sse_mutated_corpus_matches_the_reference() {
    let seeds: Vec<Vec<u8>> = harness::corpus("sse").into_iter().map(|(_, b)| b).collect();
    let insert = proptest::sample::select(vec![
        &b"\r"[..],
        b"\n",
        b"\r\n",
        b":",
        b"data:",
        b"event: x",
        b" ",
        b"\n\n",
        b"\xff\xfe",
    ])
    .prop_map(<[u8]>::to_vec);
    let strategy = (harness::mutated(seeds, insert, 6), vec(any::<Index>(), 0..8));
    harness::check("sse", "mutated_corpus", 256, strategy, |(bytes, cuts)| {
        let whole = feed_sse([&bytes[..]]);
        prop_assert_eq!(&whole, &reference_sse(&bytes));
        let cuts = cut_points(&cuts, bytes.len());
        prop_assert_eq!(feed_sse(pieces(&bytes, &cuts)), whole);
        Ok(())
    });
}

// ---------------------------------------------------------------- JSON

/// A tiny xorshift for the rendering choices (whitespace, escapes).
struct Style(u64);

impl Style {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }

    fn whitespace(&mut self, out: &mut Vec<u8>) {
        while self.one_in(4) {
            out.push(b" \t\n\r"[(self.next() % 4) as usize]);
        }
    }
}

/// Writes `s` as a JSON string, escaping what must be escaped and (when
/// `fancy`), at random, what may be.
fn render_string(s: &str, style: &mut Style, fancy: bool, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        let short = match c {
            '"' => Some(b'"'),
            '\\' => Some(b'\\'),
            '/' => Some(b'/'),
            '\u{8}' => Some(b'b'),
            '\u{c}' => Some(b'f'),
            '\n' => Some(b'n'),
            '\r' => Some(b'r'),
            '\t' => Some(b't'),
            _ => None,
        };
        let must = matches!(c, '"' | '\\') || (c as u32) < 0x20;
        match if fancy { style.next() % 4 } else { 2 } {
            0 => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let hex =
                        if style.one_in(2) { format!("\\u{unit:04x}") } else { format!("\\u{unit:04X}") };
                    out.extend_from_slice(hex.as_bytes());
                }
            }
            1 if short.is_some() => out.extend_from_slice(&[b'\\', short.unwrap_or(b'?')]),
            _ if must => match short {
                Some(e) => out.extend_from_slice(&[b'\\', e]),
                None => out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes()),
            },
            _ => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// Writes `v` as JSON with random whitespace and escapes. `escape_keys`:
/// keys may be escaped too (legal JSON, rare on the wire).
fn render(v: &Value, style: &mut Style, escape_keys: bool, out: &mut Vec<u8>) {
    style.whitespace(out);
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => out.extend_from_slice(v.to_string().as_bytes()),
        Value::String(s) => render_string(s, style, true, out),
        Value::Array(items) => {
            out.push(b'[');
            style.whitespace(out);
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                render(item, style, escape_keys, out);
            }
            style.whitespace(out);
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            style.whitespace(out);
            for (i, (key, value)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                style.whitespace(out);
                render_string(key, style, escape_keys, out);
                style.whitespace(out);
                out.push(b':');
                render(value, style, escape_keys, out);
            }
            style.whitespace(out);
            out.push(b'}');
        }
    }
    style.whitespace(out);
}

fn rendered(v: &Value, seed: u64, escape_keys: bool) -> Vec<u8> {
    let mut out = Vec::new();
    render(v, &mut Style(seed | 1), escape_keys, &mut out);
    out
}

fn json_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[ -~]{0,12}",
        2 => any::<String>(),
        1 => proptest::sample::select(&["", "\"", "\\", "}", "]", "\",\"content\":\"", "\u{0}", "é😀", "\u{2028}"][..])
            .prop_map(str::to_string),
    ]
}

/// Keys that are not read at the level they appear at, some of them close
/// to the ones that are.
fn other_key() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(
            &["id", "object", "model", "tool", "Content", "contents", "delta_", "role", "index", "x", ""][..]
        )
        .prop_map(str::to_string),
        "x_[a-z]{0,6}",
    ]
}

fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Fractions that print and parse back exactly (serde_json's float
        // parsing may be off by an ulp elsewhere).
        (-1_000_000_000i64..1_000_000_000).prop_map(|n| Value::from(n as f64 / 64.0)),
        Just(Value::from(1e300)),
        Just(Value::from(-2.5e-7)),
        json_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        let key = prop_oneof![
            other_key(),
            proptest::sample::select(&["content", "choices", "delta", "text", "usage", "error"][..])
                .prop_map(str::to_string),
            json_string(),
        ];
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec((key, inner), 0..4).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
    .boxed()
}

/// An object of the present fields, in random order.
fn object_of(fields: Vec<Option<(&'static str, Value)>>) -> BoxedStrategy<Value> {
    let present: Vec<(&'static str, Value)> = fields.into_iter().flatten().collect();
    (Just(present).prop_shuffle(), vec((other_key(), json_value()), 0..2))
        .prop_map(|(fields, extra)| {
            let mut map = Map::new();
            for (k, v) in extra {
                map.insert(k, v);
            }
            for (k, v) in fields {
                map.insert(k.to_string(), v);
            }
            Value::Object(map)
        })
        .boxed()
}

fn field<S: Strategy<Value = Value> + 'static>(
    name: &'static str,
    value: S,
) -> BoxedStrategy<Option<(&'static str, Value)>> {
    proptest::option::of(value.prop_map(move |v| (name, v))).boxed()
}

fn null_or_string() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 3 => json_string().prop_map(Value::String)]
}

fn null_or_count() -> impl Strategy<Value = Value> {
    prop_oneof![1 => Just(Value::Null), 4 => any::<u64>().prop_map(Value::from), 4 => (0u64..5000).prop_map(Value::from)]
}

fn delta() -> BoxedStrategy<Value> {
    (
        field("role", Just(Value::from("assistant"))),
        field("content", null_or_string()),
        field("reasoning_content", null_or_string()),
        field("reasoning", null_or_string()),
        field("tool_calls", json_value()),
    )
        .prop_flat_map(|(a, b, c, d, e)| object_of(vec![a, b, c, d, e]))
        .boxed()
}

fn choice() -> BoxedStrategy<Value> {
    (
        field("index", (0u64..4).prop_map(Value::from)),
        field("delta", prop_oneof![1 => Just(Value::Null), 4 => delta()]),
        field("text", null_or_string()),
        field(
            "finish_reason",
            prop_oneof![
                Just(Value::Null),
                Just(Value::from("stop")),
                Just(Value::from("length")),
                json_string().prop_map(Value::String)
            ],
        ),
        field("logprobs", Just(Value::Null)),
    )
        .prop_flat_map(|(a, b, c, d, e)| object_of(vec![a, b, c, d, e]))
        .boxed()
}

fn details() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        field("cached_tokens", null_or_count()).prop_flat_map(|f| object_of(vec![f]))
    ]
    .boxed()
}

fn usage(prompt: &'static str, completion: &'static str, details_key: &'static str) -> BoxedStrategy<Value> {
    (
        field(prompt, null_or_count()),
        field(completion, null_or_count()),
        field("total_tokens", null_or_count()),
        field(details_key, details()),
        field(
            if details_key == "prompt_tokens_details" {
                "input_tokens_details"
            } else {
                "prompt_tokens_details"
            },
            details(),
        ),
    )
        .prop_flat_map(|(a, b, c, d, e)| object_of(vec![a, b, c, d, e]))
        .boxed()
}

/// A chat or completions chunk as servers stream them (or close to it).
fn chat_chunk() -> BoxedStrategy<Value> {
    (
        field("id", json_string().prop_map(Value::String)),
        field("created", any::<u64>().prop_map(Value::from)),
        field("choices", prop_oneof![1 => Just(Value::Null), 6 => vec(choice(), 0..3).prop_map(Value::Array)]),
        field("usage", prop_oneof![1 => Just(Value::Null), 2 => usage("prompt_tokens", "completion_tokens", "prompt_tokens_details")]),
        field("error", json_value()),
    )
        .prop_flat_map(|(a, b, c, d, e)| object_of(vec![a, b, c, d, e]))
        .boxed()
}

const RESPONSE_KINDS: &[&str] = &[
    "response.output_text.delta",
    "response.reasoning_text.delta",
    "response.reasoning_summary_text.delta",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
    "response.created",
    "",
];

/// A Responses API event payload and its SSE `event:` name.
fn responses_event() -> impl Strategy<Value = (Vec<u8>, Value)> {
    let kind = prop_oneof![
        4 => proptest::sample::select(RESPONSE_KINDS).prop_map(Value::from),
        1 => Just(Value::Null),
        1 => json_string().prop_map(Value::String),
    ];
    let response = (
        field("status", null_or_string()),
        field("usage", prop_oneof![1 => Just(Value::Null), 2 => usage("input_tokens", "output_tokens", "input_tokens_details")]),
    )
        .prop_flat_map(|(a, b)| object_of(vec![a, b]));
    let payload = (
        field("type", kind),
        field("delta", null_or_string()),
        field("response", response),
        field("error", json_value()),
    )
        .prop_flat_map(|(a, b, c, d)| object_of(vec![a, b, c, d]));
    (proptest::sample::select(RESPONSE_KINDS).prop_map(|k| k.as_bytes().to_vec()), payload)
}

/// What a chunk says, comparable between the scanner and serde_json.
#[derive(Debug, Default, PartialEq)]
struct Answers {
    content: Option<String>,
    reasoning: Option<String>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// The error value, parsed back from the raw slice the scanner keeps.
    error: Option<Value>,
    done: bool,
}

impl Answers {
    fn of(view: &ChunkView<'_>) -> Result<Answers, TestCaseError> {
        let error = match &view.error {
            Some(raw) => Some(
                serde_json::from_str(raw)
                    .map_err(|e| TestCaseError::fail(format!("error slice {raw:?} is not JSON: {e}")))?,
            ),
            None => None,
        };
        Ok(Answers {
            content: view.content.as_deref().map(str::to_string),
            reasoning: view.reasoning.as_deref().map(str::to_string),
            finish_reason: view.finish_reason.as_deref().map(str::to_string),
            usage: view.usage,
            error,
            done: view.done,
        })
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_string)
}

fn not_null(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn expected_usage(u: &Value, prompt: &str, completion: &str) -> Usage {
    let count = |key: &str| u.get(key).and_then(Value::as_u64).unwrap_or(0);
    let details = u.get("prompt_tokens_details").or_else(|| u.get("input_tokens_details"));
    Usage {
        prompt_tokens: count(prompt),
        completion_tokens: count(completion),
        cached_tokens: not_null(details).and_then(|d| d.get("cached_tokens")).and_then(Value::as_u64),
    }
}

/// What a chat/completions chunk says, read from serde_json's full parse.
fn expected_chat(doc: &Value) -> Answers {
    let mut a = Answers::default();
    if let Some(choice) = doc.get("choices").and_then(Value::as_array).and_then(|c| c.first()) {
        match not_null(choice.get("delta")) {
            Some(delta) => {
                a.content = text(delta.get("content"));
                a.reasoning = text(delta.get("reasoning_content")).or_else(|| text(delta.get("reasoning")));
            }
            None => a.content = text(choice.get("text")),
        }
        a.finish_reason = text(choice.get("finish_reason"));
    }
    if let Some(u) = not_null(doc.get("usage")) {
        a.usage = Some(expected_usage(u, "prompt_tokens", "completion_tokens"));
    }
    a.error = not_null(doc.get("error")).cloned();
    a
}

fn expected_responses(event: &[u8], doc: &Value) -> Answers {
    let mut a = Answers::default();
    let kind = text(doc.get("type")).map(String::into_bytes).unwrap_or_else(|| event.to_vec());
    match &kind[..] {
        b"response.output_text.delta" => a.content = text(doc.get("delta")),
        b"response.reasoning_text.delta" | b"response.reasoning_summary_text.delta" => {
            a.reasoning = text(doc.get("delta"))
        }
        b"response.completed" | b"response.incomplete" => {
            a.done = true;
            if let Some(response) = doc.get("response") {
                if let Some(u) = not_null(response.get("usage")) {
                    a.usage = Some(expected_usage(u, "input_tokens", "output_tokens"));
                }
                a.finish_reason = if kind == b"response.incomplete" {
                    Some("length".into())
                } else {
                    text(response.get("status"))
                };
            }
        }
        b"response.failed" | b"error" => {
            a.error = Some(doc.get("error").or(doc.get("response")).unwrap_or(doc).clone())
        }
        _ => {}
    }
    a
}

/// The scanner's entry points on `bytes`: must not panic, whatever they say.
fn scan_everything(bytes: &[u8]) {
    let _ = object_fields(bytes, [b"choices", b"usage", b"error", b"content"]);
    let _ = string_value(bytes);
    let _ = u64_value(bytes);
    let _ = value_at(bytes, 0);
    let _ = walk_array_first(bytes, 0, |at| value_at(bytes, at).map(|(_, end)| end));
    let _ = walk_object(bytes, 0, |_, at| value_at(bytes, at).map(|(_, end)| Some(end)));
    for api in [Api::Chat, Api::Completions, Api::Responses] {
        let _ = parse_event(api, b"", bytes);
        let _ = parse_event(api, b"response.completed", bytes);
        let _ = parse_event(api, b"error", bytes);
    }
}

/// Where serde_json reads `bytes` as an object with distinct keys, the
/// scanner finds every key with the same value.
fn agrees_on_fields(bytes: &[u8]) -> Result<(), TestCaseError> {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(bytes) else {
        return Ok(());
    };
    let mut keys = Vec::new();
    let walked = walk_object(bytes, 0, |key, at| {
        keys.push(key.to_vec());
        value_at(bytes, at).map(|(_, end)| Some(end))
    });
    prop_assert!(walked.is_ok(), "serde_json reads it, the scanner says {:?}", walked);
    if keys.len() != map.len() {
        return Ok(()); // duplicate keys: serde_json keeps the last, the scanner the first
    }
    for (key, value) in &map {
        let [raw] = object_fields(bytes, [key.as_bytes()]).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let raw = raw.ok_or_else(|| TestCaseError::fail(format!("key {key:?} not found")))?;
        let theirs: Value = serde_json::from_slice(raw).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&theirs, value, "key {:?}", key);
        if let Value::String(s) = value {
            let decoded = string_value(raw).ok().flatten();
            prop_assert_eq!(decoded.as_deref(), Some(s.as_str()));
        }
        if let Some(n) = value.as_u64() {
            prop_assert_eq!(u64_value(raw).ok().flatten(), Some(n));
        }
    }
    Ok(())
}

#[test]
fn fuzz_json_arbitrary_bytes_never_panic() {
    harness::check(
        "json_scan",
        "arbitrary_bytes",
        256,
        hostile_bytes(b"{}[]\":,\\ u0123null", 192),
        |bytes| {
            scan_everything(&bytes);
            agrees_on_fields(&bytes)
        },
    );
}

#[test]
fn fuzz_json_rendered_values_agree_with_serde_json() {
    let strategy = (json_value(), any::<u64>(), any::<bool>());
    harness::check("json_scan", "rendered_values", 256, strategy, |(value, seed, escape_keys)| {
        let bytes = rendered(&value, seed, escape_keys);
        prop_assert_eq!(
            &serde_json::from_slice::<Value>(&bytes).ok(),
            &Some(value.clone()),
            "{}",
            lossy(&bytes)
        );
        scan_everything(&bytes);
        // Callers hand `value_at` the position after the whitespace.
        let start = bytes.iter().position(|b| !b" \t\n\r".contains(b)).unwrap_or(bytes.len());
        let (raw, end) = value_at(&bytes, start).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(serde_json::from_slice::<Value>(raw).ok(), Some(value.clone()));
        prop_assert!(crate::observe::json_scan::expect_end(&bytes, end).is_ok());
        if let Value::String(s) = &value {
            let decoded = string_value(raw).ok().flatten();
            prop_assert_eq!(decoded.as_deref(), Some(s.as_str()));
        }
        agrees_on_fields(&bytes)
    });
}

#[test]
fn fuzz_json_mutated_values_never_panic() {
    let strategy = (
        json_value(),
        any::<u64>(),
        vec(harness::mutation(json_string().prop_map(String::into_bytes)), 1..4),
    );
    harness::check("json_scan", "mutated_values", 256, strategy, |(value, seed, mutations)| {
        let mut bytes = rendered(&value, seed, true);
        for m in &mutations {
            m.apply(&mut bytes);
        }
        scan_everything(&bytes);
        agrees_on_fields(&bytes)
    });
}

/// The generalization of chunk.rs's twelve shapes: whatever a generated
/// chunk says, the one-pass reader reads the same as serde_json.
#[test]
fn fuzz_chat_chunk_answers_agree_with_serde_json() {
    harness::check("chat_chunk", "chat_answers", 256, (chat_chunk(), any::<u64>()), |(chunk, seed)| {
        let bytes = rendered(&chunk, seed, false);
        let full: Value = serde_json::from_slice(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&full, &chunk);
        let expected = expected_chat(&full);
        for api in [Api::Chat, Api::Completions] {
            let view = parse_event(api, b"", &bytes)
                .map_err(|e| TestCaseError::fail(format!("{e} in {}", lossy(&bytes))))?;
            prop_assert_eq!(&Answers::of(&view)?, &expected, "{}", lossy(&bytes));
        }
        Ok(())
    });
}

#[test]
fn fuzz_chat_chunk_responses_events_agree_with_serde_json() {
    harness::check(
        "chat_chunk",
        "responses_answers",
        256,
        (responses_event(), any::<u64>()),
        |((event, doc), seed)| {
            let bytes = rendered(&doc, seed, false);
            let view = parse_event(Api::Responses, &event, &bytes)
                .map_err(|e| TestCaseError::fail(format!("{e} in {}", lossy(&bytes))))?;
            prop_assert_eq!(Answers::of(&view)?, expected_responses(&event, &doc), "{}", lossy(&bytes));
            Ok(())
        },
    );
}

#[test]
fn fuzz_chat_chunk_mutated_corpus_never_panics() {
    let seeds: Vec<Vec<u8>> = harness::corpus("chat_chunk").into_iter().map(|(_, b)| b).collect();
    let insert = proptest::sample::select(vec![
        &b"\""[..],
        b"\\",
        b"\\u",
        b"\\ud83d",
        b"{",
        b"}",
        b"[",
        b"]",
        b",",
        b":",
        b"null",
        b"-1",
        b" ",
    ])
    .prop_map(<[u8]>::to_vec);
    harness::check("chat_chunk", "mutated_corpus", 256, harness::mutated(seeds, insert, 6), |bytes| {
        scan_everything(&bytes);
        agrees_on_fields(&bytes)
    });
}

#[test]
fn corpus_chat_chunk_replays() {
    for (name, bytes) in harness::corpus("chat_chunk") {
        scan_everything(&bytes);
        agrees_on_fields(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ours = parse_event(Api::Chat, b"", &bytes);
        if bytes == b"[DONE]" {
            assert!(ours.unwrap().done, "{name}");
            continue;
        }
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(full) => {
                let view = ours.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(Answers::of(&view).unwrap(), expected_chat(&full), "{name}");
            }
            Err(_) => assert!(ours.is_err(), "{name}: accepted broken JSON"),
        }
    }
}
