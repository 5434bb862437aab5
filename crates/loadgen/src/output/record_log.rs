//! Finished records streamed out of memory as they complete.
//!
//! A writer thread takes each finished [`RequestRecord`] from the runtime
//! (so serializing and writing never delay a send or a read) and writes it
//! to three unlinked temporary files next to where the artifact goes:
//! - `timings`: the record as it appears in the artifact's
//!   `request_timings` (pretty JSON, already indented for its place), so
//!   writing the artifact copies bytes and never re-parses a float;
//! - `failures`: the artifact's `failures` entry of a failed request;
//! - `rows`: a fixed-size binary row of the record's numbers at the slot of
//!   its request index, so the rows file is in request order and every
//!   distribution is computed by reading one column of it at a time.
//!
//! Chunk gaps (integer µs) are counted per distinct value and repeat, which
//! keeps the pooled chunk-gap distribution exact (nearest-rank, and the
//! same sums in the same order as sorting every gap) in memory bounded by
//! the number of distinct gaps, not by the number of chunks.
//!
//! What stays in memory per request is only what requests in flight hold.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use serde_json::json;

use crate::observe::record::RequestRecord;

/// Columns of a row. Absent values are NaN; flags are 0 or 1.
pub mod col {
    pub const REPEAT: usize = 0;
    pub const TARGET: usize = 1;
    pub const ELIGIBLE: usize = 2;
    pub const SLO_MET: usize = 3;
    pub const SUCCESSFUL: usize = 4;
    pub const HTTP_2XX: usize = 5;
    pub const CONTROLLED: usize = 6;
    pub const CONTROLLED_EXACT: usize = 7;
    pub const CONTROLLED_OBSERVABLE: usize = 8;
    pub const CANARY: usize = 9;
    pub const CANARY_PASSED: usize = 10;
    pub const OUTPUT_TOKENS: usize = 11;
    pub const DECODE: usize = 12;
    pub const E2E: usize = 13;
    pub const PREFILL: usize = 14;
    pub const GENERATION: usize = 15;
    pub const MEAN_ITL: usize = 16;
    pub const MEAN_TPOT: usize = 17;
    pub const PROMPT_TOKENS: usize = 18;
    pub const TFO: usize = 19;
    pub const TPOT: usize = 20;
    pub const TTFT: usize = 21;
    pub const VISIBLE_GENERATION: usize = 22;
    pub const TOKENS_PER_CHUNK: usize = 23;
    pub const SEND_LAG: usize = 24;
    pub const READ_DELAY: usize = 25;
    pub const ACTUAL_SEND: usize = 26;
    pub const FINISHED: usize = 27;
    pub const CACHED_PROMPT_TOKENS: usize = 28;
    pub const CONTENT_CHUNKS: usize = 29;
    pub const REASONING_CHUNKS: usize = 30;
    pub const PLANNED_CONTEXT: usize = 31;
    pub const FAILURE_CLASS: usize = 32;
    pub const TIMINGS_AT: usize = 33;
    pub const TIMINGS_LEN: usize = 34;
    pub const FAILURE_AT: usize = 35;
    pub const FAILURE_LEN: usize = 36;
    pub const CONNECT: usize = 37;
    pub const TTFT_FROM_SCHEDULE: usize = 38;
    pub const E2E_FROM_SCHEDULE: usize = 39;
    pub const STAGE: usize = 40;
    /// The first content's stamp error bound, ms (`client_error`); NaN: read-time stamp.
    pub const STAMP_BOUND: usize = 41;
    pub const PRESENT: usize = 42;
    pub const COUNT: usize = 43;
}

pub type Row = [f64; col::COUNT];
const ROW_BYTES: usize = col::COUNT * 8;

/// Failure classes in the order of their `FAILURE_CLASS` code.
pub const FAILURE_CLASSES: [crate::observe::failure::FailureClass; 12] = {
    use crate::observe::failure::FailureClass::*;
    [
        HttpStatus,
        Timeout,
        Connect,
        Disconnect,
        MalformedStream,
        StreamError,
        MissingUsage,
        CanaryFailure,
        TruncatedCapture,
        ControlledOutput,
        // Appended: a stored log's codes keep their meaning.
        Rejected,
        Stalled,
    ]
};

fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

fn opt(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

/// The value of a column, `None` where absent.
pub fn get(row: &Row, c: usize) -> Option<f64> {
    let v = row[c];
    (!v.is_nan()).then_some(v)
}

pub fn is(row: &Row, c: usize) -> bool {
    row[c] == 1.0
}

fn row_of(r: &RequestRecord, target: usize) -> Row {
    let mut row = [f64::NAN; col::COUNT];
    row[col::REPEAT] = f64::from(r.repeat);
    row[col::TARGET] = target as f64;
    row[col::ELIGIBLE] = flag(r.performance_eligible);
    row[col::SLO_MET] = flag(r.slo_met == Some(true));
    row[col::SUCCESSFUL] = flag(r.failure.as_ref().is_none_or(|f| f.class.is_contract_violation()));
    row[col::HTTP_2XX] = flag(r.http_status.is_some_and(|s| (200..300).contains(&s)));
    if let Some(c) = &r.controlled_output {
        row[col::CONTROLLED] = 1.0;
        row[col::CONTROLLED_EXACT] = flag(c.exact);
        row[col::CONTROLLED_OBSERVABLE] = flag(c.observable);
    } else {
        row[col::CONTROLLED] = 0.0;
    }
    row[col::CANARY] = flag(r.request_canary.is_some());
    row[col::CANARY_PASSED] = flag(r.request_canary.as_ref().is_some_and(|c| c.passed));
    row[col::OUTPUT_TOKENS] = opt(r.output_tokens.map(|v| v as f64));
    row[col::DECODE] = opt(r.decode_tok_s);
    row[col::E2E] = opt(r.e2e_ms);
    row[col::PREFILL] = opt(r.effective_prefill_tok_s);
    row[col::GENERATION] = opt(r.generation_ms);
    row[col::MEAN_ITL] = opt(r.mean_inter_token_latency_ms);
    row[col::MEAN_TPOT] = opt(r.mean_time_per_output_token_ms);
    row[col::PROMPT_TOKENS] = opt(r.prompt_tokens.map(|v| v as f64));
    row[col::TFO] = opt(r.time_to_first_output_ms);
    row[col::TPOT] = opt(r.tpot_ms);
    row[col::TTFT] = opt(r.ttft_ms);
    row[col::VISIBLE_GENERATION] = opt(r.visible_generation_ms);
    row[col::TOKENS_PER_CHUNK] = opt(r.tokens_per_chunk);
    row[col::SEND_LAG] = r.send_lag_ms;
    row[col::READ_DELAY] = opt(r.first_content_read_delay_us.map(|us| f64::from(us) / 1000.0));
    row[col::ACTUAL_SEND] = r.actual_send_ms;
    row[col::FINISHED] = r.finished_ms;
    row[col::CACHED_PROMPT_TOKENS] = opt(r.cached_prompt_tokens.map(|v| v as f64));
    row[col::CONTENT_CHUNKS] = f64::from(r.content_chunks);
    row[col::REASONING_CHUNKS] = f64::from(r.reasoning_chunks);
    row[col::PLANNED_CONTEXT] = r.planned_context_tokens as f64;
    row[col::FAILURE_CLASS] = opt(r
        .failure
        .as_ref()
        .and_then(|f| FAILURE_CLASSES.iter().position(|c| *c == f.class))
        .map(|i| i as f64));
    row[col::CONNECT] = opt(r.connect_ms);
    row[col::TTFT_FROM_SCHEDULE] = opt(r.ttft_from_schedule_ms);
    row[col::E2E_FROM_SCHEDULE] = opt(r.e2e_from_schedule_ms);
    row[col::STAGE] = opt(r.stage.map(f64::from));
    row[col::STAMP_BOUND] = opt(r.stamp_bound_ms());
    row[col::PRESENT] = 1.0;
    row
}

/// Exact counts of integer chunk gaps (µs).
#[derive(Debug, Default, Clone)]
pub struct GapCounts {
    counts: HashMap<u32, u64>,
}

impl GapCounts {
    fn add(&mut self, gaps: &[u32]) {
        for g in gaps {
            *self.counts.entry(*g).or_default() += 1;
        }
    }

    pub fn merge(&mut self, other: &GapCounts) {
        for (g, c) in &other.counts {
            *self.counts.entry(*g).or_default() += c;
        }
    }

    /// (gap µs, count), smallest gap first.
    pub fn sorted(&self) -> Vec<(u32, u64)> {
        let mut v: Vec<(u32, u64)> = self.counts.iter().map(|(g, c)| (*g, *c)).collect();
        v.sort_unstable();
        v
    }
}

/// What the writer thread hands back.
pub struct Stored {
    timings: File,
    failures: File,
    rows: File,
    /// Request slots (measured requests of all repeats).
    pub slots: u64,
    /// Eligible requests' chunk gaps, per repeat.
    pub gaps: BTreeMap<u32, GapCounts>,
    /// Records kept in memory too (only when asked, for [`crate::run_cell`]).
    pub kept: Vec<RequestRecord>,
}

/// The runtime's handle: send records, then [`RecordLog::finish`].
pub struct RecordLog {
    tx: Option<mpsc::Sender<Vec<RequestRecord>>>,
    /// Records not yet handed over: the thread gets them [`BATCH`] at a
    /// time, so it is woken (a futex call and two context switches on the
    /// client's core) once per batch, not once per request.
    pending: std::sync::Mutex<Vec<RequestRecord>>,
    thread: Option<JoinHandle<io::Result<Stored>>>,
}

/// Records handed to the writer thread at once.
const BATCH: usize = 64;

/// Rows written with one `pwrite` at most (consecutive request indices).
const ROW_RUN: usize = 64;

static SERIAL: AtomicU64 = AtomicU64::new(0);

/// A new file in `dir`, unlinked at once: it lives as long as its handle.
fn anonymous_file(dir: &Path, what: &str) -> io::Result<File> {
    std::fs::create_dir_all(dir)?;
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!(".anvil-loadgen-{}-{serial}-{what}.tmp", std::process::id()));
    let file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

/// `text` with every line after the first indented by `indent` spaces (JSON
/// strings hold no raw line breaks, so this only moves structure).
fn indented(text: &[u8], indent: usize) -> Vec<u8> {
    let pad = vec![b' '; indent];
    let mut out = Vec::with_capacity(text.len() + text.len() / 8);
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
            out.extend_from_slice(&pad);
        }
        out.extend_from_slice(line);
    }
    out
}

/// How a value `indent` spaces deep is written in the pretty artifact
/// (4: an element of a top-level array).
pub fn element_bytes(value: &impl serde::Serialize, indent: usize) -> io::Result<Vec<u8>> {
    Ok(indented(&serde_json::to_vec_pretty(value)?, indent))
}

impl RecordLog {
    /// Starts the writer thread with its files in `dir`; `targets` are the
    /// target labels in order; `keep` also keeps every record in memory.
    pub fn create(dir: &Path, targets: Vec<String>, keep: bool) -> io::Result<Self> {
        let mut timings = io::BufWriter::with_capacity(256 * 1024, anonymous_file(dir, "timings")?);
        let mut failures = io::BufWriter::new(anonymous_file(dir, "failures")?);
        let rows = anonymous_file(dir, "rows")?;
        let (tx, rx) = mpsc::channel::<Vec<RequestRecord>>();
        let thread = std::thread::Builder::new().name("anvil-loadgen-records".into()).spawn(move || {
            // Writing records can wait: never preempt the thread that stamps reads.
            lower_priority();
            let (mut timings_at, mut failures_at, mut slots) = (0u64, 0u64, 0u64);
            let mut gaps: BTreeMap<u32, GapCounts> = BTreeMap::new();
            let mut kept = Vec::new();
            // Rows of consecutive indices go out in one write: (first index, bytes).
            let mut run: (u64, Vec<u8>) = (0, Vec::with_capacity(ROW_RUN * ROW_BYTES));
            for record in rx.into_iter().flatten() {
                let target = targets.iter().position(|t| *t == record.target).unwrap_or(0);
                let mut row = row_of(&record, target);
                let bytes = element_bytes(&record, 4)?;
                timings.write_all(&bytes)?;
                row[col::TIMINGS_AT] = timings_at as f64;
                row[col::TIMINGS_LEN] = bytes.len() as f64;
                timings_at += bytes.len() as u64;
                if let Some(f) = &record.failure {
                    let entry = json!({
                        "request_index": record.request_index,
                        "repeat": record.repeat,
                        "target": record.target,
                        "class": f.class,
                        "detail": f.detail,
                        "http_status": record.http_status,
                    });
                    let bytes = element_bytes(&entry, 4)?;
                    failures.write_all(&bytes)?;
                    row[col::FAILURE_AT] = failures_at as f64;
                    row[col::FAILURE_LEN] = bytes.len() as f64;
                    failures_at += bytes.len() as u64;
                }
                if record.performance_eligible {
                    gaps.entry(record.repeat).or_default().add(&record.chunk_gaps_us);
                }
                let mut raw = [0u8; ROW_BYTES];
                for (i, v) in row.iter().enumerate() {
                    raw[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
                }
                let next = run.0 + (run.1.len() / ROW_BYTES) as u64;
                if !run.1.is_empty() && (record.request_index != next || run.1.len() >= ROW_RUN * ROW_BYTES) {
                    rows.write_all_at(&run.1, run.0 * ROW_BYTES as u64)?;
                    run.1.clear();
                }
                if run.1.is_empty() {
                    run.0 = record.request_index;
                }
                run.1.extend_from_slice(&raw);
                slots = slots.max(record.request_index + 1);
                if keep {
                    kept.push(record);
                }
            }
            if !run.1.is_empty() {
                rows.write_all_at(&run.1, run.0 * ROW_BYTES as u64)?;
            }
            let timings = timings.into_inner().map_err(|e| e.into_error())?;
            let failures = failures.into_inner().map_err(|e| e.into_error())?;
            kept.sort_by_key(|r| r.request_index);
            Ok(Stored { timings, failures, rows, slots, gaps, kept })
        })?;
        Ok(Self { tx: Some(tx), pending: Default::default(), thread: Some(thread) })
    }

    pub fn push(&self, record: RequestRecord) {
        let Some(tx) = &self.tx else { return };
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.push(record);
        if pending.len() >= BATCH {
            let batch = std::mem::replace(&mut *pending, Vec::with_capacity(BATCH));
            drop(pending);
            let _ = tx.send(batch);
        }
    }

    /// Waits for every record to be written.
    pub fn finish(mut self) -> io::Result<Stored> {
        let rest = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        if let Some(tx) = &self.tx
            && !rest.is_empty()
        {
            let _ = tx.send(rest);
        }
        self.tx = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Err(io::Error::other("the record writer thread died")),
        }
    }
}

impl Drop for RecordLog {
    fn drop(&mut self) {
        self.tx = None; // the thread ends; its files go with it
    }
}

/// Reads `into.len()` bytes at `at`; bytes past the end of the file (slots
/// never written, holes) read as zeros.
fn read_at_most(file: &File, into: &mut [u8], at: u64) -> io::Result<()> {
    let mut done = 0;
    while done < into.len() {
        match file.read_at(&mut into[done..], at + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    into[done..].fill(0);
    Ok(())
}

impl Stored {
    /// Calls `f` with every stored row, in request order.
    pub fn scan(&self, mut f: impl FnMut(&Row)) -> io::Result<()> {
        const BLOCK: u64 = 512;
        let mut raw = vec![0u8; BLOCK as usize * ROW_BYTES];
        let mut row = [0f64; col::COUNT];
        let mut first = 0u64;
        while first < self.slots {
            let rows = BLOCK.min(self.slots - first);
            let bytes = &mut raw[..rows as usize * ROW_BYTES];
            read_at_most(&self.rows, bytes, first * ROW_BYTES as u64)?;
            for one in bytes.chunks_exact(ROW_BYTES) {
                for (v, b) in row.iter_mut().zip(one.chunks_exact(8)) {
                    *v = f64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
                }
                if is(&row, col::PRESENT) {
                    f(&row);
                }
            }
            first += rows;
        }
        Ok(())
    }

    /// Values of column `c` over the rows `keep` selects (absent values skipped).
    pub fn column(&self, c: usize, keep: impl Fn(&Row) -> bool) -> io::Result<Vec<f64>> {
        // Room for every slot up front: grown by doubling, a column would
        // end up to twice its size, and a regrowth holds old and new at once.
        let mut out = Vec::with_capacity(self.slots as usize);
        self.scan(|row| {
            if keep(row)
                && let Some(v) = get(row, c)
            {
                out.push(v);
            }
        })?;
        Ok(out)
    }

    /// Copies the stored `request_timings` elements (or `failures` entries)
    /// into `out` as the body of a pretty top-level array.
    pub fn write_array(&self, failures: bool, out: &mut impl Write) -> io::Result<()> {
        let (file, at, len) = if failures {
            (&self.failures, col::FAILURE_AT, col::FAILURE_LEN)
        } else {
            (&self.timings, col::TIMINGS_AT, col::TIMINGS_LEN)
        };
        // Each element copied as its row is scanned (rows come in request
        // order): nothing held per request, not even the offsets.
        let mut buf = Vec::new();
        let mut written = 0usize;
        let mut failed = None;
        self.scan(|row| {
            let (Some(a), Some(l)) = (get(row, at), get(row, len)) else { return };
            if failed.is_some() {
                return;
            }
            let mut copy = || -> io::Result<()> {
                buf.resize(l as usize, 0);
                file.read_exact_at(&mut buf, a as u64)?;
                out.write_all(if written == 0 { b"[\n    " } else { b",\n    " })?;
                out.write_all(&buf)
            };
            match copy() {
                Ok(()) => written += 1,
                Err(e) => failed = Some(e),
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        out.write_all(if written == 0 { b"[]" } else { b"\n  ]" })
    }

    /// The stored records, parsed back, in request order.
    pub fn records(&self) -> io::Result<Vec<RequestRecord>> {
        let mut out = Vec::new();
        let mut spans = Vec::new();
        self.scan(|row| {
            if let (Some(a), Some(l)) = (get(row, col::TIMINGS_AT), get(row, col::TIMINGS_LEN)) {
                spans.push((a as u64, l as usize));
            }
        })?;
        let mut buf = Vec::new();
        for (a, l) in spans {
            buf.resize(l, 0);
            self.timings.read_exact_at(&mut buf, a)?;
            out.push(serde_json::from_slice(&buf)?);
        }
        Ok(out)
    }
}

/// `SCHED_BATCH` for this thread: the scheduler then does not let it
/// preempt the client's interactive threads (measured: ~2,300 interruptions
/// of 0.3–1.3 ms per C=256 cell otherwise; benches/ground_truth.rs).
fn lower_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler on the calling thread (pid 0) with a valid param; failure is harmless.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &param);
    }
}
