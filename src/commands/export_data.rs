//! `anvil export-data TARGET --format parquet`: the per-request records and
//! per-second series of every measured cell of TARGET (a run, a recipe's
//! latest run, a stored cell, a bundle, a benchmark/v1 file) as Parquet
//! tables, for pandas, polars or DuckDB (docs/metrics.md "Parquet tables").

use std::path::Path;

use anvil_tables::Tables;

use super::common::{Exit, failed, input, open_store};
use crate::cli::DataFormat;

pub fn export_data(store_root: &Path, target: &str, format: DataFormat, out: &Path) -> Result<i32, Exit> {
    let DataFormat::Parquet = format;
    let store = open_store(store_root)?;
    // Each cell's records are streamed from its file.
    let side = crate::compare::resolve(&store, target).map_err(input)?;
    if side.cells.is_empty() {
        return Err(input(format!("{} has no measured cell to export", side.label)));
    }
    let mut tables = Tables::create(out).map_err(failed)?;
    let cells = side.cells.len();
    for (name, cell) in &side.cells {
        tables.add_cell_file(name, &cell.artifact_file).map_err(failed)?;
    }
    let written = tables.finish().map_err(failed)?;
    println!("{}: {cells} cell{}", side.label, if cells == 1 { "" } else { "s" });
    for file in written {
        println!("  {} ({} rows)", file.path.display(), file.rows);
    }
    Ok(0)
}
