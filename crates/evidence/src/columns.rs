//! The per-request numbers the population statistics need, kept out of
//! memory: one fixed-size binary row per record (f64, little-endian; NaN
//! for "no value", which no JSON number is) in an unlinked temporary file.
//! A statistic loads the one column it needs, filtered to its population,
//! in record order, and drops it before the next: memory holds one column,
//! never the records.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use crate::stats::Ordered;

/// The columns of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    OutputTokens,
    DecodeTokS,
    E2e,
    EffectivePrefill,
    Generation,
    MeanInterToken,
    MeanTimePerOutputToken,
    PromptTokens,
    TimeToFirstOutput,
    Tpot,
    Ttft,
    VisibleGeneration,
    TokensPerChunk,
    SendLag,
    FirstContentReadDelayUs,
    TtftFromSchedule,
    E2eFromSchedule,
    ActualSend,
    Finished,
    /// `output_tokens` read as an integer (sums and token rates use it).
    OutputTokensInt,
    /// The record's client-error stamp bound ([`crate::client_error`]).
    StampBound,
    Repeat,
    Stage,
    /// Index of the record's `target` label among the distinct labels seen.
    Target,
    /// 1 when performance-eligible, else 0.
    Eligible,
}

pub const NCOLS: usize = Col::Eligible as usize + 1;
const ROW_BYTES: usize = NCOLS * 8;

/// Per-request numeric keys, read as `Value::as_f64`, and their columns.
pub const KEYED: [(&str, Col); 19] = [
    ("output_tokens", Col::OutputTokens),
    ("decode_tok_s", Col::DecodeTokS),
    ("e2e_ms", Col::E2e),
    ("effective_prefill_tok_s", Col::EffectivePrefill),
    ("generation_ms", Col::Generation),
    ("mean_inter_token_latency_ms", Col::MeanInterToken),
    ("mean_time_per_output_token_ms", Col::MeanTimePerOutputToken),
    ("prompt_tokens", Col::PromptTokens),
    ("time_to_first_output_ms", Col::TimeToFirstOutput),
    ("tpot_ms", Col::Tpot),
    ("ttft_ms", Col::Ttft),
    ("visible_generation_ms", Col::VisibleGeneration),
    ("tokens_per_chunk", Col::TokensPerChunk),
    ("send_lag_ms", Col::SendLag),
    ("first_content_read_delay_us", Col::FirstContentReadDelayUs),
    ("ttft_from_schedule_ms", Col::TtftFromSchedule),
    ("e2e_from_schedule_ms", Col::E2eFromSchedule),
    ("actual_send_ms", Col::ActualSend),
    ("finished_ms", Col::Finished),
];

/// The column of a per-request numeric key.
pub fn of_key(key: &str) -> Option<Col> {
    KEYED.iter().find(|(k, _)| *k == key).map(|(_, c)| *c)
}

/// One record's numbers.
#[derive(Debug, Clone, Copy)]
pub struct Row([f64; NCOLS]);

impl Default for Row {
    fn default() -> Self {
        Self([f64::NAN; NCOLS])
    }
}

impl Row {
    pub fn get(&self, c: Col) -> Option<f64> {
        let v = self.0[c as usize];
        (!v.is_nan()).then_some(v)
    }

    pub fn set(&mut self, c: Col, v: Option<f64>) {
        self.0[c as usize] = v.unwrap_or(f64::NAN);
    }

    pub fn eligible(&self) -> bool {
        self.0[Col::Eligible as usize] == 1.0
    }

    /// The record's repeat (0 when it has none).
    pub fn repeat(&self) -> u64 {
        self.get(Col::Repeat).map_or(0, |r| r as u64)
    }

    pub fn is(&self, c: Col, id: u64) -> bool {
        self.get(c) == Some(id as f64)
    }
}

/// Rows being written, one per record, in record order.
pub struct RowWriter {
    out: BufWriter<File>,
    written: usize,
}

impl RowWriter {
    pub fn new() -> io::Result<Self> {
        Ok(Self { out: BufWriter::with_capacity(1 << 16, tempfile::tempfile()?), written: 0 })
    }

    pub fn push(&mut self, row: &Row) -> io::Result<()> {
        let mut bytes = [0u8; ROW_BYTES];
        for (chunk, v) in bytes.chunks_exact_mut(8).zip(row.0) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        self.written += 1;
        self.out.write_all(&bytes)
    }

    pub fn finish(self) -> io::Result<Rows> {
        let file = self.out.into_inner().map_err(io::IntoInnerError::into_error)?;
        Ok(Rows { file, len: self.written, failed: RefCell::new(None), spare: RefCell::new(Vec::new()) })
    }
}

/// The written rows, read back by scans. A read error of the temporary
/// file is kept (the scan yields no more rows) and reported by [`Rows::error`].
pub struct Rows {
    file: File,
    /// Rows written: room enough for any column of them.
    len: usize,
    failed: RefCell<Option<io::Error>>,
    /// The room of the last column given back ([`Rows::recycle`]): every
    /// statistic loads into the same memory instead of allocating its own
    /// (an allocator keeps freed room a while; many columns' worth would add up).
    spare: RefCell<Vec<f64>>,
}

impl Rows {
    /// Calls `each` with every row, in record order.
    pub fn scan(&self, mut each: impl FnMut(&Row)) {
        if let Err(e) = self.try_scan(&mut each) {
            self.failed.borrow_mut().get_or_insert(e);
        }
    }

    fn try_scan(&self, each: &mut impl FnMut(&Row)) -> io::Result<()> {
        let mut file = &self.file;
        file.seek(SeekFrom::Start(0))?;
        let mut input = BufReader::with_capacity(1 << 16, file);
        let mut bytes = [0u8; ROW_BYTES];
        let mut row = Row::default();
        loop {
            match input.read_exact(&mut bytes) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e),
            }
            for (v, chunk) in row.0.iter_mut().zip(bytes.chunks_exact(8)) {
                let mut b = [0u8; 8];
                b.copy_from_slice(chunk);
                *v = f64::from_le_bytes(b);
            }
            each(&row);
        }
    }

    /// The values of `col` of the rows `keep` selects, in record order,
    /// in room for every row taken once (grown by doubling, a column would
    /// end up to twice its size).
    pub fn column(&self, col: Col, keep: impl Fn(&Row) -> bool) -> Vec<f64> {
        let mut out = self.buffer(self.len);
        self.scan(|r| {
            if let Some(v) = r.get(col).filter(|_| keep(r)) {
                out.push(v);
            }
        });
        out
    }

    /// An empty buffer with room for `at_most` values: the spare one when
    /// there is one. Give it back with [`Rows::recycle`].
    fn buffer(&self, at_most: usize) -> Vec<f64> {
        let mut b = std::mem::take(&mut *self.spare.borrow_mut());
        b.clear();
        b.reserve(at_most);
        b
    }

    /// Keeps `v`'s room for the next column (the larger one, when two are given back).
    pub fn recycle(&self, v: Vec<f64>) {
        let mut spare = self.spare.borrow_mut();
        if v.capacity() > spare.capacity() {
            *spare = v;
        }
    }

    /// The first read error any scan met.
    pub fn error(&self) -> Option<io::Error> {
        self.failed.borrow_mut().take()
    }
}

/// One column of some rows, in record order, visited by reading the row
/// file again ([`Ordered`]): a statistic holds none of its values, and
/// finds its order statistics by selection ([`crate::select`]).
pub struct Column<'r> {
    rows: &'r Rows,
    col: Col,
    member: &'r dyn Fn(&Row) -> bool,
    eligible_only: bool,
    /// Each value is divided by it (1000 for µs read as ms; 1 is exact).
    div: f64,
    len: usize,
}

impl<'r> Column<'r> {
    pub fn new(
        rows: &'r Rows,
        col: Col,
        (member, eligible_only): (&'r dyn Fn(&Row) -> bool, bool),
        div: f64,
    ) -> Self {
        Self { rows, col, member, eligible_only, div, len: 0 }
    }

    fn keep(&self, r: &Row) -> bool {
        (self.member)(r) && (!self.eligible_only || r.eligible())
    }

    /// Counts the values (one visit), so that [`Ordered::len`] is known
    /// without loading them.
    pub fn count(&mut self) -> usize {
        let mut n = 0;
        self.rows.scan(|r| n += usize::from(r.get(self.col).is_some() && self.keep(r)));
        self.len = n;
        n
    }

    /// The values at the 1-based `ranks` of their ascending order, found
    /// without holding the column ([`crate::select`]); after [`Column::count`].
    pub fn at_ranks(&self, ranks: &[usize]) -> std::collections::BTreeMap<usize, f64> {
        crate::select::at_ranks(self, ranks)
    }
}

impl Ordered for Column<'_> {
    fn len(&self) -> usize {
        self.len
    }

    fn each(&self, f: &mut dyn FnMut(f64)) {
        self.rows.scan(|r| {
            if let Some(v) = r.get(self.col).filter(|_| self.keep(r)) {
                f(v / self.div);
            }
        });
    }
}

/// Values derived from the rows (`None`: a row gives none), in record
/// order, visited by reading the row file again: a statistic of them holds
/// none of them, and finds its order statistics by selection ([`crate::select`]).
pub struct Visited<'r> {
    rows: &'r Rows,
    value: &'r dyn Fn(&Row) -> Option<f64>,
    len: usize,
}

impl<'r> Visited<'r> {
    /// Counts the values (one visit).
    pub fn new(rows: &'r Rows, value: &'r dyn Fn(&Row) -> Option<f64>) -> Self {
        let mut len = 0;
        rows.scan(|r| len += usize::from(value(r).is_some()));
        Self { rows, value, len }
    }

    /// The values at the 1-based `ranks` of their ascending order.
    pub fn at_ranks(&self, ranks: &[usize]) -> std::collections::BTreeMap<usize, f64> {
        crate::select::at_ranks(self, ranks)
    }

    /// Nearest-rank percentile `q`; `None` without values.
    pub fn percentile(&self, q: u32) -> Option<f64> {
        let rank = crate::stats::nearest_rank_index(q, self.len);
        (self.len > 0).then(|| self.at_ranks(&[rank])[&rank])
    }
}

impl Ordered for Visited<'_> {
    fn len(&self) -> usize {
        self.len
    }

    fn each(&self, f: &mut dyn FnMut(f64)) {
        self.rows.scan(|r| {
            if let Some(v) = (self.value)(r) {
                f(v);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_back_in_order_with_their_gaps() {
        let mut w = RowWriter::new().unwrap();
        for i in 0..5 {
            let mut r = Row::default();
            r.set(Col::Ttft, (i != 2).then_some(f64::from(i)));
            r.set(Col::Eligible, Some(f64::from(u8::from(i % 2 == 0))));
            w.push(&r).unwrap();
        }
        let rows = w.finish().unwrap();
        assert_eq!(rows.column(Col::Ttft, |_| true), [0.0, 1.0, 3.0, 4.0]);
        assert_eq!(rows.column(Col::Ttft, Row::eligible), [0.0, 4.0]);
        assert!(rows.error().is_none());
    }
}
