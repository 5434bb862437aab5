//! The series table: the artifact's per-second series (`series`), one row
//! per interval and repeat, as the load generator binned it.

use anvil_loadgen::Series;
use arrow_schema::{DataType, Schema};
use serde_json::{Map, Value};

use crate::cell_columns::{nullable, table_schema};

pub const SERIES_FILE: &str = "series.parquet";
/// The table's name and version, in the file's schema metadata (`anvil.table`).
pub const SERIES_TABLE: &str = "anvil-serving.series/v1";

/// The series table's schema: the cell columns, then the interval's figures.
pub fn series_schema() -> Schema {
    let columns = nullable(&[
        ("interval_s", DataType::Float64),
        ("repeat", DataType::UInt32),
        ("t_s", DataType::Float64),
        ("in_flight", DataType::Float64),
        ("sent", DataType::UInt64),
        ("completed", DataType::UInt64),
        ("failed", DataType::UInt64),
        ("output_tok_s", DataType::Float64),
        ("ttft_p50_ms", DataType::Float64),
        ("ttft_p99_ms", DataType::Float64),
    ]);
    table_schema(SERIES_TABLE, columns)
}

/// The series' rows, in its order. Its columns are parallel vectors; one
/// shorter than `t` (a damaged artifact) leaves its later cells null.
pub fn series_rows(cell: &Map<String, Value>, series: &Series) -> Vec<Map<String, Value>> {
    (0..series.t.len())
        .map(|i| {
            let mut row = cell.clone();
            row.insert("interval_s".into(), series.interval_s.into());
            row.insert("repeat".into(), series.repeat.get(i).copied().into());
            row.insert("t_s".into(), series.t[i].into());
            row.insert("in_flight".into(), series.in_flight.get(i).copied().into());
            row.insert("sent".into(), series.sent.get(i).copied().into());
            row.insert("completed".into(), series.completed.get(i).copied().into());
            row.insert("failed".into(), series.failed.get(i).copied().into());
            row.insert("output_tok_s".into(), series.output_tok_s.get(i).copied().into());
            row.insert("ttft_p50_ms".into(), series.ttft_p50_ms.get(i).copied().flatten().into());
            row.insert("ttft_p99_ms".into(), series.ttft_p99_ms.get(i).copied().flatten().into());
            row
        })
        .collect()
}
