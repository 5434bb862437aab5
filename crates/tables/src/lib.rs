//! anvil's measurements as Apache Arrow tables, written as Parquet files:
//! a cell's requests one row each (`requests.parquet`) and its per-second
//! series one row per interval (`series.parquet`), every row carrying the
//! cell's identity and settings, so rows of many cells sit in one table.
//!
//! The schemas are fixed here column by column (docs/metrics.md, "Parquet
//! tables"): a column's type never depends on the data, and a record field
//! the schema does not know is an error, never a silent drop.

mod cell_columns;
mod error;
mod parquet_file;
mod requests;
mod series;
mod writer;

pub use cell_columns::cell_fields;
pub use error::TableError;
pub use requests::{REQUESTS_FILE, REQUESTS_TABLE, request_schema};
pub use series::{SERIES_FILE, SERIES_TABLE, series_schema};
pub use writer::{Tables, Written};
