//! The columns that say which cell a row belongs to and how it ran: the
//! same in both tables, taken from the artifact (what the load generator
//! did), never from a second reading of the recipe.

use anvil_loadgen::Benchmark;
use arrow_schema::{DataType, Field, Schema};
use serde_json::{Map, Value};

/// The cell columns, first in every table.
pub fn cell_fields() -> Vec<Field> {
    nullable(&[
        ("cell", DataType::Utf8),
        ("configuration_fingerprint", DataType::Utf8),
        ("run_id", DataType::Utf8),
        ("engine", DataType::Utf8),
        ("model", DataType::Utf8),
        ("simulated", DataType::Boolean),
        ("arrival", DataType::Utf8),
        ("arrival_rate_per_s", DataType::Float64),
        ("concurrency", DataType::UInt32),
        ("context_tokens", DataType::UInt64),
        ("max_tokens", DataType::UInt32),
        ("prompt_cache_mode", DataType::Utf8),
        ("loadgen_version", DataType::Utf8),
        ("resolved_cell", DataType::Utf8),
        ("serve_flags", DataType::Utf8),
    ])
}

/// Columns of these names and types, every one nullable: a value a record
/// lacks is null, never zero.
pub fn nullable(columns: &[(&str, DataType)]) -> Vec<Field> {
    columns.iter().map(|(name, kind)| Field::new(*name, kind.clone(), true)).collect()
}

/// A table's schema: the cell columns, then its own, named `table` in the
/// file's schema metadata (`anvil.table`).
pub fn table_schema(table: &str, columns: Vec<Field>) -> Schema {
    let mut fields = cell_fields();
    fields.extend(columns);
    Schema::new(fields)
        .with_metadata(std::collections::HashMap::from([("anvil.table".to_string(), table.to_string())]))
}

/// One cell's values of [`cell_fields`], by name. `resolved_cell` and
/// `serve_flags` are JSON text: their shape is the recipe's, not a table's.
pub fn cell_values(cell: &str, doc: &Benchmark) -> Map<String, Value> {
    let json_text = |v: Value| Value::String(v.to_string());
    let mut map = Map::new();
    map.insert("cell".into(), cell.into());
    map.insert("configuration_fingerprint".into(), doc.configuration_fingerprint.clone().into());
    map.insert("run_id".into(), doc.run_id.clone().into());
    map.insert("engine".into(), doc.engine.clone().into());
    map.insert("model".into(), doc.model.clone().into());
    map.insert("simulated".into(), doc.simulated.into());
    map.insert("arrival".into(), doc.arrival.kind.clone().into());
    map.insert("arrival_rate_per_s".into(), doc.arrival.rate_per_s.into());
    map.insert("concurrency".into(), doc.concurrency.into());
    map.insert("context_tokens".into(), doc.context_tokens.into());
    map.insert("max_tokens".into(), doc.max_tokens.into());
    map.insert("prompt_cache_mode".into(), doc.prompt_cache_mode.clone().into());
    map.insert("loadgen_version".into(), doc.loadgen_version.clone().into());
    map.insert(
        "resolved_cell".into(),
        json_text(serde_json::to_value(&doc.resolved_cell).unwrap_or_default()),
    );
    map.insert("serve_flags".into(), json_text(doc.serve_flags.clone()));
    map
}
