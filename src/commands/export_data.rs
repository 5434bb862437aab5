//! `anvil export-data TARGET --format parquet`: the per-request records and
//! per-second series of every measured cell of TARGET (a run, a recipe's
//! latest run, a stored cell, a bundle, a benchmark/v1 file) as Parquet
//! tables, for pandas, polars or DuckDB (docs/metrics.md "Parquet tables").

use std::path::Path;

use super::common::Exit;
use crate::cli::DataFormat;

/// A build without the `parquet` feature (the default: the Arrow and
/// Parquet crates are a large share of a cold build) says how to get one.
#[cfg(not(feature = "parquet"))]
pub fn export_data(_: &Path, _: &str, _: DataFormat, _: &Path) -> Result<i32, Exit> {
    Err(super::common::input(
        "this anvil was built without Parquet tables; build it with them: \
         `cargo build --release --features parquet` (or `cargo install --path . --features parquet`)",
    ))
}

#[cfg(feature = "parquet")]
pub fn export_data(store_root: &Path, target: &str, format: DataFormat, out: &Path) -> Result<i32, Exit> {
    use super::common::{failed, input, open_store};
    use anvil_tables::Tables;

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
