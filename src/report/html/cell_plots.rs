//! The per-request numbers behind one cell's plots, read from its artifact
//! file when the cell is drawn, in memory that does not grow with the cell:
//! the records are streamed once into an unlinked temporary file of
//! fixed-size rows (the few fields the plots use), and each plot then reads
//! the one column it needs, so at most one column is held at a time. Pooled
//! chunk gaps are counted per distinct µs value, failures per class.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt as _;
use std::path::Path;

use crate::report::model::Timing;

/// Row columns, in order.
pub(super) mod col {
    pub const REQUEST_INDEX: usize = 0;
    pub const REPEAT: usize = 1;
    pub const ACTUAL_SEND: usize = 2;
    pub const FINISHED: usize = 3;
    pub const TTFT: usize = 4;
    pub const TIME_TO_FIRST_OUTPUT: usize = 5;
    pub const E2E: usize = 6;
    pub const TPOT: usize = 7;
    pub const DECODE: usize = 8;
    pub const OUTPUT_TOKENS: usize = 9;
    pub const ELIGIBLE: usize = 10;
    /// Index into [`super::CellPlots::failure_classes`]; absent without a failure.
    pub const FAILURE: usize = 11;
    pub const COUNT: usize = 12;
}

pub(super) type Row = [f64; col::COUNT];
const ROW_BYTES: usize = col::COUNT * 8;

/// One cell's records as the plots read them.
pub(super) struct CellPlots {
    rows: File,
    /// Records in the artifact.
    pub requests: usize,
    /// Eligible requests' chunk gaps (µs) and how many of each.
    pub gaps_us: BTreeMap<u32, u64>,
    /// Distinct failure classes, in the order first seen.
    pub failure_classes: Vec<String>,
    /// Requests per failure class.
    pub failures: BTreeMap<String, u64>,
    pub canaries_checked: usize,
    pub canaries_passed: usize,
    /// The room of the last column given back ([`CellPlots::recycle`]):
    /// every plot's column is loaded into the same memory (an allocator
    /// keeps freed room a while; a column's worth each would add up).
    spare: RefCell<Vec<f64>>,
}

/// An absent value in a row (the records' fields are finite when present).
fn absent() -> f64 {
    f64::NAN
}

/// A row's value, `None` where the record had none.
pub(super) fn get(row: &Row, c: usize) -> Option<f64> {
    Some(row[c]).filter(|v| !v.is_nan())
}

impl CellPlots {
    /// Streams the artifact at `path` into rows. `None` when it does not read.
    pub fn read(path: &Path) -> Option<CellPlots> {
        let rows = tempfile::tempfile().ok()?;
        let mut out = BufWriter::with_capacity(64 * 1024, &rows);
        let mut plots = CellPlots {
            rows: rows.try_clone().ok()?,
            requests: 0,
            gaps_us: BTreeMap::new(),
            failure_classes: Vec::new(),
            failures: BTreeMap::new(),
            canaries_checked: 0,
            canaries_passed: 0,
            spare: RefCell::new(Vec::new()),
        };
        anvil_evidence::artifact_file::for_each_record(path, |_, t: Timing| {
            let row = plots.row_of(&t);
            let mut bytes = [0u8; ROW_BYTES];
            for (b, v) in bytes.chunks_exact_mut(8).zip(row) {
                b.copy_from_slice(&v.to_le_bytes());
            }
            out.write_all(&bytes).map_err(|e| format!("writing the plot rows: {e}"))
        })
        .ok()?;
        out.flush().ok()?;
        drop(out);
        Some(plots)
    }

    /// One record's row; its gaps, failure and canary are counted on the way.
    fn row_of(&mut self, t: &Timing) -> Row {
        self.requests += 1;
        if t.performance_eligible {
            for &gap in &t.chunk_gaps_us {
                *self.gaps_us.entry(gap).or_default() += 1;
            }
        }
        if let Some(canary) = &t.request_canary {
            self.canaries_checked += 1;
            self.canaries_passed += usize::from(canary.passed);
        }
        let failure = t.failure.as_ref().map(|f| {
            *self.failures.entry(f.class.clone()).or_default() += 1;
            match self.failure_classes.iter().position(|c| *c == f.class) {
                Some(i) => i,
                None => {
                    self.failure_classes.push(f.class.clone());
                    self.failure_classes.len() - 1
                }
            }
        });
        let or_absent = |v: Option<f64>| v.unwrap_or_else(absent);
        let mut row = [absent(); col::COUNT];
        row[col::REQUEST_INDEX] = t.request_index as f64;
        row[col::REPEAT] = f64::from(t.repeat);
        row[col::ACTUAL_SEND] = t.actual_send_ms;
        row[col::FINISHED] = t.finished_ms;
        row[col::TTFT] = or_absent(t.ttft_ms);
        row[col::TIME_TO_FIRST_OUTPUT] = or_absent(t.time_to_first_output_ms);
        row[col::E2E] = or_absent(t.e2e_ms);
        row[col::TPOT] = or_absent(t.tpot_ms);
        row[col::DECODE] = or_absent(t.decode_tok_s);
        row[col::OUTPUT_TOKENS] = or_absent(t.output_tokens.map(|n| n as f64));
        row[col::ELIGIBLE] = f64::from(u8::from(t.performance_eligible));
        row[col::FAILURE] = or_absent(failure.map(|i| i as f64));
        row
    }

    /// Calls `f` with every row, in the artifact's order (read at offsets,
    /// a block at a time: the file's cursor is the writer's).
    pub fn scan(&self, mut f: impl FnMut(&Row)) {
        const BLOCK_ROWS: usize = 1024;
        let mut block = vec![0u8; BLOCK_ROWS * ROW_BYTES];
        let mut first = 0;
        while first < self.requests {
            let rows = BLOCK_ROWS.min(self.requests - first);
            let bytes = &mut block[..rows * ROW_BYTES];
            if self.rows.read_exact_at(bytes, (first * ROW_BYTES) as u64).is_err() {
                return;
            }
            for one in bytes.chunks_exact(ROW_BYTES) {
                f(&decode(one));
            }
            first += rows;
        }
    }

    /// Column `c` of the eligible requests, sorted, absent values left out.
    pub fn eligible_sorted(&self, c: usize) -> Vec<f64> {
        self.sorted(c, |row| row[col::ELIGIBLE] == 1.0)
    }

    /// Column `c` of the rows `keep` selects, sorted, absent values left
    /// out: the one column held at a time (sized to the rows, sorted in
    /// place without a merge buffer).
    pub fn sorted(&self, c: usize, keep: impl Fn(&Row) -> bool) -> Vec<f64> {
        let mut values = std::mem::take(&mut *self.spare.borrow_mut());
        values.clear();
        values.reserve(self.requests);
        self.scan(|row| {
            if keep(row)
                && let Some(v) = get(row, c).filter(|v| v.is_finite())
            {
                values.push(v);
            }
        });
        values.sort_unstable_by(f64::total_cmp);
        values
    }

    /// Keeps `values`' room for the next column [`CellPlots::sorted`] loads.
    pub fn recycle(&self, values: Vec<f64>) {
        let mut spare = self.spare.borrow_mut();
        if values.capacity() > spare.capacity() {
            *spare = values;
        }
    }

    /// Every `step`-th request in send order (the 1st, the step+1-th, …),
    /// found through the sorted send times alone (one column): the rows
    /// whose send time is one of those order statistics, in send order.
    pub fn every_in_send_order(&self, step: usize) -> Vec<Row> {
        let sends = self.sorted(col::ACTUAL_SEND, |_| true);
        // How many rows of each wanted send time to take (ties are rare).
        let mut wanted: HashMap<u64, usize> = HashMap::new();
        for v in sends.iter().step_by(step.max(1)) {
            *wanted.entry(v.to_bits()).or_default() += 1;
        }
        self.recycle(sends);
        let mut shown: Vec<Row> = Vec::new();
        self.scan(|row| {
            if let Some(left) = wanted.get_mut(&row[col::ACTUAL_SEND].to_bits()).filter(|n| **n > 0) {
                *left -= 1;
                shown.push(*row);
            }
        });
        // Stable: rows sent at the same moment stay in the artifact's order.
        shown.sort_by(|a, b| a[col::ACTUAL_SEND].total_cmp(&b[col::ACTUAL_SEND]));
        shown
    }

    /// The failure class of a row, if it failed.
    pub fn failure_of(&self, row: &Row) -> Option<&str> {
        get(row, col::FAILURE).and_then(|i| self.failure_classes.get(i as usize)).map(String::as_str)
    }
}

fn decode(bytes: &[u8]) -> Row {
    let mut row = [0.0; col::COUNT];
    for (v, b) in row.iter_mut().zip(bytes.chunks_exact(8)) {
        *v = f64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    }
    row
}
