//! Recorded traces: when each request arrived and what it was.
//!
//! Two formats (docs/workloads.md):
//! - `mooncake`: `{"timestamp": ms, "input_length": n, "output_length": m,
//!   "hash_ids": [...]}`, one hash id per `block_tokens` prompt tokens;
//!   a `text_input` line is sent as written.
//! - `jsonl`: `{"timestamp_ms": ms, "input_tokens": n | "prompt": "...",
//!   "output_tokens": m, "session": id?, "prefix": id?, "prefix_tokens": k?}`.
//!
//! A trace is kept compact (numbers per line, one pool of hash ids, one
//! pool of the texts given verbatim); a prompt is built only when its
//! request is sent. A block's words come from (campaign seed, hash id)
//! alone, so requests sharing a hash id share that block's text exactly,
//! and distinct ids never share a block (the words are four-letter words,
//! one token each as the sim counts them).

use std::collections::HashMap;
use std::io::BufRead as _;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::workload::filler::Filler;
use crate::workload::prompt::SplitMix64;
use crate::workload::request::{Content, Origin, Planned};
use crate::workload::session::SessionPlan;
use crate::workload::trace_line::{self, LineProblem, Prompt, TraceLine};
use crate::workload::traffic::TraceSpec;

/// Generator streams of trace prompts, apart from the synthetic ones.
mod streams {
    /// A hash id's block: `HASH_BASE ^ id`.
    pub const HASH_BASE: u64 = 0x7472_6163_6500_0000;
    /// Tokens past a line's hash ids, and jsonl prompts by length: `LINE_BASE + line`.
    pub const LINE_BASE: u64 = 3 << 40;
    /// A generic-JSONL shared prefix: `PREFIX_BASE + its id's number`.
    pub const PREFIX_BASE: u64 = 5 << 40;
}

const NONE: u32 = u32::MAX;

/// One trace line, as numbers (32 bytes: a trace of a million lines holds 32 MB).
#[derive(Debug, Clone, Copy)]
struct Line {
    /// Recorded time after the trace's first line, µs (unscaled).
    at_us: u64,
    /// 1-based line number in the file.
    line: u32,
    input_tokens: u32,
    output_tokens: u32,
    /// `hashes[hash_at .. hash_at + hash_len]`.
    hash_at: u32,
    hash_len: u32,
    /// `extras[extra]` when the line has a text, session or prefix, else `NONE`.
    extra: u32,
}

/// What few lines carry: kept apart so the common line stays small.
#[derive(Debug, Clone, Copy)]
struct Extra {
    /// `texts[text_at .. text_at + text_len]`, when the line gives its text.
    text_at: u32,
    text_len: u32,
    session: u32,
    /// Shared-prefix id (jsonl) and its length in tokens.
    prefix: u32,
    prefix_tokens: u32,
}

const NO_EXTRA: Extra = Extra { text_at: NONE, text_len: 0, session: NONE, prefix: NONE, prefix_tokens: 0 };

/// A loaded trace window.
#[derive(Debug)]
pub struct Trace {
    spec: TraceSpec,
    lines: Vec<Line>,
    extras: Vec<Extra>,
    hashes: Vec<u64>,
    texts: String,
    /// The requests of one measured run are the window's lines, pass after
    /// pass: computed per request ([`Trace::slot_due`]), not listed.
    window_first: u32,
    /// µs from one pass's start to the next's, and the window's first line's time.
    period_us: u64,
    first_at_us: u64,
    /// Requests of one measured run.
    count: u64,
    /// Per request of the run: the prompt tokens a cache that kept
    /// everything would hold when it arrives (see [`Trace::ideal_cached`]).
    ideal_cached: Vec<u32>,
    /// How many times the window was replayed to fill the run (1 without `loop`).
    passes: u64,
    lines_in_file: u64,
    /// Requests in one pass of the window.
    window_len: u64,
    sessions: Option<Arc<SessionPlan>>,
    repeats: u64,
}

/// Read buffer for a pass over a trace file: 64 KiB, not 1 MiB. A large
/// file touches all of a buffer (which the allocator then keeps resident)
/// where a small one touches a little: 1 MiB buffers made peak memory
/// grow with the file.
const READ_AHEAD: usize = 64 * 1024;

/// Loop guard: a looping window stops here even without a limit hit.
const MAX_REQUESTS: u64 = 50_000_000;

/// Dense numbers for string or integer ids, in order of first use.
#[derive(Default)]
struct Ids(HashMap<String, u32>);

impl Ids {
    fn of(&mut self, id: &Value) -> anyhow::Result<u32> {
        let key = match id {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => bail!("an id must be a string or a number, found {other}"),
        };
        let next = self.0.len() as u32;
        Ok(*self.0.entry(key).or_insert(next))
    }
}

/// How many lines of `file` hold more than white space.
fn non_blank_lines(file: std::fs::File) -> std::io::Result<usize> {
    let mut reader = std::io::BufReader::with_capacity(READ_AHEAD, file);
    let (mut count, mut filled) = (0, false);
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(count + usize::from(filled));
        }
        for &b in buf {
            if b == b'\n' {
                count += usize::from(filled);
                filled = false;
            } else if !b.is_ascii_whitespace() {
                filled = true;
            }
        }
        let n = buf.len();
        reader.consume(n);
    }
}

fn small(v: u64, what: &str) -> anyhow::Result<u32> {
    u32::try_from(v).map_err(|_| anyhow::anyhow!("{what} {v} is too large"))
}

/// What `spec` asks that no trace can give.
fn check_spec(spec: &TraceSpec) -> anyhow::Result<()> {
    if spec.block_tokens == 0 {
        bail!("block-tokens must be at least 1");
    }
    if !(spec.time_scale.is_finite() && spec.time_scale > 0.0) {
        bail!("time-scale must be a positive number, got {}", spec.time_scale);
    }
    if spec.looped && spec.duration_ms.is_none() && spec.max_requests.is_none() {
        bail!("a looping trace needs `duration` or `max-requests` to end");
    }
    Ok(())
}

/// A trace file's lines as read, before its window is chosen: the lines,
/// and the pools their hashes, texts and extras point into.
#[derive(Default)]
struct FileLines {
    lines: Vec<Line>,
    extras: Vec<Extra>,
    hashes: Vec<u64>,
    texts: String,
    /// Dense numbers of the sessions' and the shared prefixes' ids.
    sessions: Ids,
    prefixes: Ids,
    /// The first line's recorded time, ms: the lines' times count from it.
    first_ms: Option<f64>,
    /// Every line of the file, blank ones included.
    lines_in_file: u64,
}

impl FileLines {
    /// Reads the trace file's non-blank lines, checked to be in order of time.
    fn read(spec: &TraceSpec) -> anyhow::Result<Self> {
        let file = std::fs::File::open(&spec.path)?;
        let reader = std::io::BufReader::with_capacity(READ_AHEAD, file);
        // Sized from a first pass, not grown by doubling: growth leaves up
        // to half unused and, while it copies, holds the old and new lists.
        let lines = Vec::with_capacity(non_blank_lines(std::fs::File::open(&spec.path)?)?);
        let mut read = Self { lines, ..Self::default() };
        let mut previous: Option<(u64, f64)> = None;
        for (n, text) in reader.lines().enumerate() {
            let text = text?;
            read.lines_in_file += 1;
            if text.trim().is_empty() {
                continue;
            }
            let number = small(n as u64 + 1, "line number")?;
            let hash_at = small(read.hashes.len() as u64, "hash pool size")?;
            let at = |problem: LineProblem| anyhow::anyhow!("line {number}: {}", problem.message);
            let line = trace_line::parse(spec.format, &text).map_err(at)?;
            trace_line::check_order(line.at_ms, previous).map_err(at)?;
            previous = Some((u64::from(number), line.at_ms));
            read.push(number, hash_at, line, spec)?;
        }
        Ok(read)
    }

    /// Adds line `number` (its hashes from `hash_at` in the pool), with
    /// its text, session and prefix where it has them.
    fn push(
        &mut self,
        number: u32,
        hash_at: u32,
        read: TraceLine<'_>,
        spec: &TraceSpec,
    ) -> anyhow::Result<()> {
        let mut line = Line {
            at_us: 0,
            line: number,
            input_tokens: 0,
            output_tokens: 0,
            hash_at,
            hash_len: 0,
            extra: NONE,
        };
        let mut extra = NO_EXTRA;
        let at_ms = read.at_ms;
        line.output_tokens = small(read.output_tokens, "output_tokens")?;
        line.hash_len = small(read.hash_ids.len() as u64, "hash_ids length")?;
        self.hashes.extend_from_slice(&read.hash_ids);
        let given_text = match read.prompt {
            Prompt::Text(t) => Some(t),
            Prompt::Tokens(n) => {
                line.input_tokens = small(n, "input tokens")?;
                None
            }
        };
        if let Some(s) = &read.session {
            extra.session = self.sessions.of(s).with_context(|| format!("line {number}: session"))?;
        }
        if let Some((p, tokens)) = &read.prefix {
            extra.prefix = self.prefixes.of(p).with_context(|| format!("line {number}: prefix"))?;
            extra.prefix_tokens = small(tokens.unwrap_or(u64::from(spec.block_tokens)), "prefix_tokens")?;
        }
        let first = *self.first_ms.get_or_insert(at_ms);
        line.at_us = ((at_ms - first) * 1000.0).round() as u64;
        if let Some(t) = given_text {
            extra.text_at = small(self.texts.len() as u64, "text pool size")?;
            extra.text_len = small(t.len() as u64, "prompt length")?;
            line.input_tokens = small(t.split_whitespace().count() as u64, "prompt length")?;
            self.texts.push_str(&t);
        }
        if extra.text_at != NONE || extra.session != NONE || extra.prefix != NONE {
            line.extra = small(self.extras.len() as u64, "lines with text, session or prefix")?;
            self.extras.push(extra);
        }
        self.lines.push(line);
        Ok(())
    }
}

impl Trace {
    pub fn load(spec: &TraceSpec) -> anyhow::Result<Self> {
        check_spec(spec)?;
        let FileLines { lines, extras, hashes, texts, lines_in_file, .. } = FileLines::read(spec)?;
        if lines.is_empty() {
            bail!("the trace has no requests");
        }
        let mut trace = Self {
            spec: spec.clone(),
            lines,
            extras,
            hashes,
            texts,
            window_first: 0,
            period_us: 0,
            first_at_us: 0,
            count: 0,
            ideal_cached: Vec::new(),
            passes: 0,
            lines_in_file,
            window_len: 0,
            sessions: None,
            repeats: 1,
        };
        trace.select_window()?;
        // Without hash ids or prefixes no request hits: nothing to keep per request.
        if !trace.hashes.is_empty() || trace.extras.iter().any(|e| e.prefix != NONE) {
            trace.ideal_cached = trace.ideal_cache_hits();
        }
        // Vec growth by doubling leaves up to half of each pool unused.
        trace.extras.shrink_to_fit();
        trace.hashes.shrink_to_fit();
        trace.texts.shrink_to_fit();
        if trace.extras.iter().any(|e| e.session != NONE) {
            let plan = SessionPlan::from_turns(trace.session_of_requests());
            trace.sessions = Some(Arc::new(plan));
        }
        Ok(trace)
    }

    /// Picks the window's lines and counts the run's requests (looping as asked).
    fn select_window(&mut self) -> anyhow::Result<()> {
        // Saturating: a trace's times are the user's (a timestamp of 2e80 reads as u64::MAX).
        let start_us = self.spec.start_ms.saturating_mul(1000);
        let end_us = self.spec.duration_ms.map(|d| d.saturating_mul(1000));
        // The lines are sorted by time: the window is one run of them.
        let inside = |l: &Line| {
            l.at_us >= start_us
                && (self.spec.looped || end_us.is_none_or(|e| l.at_us < start_us.saturating_add(e)))
        };
        let Some(first) = self.lines.iter().position(inside) else {
            bail!("the window (start {} ms) holds no request of the trace", self.spec.start_ms);
        };
        let len = self.lines[first..].iter().take_while(|l| inside(l)).count();
        let last = first + len - 1;
        self.window_first = first as u32;
        self.window_len = len as u64;
        self.first_at_us = self.lines[first].at_us;
        let span = self.lines[last].at_us - self.first_at_us;
        // A new pass starts one mean gap after the last line of the one before.
        self.period_us = span.saturating_add((span / (len as u64 - 1).max(1)).max(1000));
        let limit = self.spec.max_requests.unwrap_or(u64::MAX).min(MAX_REQUESTS);
        let mut count = 0u64;
        'passes: for pass in 0u64.. {
            for k in 0..len as u64 {
                let at = self.unscaled_us(pass * len as u64 + k);
                if count >= limit || end_us.is_some_and(|e| at >= e) {
                    break 'passes;
                }
                count += 1;
            }
            if !self.spec.looped {
                break;
            }
        }
        self.count = count;
        // Whole passes (as before: a partial last pass is not counted).
        self.passes = (count / self.window_len).max(1);
        if count == 0 {
            bail!("the window holds no request of the trace");
        }
        Ok(())
    }

    /// Request `k`'s time after the run's first, µs, before `time-scale`.
    fn unscaled_us(&self, k: u64) -> u64 {
        let (pass, slot) = (k / self.window_len, self.window_first as u64 + k % self.window_len);
        pass.saturating_mul(self.period_us).saturating_add(self.lines[slot as usize].at_us - self.first_at_us)
    }

    /// Request `k` of a run: its line slot and when it is due after the run's start (µs, scaled).
    fn slot_due(&self, k: u64) -> (u32, u64) {
        let k = k % self.count;
        let slot = self.window_first + (k % self.window_len) as u32;
        (slot, (self.unscaled_us(k) as f64 * self.spec.time_scale).round() as u64)
    }

    /// A line's text, session and prefix.
    fn extra(&self, line: &Line) -> Extra {
        if line.extra == NONE { NO_EXTRA } else { self.extras[line.extra as usize] }
    }

    /// The tokens of each request's prompt that an unbounded prefix cache
    /// would already hold when the request arrives, from the trace alone:
    /// the longest run of leading hash ids that an earlier request of the
    /// run also began with, `block_tokens` each (a cache keys a block by
    /// everything before it too), and a shared prefix id seen before. Each
    /// repeat starts from an empty cache.
    fn ideal_cache_hits(&self) -> Vec<u32> {
        let block = self.spec.block_tokens;
        // Every leading run seen so far, by a hash of the ids in it.
        let mut seen_runs = std::collections::HashSet::new();
        let mut seen_prefixes = std::collections::HashSet::new();
        (0..self.count)
            .map(|k| {
                let line = &self.lines[self.slot_due(k).0 as usize];
                let extra = self.extra(line);
                let ids = &self.hashes[line.hash_at as usize..(line.hash_at + line.hash_len) as usize];
                let mut run = 0xcbf2_9ce4_8422_2325u64;
                let mut leading = 0u32;
                let mut still_shared = true;
                for &id in ids {
                    run = SplitMix64::new(run, id).next_u64();
                    still_shared &= !seen_runs.insert(run);
                    leading += u32::from(still_shared);
                }
                let mut hit = leading.saturating_mul(block);
                if extra.prefix != NONE && !seen_prefixes.insert(extra.prefix) {
                    hit = hit.saturating_add(extra.prefix_tokens);
                }
                hit.min(line.input_tokens)
            })
            .collect()
    }

    /// Request `index`'s ideal cached prompt tokens (see [`Self::ideal_cache_hits`]);
    /// `None` for a line sent as its own text (its blocks are unknown).
    pub fn ideal_cached(&self, index: u64) -> Option<u64> {
        let k = (index % self.requests()) as usize;
        let line = &self.lines[self.slot_due(k as u64).0 as usize];
        (self.extra(line).text_at == NONE).then(|| self.ideal_cached.get(k).map_or(0, |&n| u64::from(n)))
    }

    /// Measured requests per repeat.
    pub fn requests(&self) -> u64 {
        self.count
    }

    pub fn set_repeats(&mut self, repeats: u32) {
        self.repeats = u64::from(repeats.max(1));
    }

    /// Due time of request `k` of a run, after its start.
    pub fn due(&self, k: u64) -> Duration {
        Duration::from_micros(self.slot_due(k).1)
    }

    pub fn session_plan(&self) -> Option<Arc<SessionPlan>> {
        self.sessions.clone()
    }

    /// (session key, request slot) of every request of one run, in order:
    /// each pass of a looping window has its own sessions, and a line
    /// without a session is a conversation of one turn.
    pub fn session_of_requests(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let ids = self
            .extras
            .iter()
            .map(|e| e.session)
            .filter(|s| *s != NONE)
            .max()
            .map_or(0, |m| u64::from(m) + 1);
        let solo_base = ids * self.passes;
        (0..self.count).map(move |k| {
            let pass = k / self.window_len.max(1);
            let session = self.extra(&self.lines[self.slot_due(k).0 as usize]).session;
            let key = if session == NONE { solo_base + k } else { pass * ids + u64::from(session) };
            (key, k)
        })
    }

    /// Request `index`'s content, `None` past the measured requests.
    pub fn plan(&self, index: u64, seed: u64, filler: &Filler) -> Option<Planned> {
        let n = self.requests();
        if index >= n * self.repeats {
            return None;
        }
        let (slot, _) = self.slot_due(index % n);
        let line = &self.lines[slot as usize];
        let extra = self.extra(line);
        let mut text = String::with_capacity(line.input_tokens as usize * 5);
        let built = extra.text_at == NONE;
        if built {
            self.build_prompt(line, seed, filler, &mut text);
        } else {
            text.push_str(&self.texts[extra.text_at as usize..(extra.text_at + extra.text_len) as usize]);
        }
        let has_output = line.output_tokens > 0;
        Some(Planned {
            content: Content::Prompt(text),
            max_tokens: line.output_tokens.max(1),
            ignore_eos: self.spec.ignore_eos && has_output,
            origin: Origin {
                trace_line: Some(u64::from(line.line)),
                requested_output_tokens: has_output.then_some(u64::from(line.output_tokens)),
                planned_input_tokens: Some(u64::from(line.input_tokens)),
                ideal_cached_tokens: self.ideal_cached(index),
                ..Origin::default()
            },
            exact_tokens: (built && filler.is_token_exact()).then_some(u64::from(line.input_tokens)),
        })
    }

    /// `input_tokens` words: the hash ids' blocks (or the shared prefix),
    /// then words of this line alone.
    fn build_prompt(&self, line: &Line, seed: u64, filler: &Filler, text: &mut String) {
        let block = u64::from(self.spec.block_tokens);
        let mut left = u64::from(line.input_tokens);
        let ids = &self.hashes[line.hash_at as usize..(line.hash_at + line.hash_len) as usize];
        for &id in ids {
            if left == 0 {
                break;
            }
            let words = left.min(block);
            filler.push(text, &mut SplitMix64::new(seed, streams::HASH_BASE ^ id), words);
            left -= words;
        }
        let extra = self.extra(line);
        if extra.prefix != NONE {
            let words = left.min(u64::from(extra.prefix_tokens));
            let stream = streams::PREFIX_BASE + u64::from(extra.prefix);
            filler.push(text, &mut SplitMix64::new(seed, stream), words);
            left -= words;
        }
        if left > 0 {
            let stream = streams::LINE_BASE + u64::from(line.line);
            filler.push(text, &mut SplitMix64::new(seed, stream), left);
        }
        if !filler.is_token_exact() {
            text.truncate(text.trim_end().len());
        }
    }

    /// The trace's facts for the artifact.
    pub fn describe(&self) -> Value {
        let s = &self.spec;
        json!({
            "kind": "trace",
            "file": s.path.display().to_string(),
            "format": s.format.as_str(),
            "lines_in_file": self.lines_in_file,
            "requests_in_file": self.lines.len(),
            "requests_per_repeat": self.requests(),
            "passes": self.passes,
            "block_tokens": s.block_tokens,
            "time_scale": s.time_scale,
            "start_ms": s.start_ms,
            "duration_ms": s.duration_ms,
            "max_requests": s.max_requests,
            "loop": s.looped,
            "ignore_eos": s.ignore_eos,
            "sessions": self.sessions.as_ref().map(|p| p.count()),
            "span_ms": Some(self.slot_due(self.count - 1).1 as f64 / 1000.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::request::Content;
    use crate::workload::traffic::TraceFormat;

    fn spec(path: &std::path::Path, format: TraceFormat) -> TraceSpec {
        TraceSpec::whole_file(path, format, 4)
    }

    fn write(lines: &str) -> tempfile_path::Temp {
        tempfile_path::Temp::new(lines)
    }

    /// A file that removes itself (no tempfile dependency in this crate).
    mod tempfile_path {
        pub struct Temp(pub std::path::PathBuf);
        impl Temp {
            pub fn new(text: &str) -> Self {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let path = std::env::temp_dir().join(format!(
                    "anvil-trace-test-{}-{}.jsonl",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::write(&path, text).unwrap();
                Self(path)
            }
        }
        impl Drop for Temp {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }

    fn prompt(t: &Trace, i: u64) -> String {
        match t.plan(i, 7, &Filler::SimWords).unwrap().content {
            Content::Prompt(p) => p,
            Content::Messages(_) => unreachable!(),
        }
    }

    #[test]
    fn shared_hash_ids_share_exactly_their_blocks() {
        let f = write(concat!(
            "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1, 2, 3]}\n",
            "{\"timestamp\": 500, \"input_length\": 12, \"output_length\": 5, \"hash_ids\": [1, 2, 9]}\n",
            "\n",
            "{\"timestamp\": 750, \"input_length\": 8, \"output_length\": 0, \"hash_ids\": [4, 5]}\n",
            "{\"timestamp\": 900, \"text_input\": \"as is\", \"output_length\": 3}\n",
        ));
        let t = Trace::load(&spec(&f.0, TraceFormat::Mooncake)).unwrap();
        assert_eq!(t.requests(), 4);
        let words = |i| prompt(&t, i).split(' ').map(str::to_owned).collect::<Vec<_>>();
        let (a, b, c) = (words(0), words(1), words(2));
        assert_eq!((a.len(), b.len(), c.len()), (10, 12, 8), "one word per token");
        assert_eq!(a[..8], b[..8], "ids 1 and 2 shared");
        assert_ne!(a[8..], b[8..10], "3 and 9 differ");
        assert!(c[..4].iter().all(|w| !a.contains(w)), "distinct ids share no block: {c:?} {a:?}");
        assert_eq!(prompt(&t, 3), "as is");
        let p = t.plan(1, 7, &Filler::SimWords).unwrap();
        assert_eq!(p.origin.trace_line, Some(2));
        assert_eq!(p.origin.requested_output_tokens, Some(5));
        assert!(p.ignore_eos);
        assert_eq!(
            t.plan(2, 7, &Filler::SimWords).unwrap().origin.trace_line,
            Some(4),
            "blank lines keep the numbering"
        );
        assert!(t.plan(4, 7, &Filler::SimWords).is_none(), "past the measured requests");
        assert_eq!(t.due(1), Duration::from_millis(500));
        let ideal: Vec<_> = (0..4).map(|i| t.ideal_cached(i)).collect();
        assert_eq!(
            ideal,
            [Some(0), Some(8), Some(0), None],
            "ids 1, 2 seen before line 2; text has no blocks"
        );
        let other_seed = match t.plan(0, 8, &Filler::SimWords).unwrap().content {
            Content::Prompt(p) => p,
            Content::Messages(_) => unreachable!(),
        };
        assert_ne!(prompt(&t, 0), other_seed, "the campaign seed picks the words");
    }

    #[test]
    fn window_time_scale_and_loop() {
        let f = write(
            &(0..10)
                .map(|i| {
                    format!(
                        "{{\"timestamp_ms\": {}, \"input_tokens\": 3, \"output_tokens\": 2}}\n",
                        1000 + i * 100
                    )
                })
                .collect::<String>(),
        );
        let mut s = spec(&f.0, TraceFormat::Jsonl);
        s.start_ms = 200;
        s.duration_ms = Some(300);
        let t = Trace::load(&s).unwrap();
        assert_eq!(t.requests(), 3, "200, 300, 400 ms");
        assert_eq!(t.plan(0, 1, &Filler::SimWords).unwrap().origin.trace_line, Some(3));
        s.time_scale = 0.5;
        let t = Trace::load(&s).unwrap();
        assert_eq!(t.due(2), Duration::from_millis(100), "twice as fast");
        let mut s = spec(&f.0, TraceFormat::Jsonl);
        s.looped = true;
        s.max_requests = Some(25);
        let t = Trace::load(&s).unwrap();
        assert_eq!(t.requests(), 25);
        assert_eq!(t.due(10), Duration::from_millis(1000), "second pass one gap after the first");
        assert_eq!(t.plan(10, 1, &Filler::SimWords).unwrap().origin.trace_line, Some(1));
        s.max_requests = None;
        assert!(Trace::load(&s).unwrap_err().to_string().contains("needs `duration` or `max-requests`"));
    }

    #[test]
    fn bad_lines_name_their_number() {
        let f = write("{\"timestamp\": 0, \"input_length\": 3}\n{\"timestamp\": \"x\"}\n");
        let e = format!("{:#}", Trace::load(&spec(&f.0, TraceFormat::Mooncake)).unwrap_err());
        assert!(e.contains("line 2"), "{e}");
        let f = write("{\"timestamp_ms\": 5, \"output_tokens\": 1}\n");
        let e = format!("{:#}", Trace::load(&spec(&f.0, TraceFormat::Jsonl)).unwrap_err());
        assert!(e.contains("line 1: needs `input_tokens` or `prompt`"), "{e}");
        // A line that says two things is refused by the replay as by the check.
        let f = write(
            "{\"timestamp_ms\": 0, \"input_tokens\": 3, \"output_tokens\": 1}\n{\"timestamp_ms\": 5, \"input_tokens\": 3, \"prompt\": \"a\", \"output_tokens\": 1}\n",
        );
        let e = format!("{:#}", Trace::load(&spec(&f.0, TraceFormat::Jsonl)).unwrap_err());
        assert!(e.contains("line 2: holds both `input_tokens` and `prompt`"), "{e}");
    }
}
