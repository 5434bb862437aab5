//! One Parquet file written through Arrow: rows (JSON maps keyed by column
//! name) are decoded into typed columns by Arrow's own JSON decoder against
//! the fixed schema, and written by its Parquet writer. The file is written
//! under a temporary name and renamed into place only when complete, so a
//! failure (a full disk, a bad row) never leaves a half file where a whole
//! one was.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_json::reader::{Decoder, ReaderBuilder};
use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde_json::{Map, Value};
use tempfile::NamedTempFile;

use crate::error::TableError;

/// Rows built, decoded and handed to the writer at a time (it gathers them
/// into row groups): the bound on what a cell's conversion holds besides
/// the artifact. A row as JSON is ~10 KB; at 8,192 rows an export of a
/// 10,000-request cell peaked at 195 MB, at 1,024 at 140 MB, the rest
/// being the artifact read whole.
pub const BATCH_ROWS: usize = 1024;

/// Rows per Parquet row group. The writer holds a row group's columns until
/// it is full (its default, 1,048,576 rows, held a whole 20,000-request cell:
/// 1.8 KB a row, export-data peaked at 245 MiB); at 8,192 rows a
/// 20,000-request export peaked at 62 MiB, at 2,048 at 56 (47 for 2,000
/// requests). Readers still get whole column chunks of thousands of rows.
pub const ROW_GROUP_ROWS: usize = 2 * 1024;

/// A Parquet file being written.
pub struct ParquetFile {
    path: PathBuf,
    decoder: Decoder,
    writer: ArrowWriter<NamedTempFile>,
    rows: u64,
}

/// A finished file and how many rows it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub path: PathBuf,
    pub rows: u64,
}

impl ParquetFile {
    pub fn create(path: PathBuf, schema: Schema) -> Result<Self, TableError> {
        let io = |source| TableError::Io { path: path.clone(), source };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let temp = tempfile::Builder::new().prefix(".anvil-table-").tempfile_in(dir).map_err(io)?;
        let schema = Arc::new(schema);
        // Strict: a row field the schema lacks is an error, not a dropped column.
        let decoder = ReaderBuilder::new(schema.clone()).with_strict_mode(true).build_decoder()?;
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_created_by(format!("anvil {}", env!("CARGO_PKG_VERSION")))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        let writer = ArrowWriter::try_new(temp, schema, Some(properties))?;
        Ok(ParquetFile { path, decoder, writer, rows: 0 })
    }

    /// Appends one cell's rows.
    pub fn append(&mut self, cell: &str, rows: &[Map<String, Value>]) -> Result<(), TableError> {
        let bad =
            |e: arrow_schema::ArrowError| TableError::Cell { cell: cell.to_string(), message: e.to_string() };
        for chunk in rows.chunks(BATCH_ROWS) {
            self.decoder.serialize(chunk).map_err(bad)?;
            if let Some(batch) = self.decoder.flush().map_err(bad)? {
                self.rows += batch.num_rows() as u64;
                self.writer.write(&batch)?;
            }
        }
        Ok(())
    }

    /// Closes the file and moves it into place.
    pub fn finish(self) -> Result<Written, TableError> {
        let temp = self.writer.into_inner()?;
        // A temporary file is private (0600); a table is a document like any other.
        let readable = std::fs::Permissions::from_mode(0o644);
        temp.as_file()
            .set_permissions(readable)
            .map_err(|e| TableError::Io { path: self.path.clone(), source: e })?;
        temp.persist(&self.path).map_err(|e| TableError::Io { path: self.path.clone(), source: e.error })?;
        Ok(Written { path: self.path, rows: self.rows })
    }
}
