//! The two tables of an export, filled one cell at a time.

use std::path::Path;

use anvil_loadgen::Benchmark;

use crate::cell_columns::cell_values;
use crate::error::TableError;
pub use crate::parquet_file::Written;
use crate::parquet_file::{BATCH_ROWS, ParquetFile};
use crate::requests::{REQUESTS_FILE, request_row, request_schema};
use crate::series::{SERIES_FILE, series_rows, series_schema};

/// `requests.parquet` and `series.parquet` in one folder, being written.
pub struct Tables {
    requests: ParquetFile,
    series: ParquetFile,
}

impl Tables {
    /// Starts both files in `dir` (created if missing).
    pub fn create(dir: &Path) -> Result<Self, TableError> {
        std::fs::create_dir_all(dir).map_err(|source| TableError::Io { path: dir.to_path_buf(), source })?;
        Ok(Tables {
            requests: ParquetFile::create(dir.join(REQUESTS_FILE), request_schema())?,
            series: ParquetFile::create(dir.join(SERIES_FILE), series_schema())?,
        })
    }

    /// Adds one cell's requests and series, named `cell`, from a document in memory.
    pub fn add_cell(&mut self, cell: &str, mut doc: Benchmark) -> Result<(), TableError> {
        let timings = std::mem::take(&mut doc.request_timings);
        let mut rows = self.cell_rows(cell, &doc);
        for record in timings {
            rows.push(record)?;
        }
        rows.finish()
    }

    /// Adds one cell's requests and series, named `cell`, from its artifact
    /// file: the records are streamed from it one at a time, so a cell of
    /// any size is exported in the memory of one batch of rows.
    pub fn add_cell_file(&mut self, cell: &str, artifact: &Path) -> Result<(), TableError> {
        use anvil_evidence::artifact_file::{self, Stopped};
        let unreadable = |e: artifact_file::ArtifactFileError| TableError::Cell {
            cell: cell.to_string(),
            message: e.to_string(),
        };
        let head = artifact_file::head(artifact).map_err(unreadable)?;
        let doc: Benchmark = serde_json::from_value(serde_json::Value::Object(head)).map_err(|e| {
            TableError::Cell { cell: cell.to_string(), message: format!("not a benchmark/v1 artifact: {e}") }
        })?;
        let mut rows = self.cell_rows(cell, &doc);
        artifact_file::for_each_record(artifact, |_, record: serde_json::Value| rows.push(record)).map_err(
            |stopped| match stopped {
                Stopped::File(e) => unreadable(e),
                Stopped::By(e) => e,
            },
        )?;
        rows.finish()
    }

    fn cell_rows<'t>(&'t mut self, cell: &str, doc: &Benchmark) -> CellRows<'t> {
        let values = cell_values(cell, doc);
        let series = series_rows(&values, &doc.series);
        CellRows { tables: self, cell: cell.to_string(), values, series, batch: Vec::new(), index: 0 }
    }

    /// Closes both files: the requests', then the series'.
    pub fn finish(self) -> Result<[Written; 2], TableError> {
        Ok([self.requests.finish()?, self.series.finish()?])
    }
}

/// One cell's rows on their way into the tables. Rows are built a batch at
/// a time: each carries the cell's columns (its resolved cell as text), so
/// all of them at once would hold that text once per request.
struct CellRows<'t> {
    tables: &'t mut Tables,
    cell: String,
    values: serde_json::Map<String, serde_json::Value>,
    series: Vec<serde_json::Map<String, serde_json::Value>>,
    batch: Vec<serde_json::Map<String, serde_json::Value>>,
    /// The next record's position in `request_timings`.
    index: usize,
}

impl CellRows<'_> {
    fn push(&mut self, record: serde_json::Value) -> Result<(), TableError> {
        let row = request_row(&self.values, record).map_err(|why| TableError::Cell {
            cell: self.cell.clone(),
            message: format!("request_timings[{}]: {why}", self.index),
        })?;
        self.index += 1;
        self.batch.push(row);
        if self.batch.len() == BATCH_ROWS {
            self.tables.requests.append(&self.cell, &self.batch)?;
            self.batch.clear();
        }
        Ok(())
    }

    fn finish(self) -> Result<(), TableError> {
        self.tables.requests.append(&self.cell, &self.batch)?;
        self.tables.series.append(&self.cell, &self.series)
    }
}
