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

    /// Adds one cell's requests and series, named `cell`.
    pub fn add_cell(&mut self, cell: &str, mut doc: Benchmark) -> Result<(), TableError> {
        let values = cell_values(cell, &doc);
        let timings = std::mem::take(&mut doc.request_timings);
        // Rows are built a batch at a time: each carries the cell's columns
        // (its resolved cell as text), so all of them at once would hold
        // that text once per request.
        let mut batch = Vec::with_capacity(BATCH_ROWS.min(timings.len()));
        for (i, record) in timings.into_iter().enumerate() {
            let row = request_row(&values, record).map_err(|message| TableError::Cell {
                cell: cell.to_string(),
                message: format!("request_timings[{i}]: {message}"),
            })?;
            batch.push(row);
            if batch.len() == BATCH_ROWS {
                self.requests.append(cell, &batch)?;
                batch.clear();
            }
        }
        self.requests.append(cell, &batch)?;
        self.series.append(cell, &series_rows(&values, &doc.series))
    }

    /// Closes both files: the requests', then the series'.
    pub fn finish(self) -> Result<[Written; 2], TableError> {
        Ok([self.requests.finish()?, self.series.finish()?])
    }
}
