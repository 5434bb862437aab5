//! The requests table: one row per element of the artifact's
//! `request_timings`, every field a column. A nested record field
//! (`failure`, `request_canary`, `controlled_output`, `agent`) becomes one column per
//! member, named `<field>_<member>`, so the table is flat for pandas and SQL.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use serde_json::{Map, Value};

use crate::cell_columns::{nullable, table_schema};
use crate::error::NotAnObject;

pub const REQUESTS_FILE: &str = "requests.parquet";
/// The table's name and version, in the file's schema metadata (`anvil.table`).
pub const REQUESTS_TABLE: &str = "anvil-serving.requests/v1";

/// Every request field and its type, in the record's order
/// (`anvil_loadgen::RequestRecord`).
const REQUEST_COLUMNS: &[(&str, Kind)] = {
    use Kind::*;
    &[
        ("content_chunks", U32),
        ("controlled_output_requested_words", U32),
        ("controlled_output_observed_words", U64),
        ("controlled_output_observable", Bool),
        ("controlled_output_exact", Bool),
        ("decode_tok_s", F64),
        ("e2e_ms", F64),
        ("effective_prefill_tok_s", F64),
        ("generation_ms", F64),
        ("mean_inter_token_latency_ms", F64),
        ("mean_time_per_output_token_ms", F64),
        ("output_token_source", Text),
        ("output_tokens", U64),
        ("planned_context_tokens", U64),
        ("prompt_tokens", U64),
        ("reasoning_chunks", U32),
        ("request_canary_capture_complete", Bool),
        ("request_canary_foreign_marker_count", U32),
        ("request_canary_marker", Text),
        ("request_canary_marker_at_start", Bool),
        ("request_canary_observed_marker_count", U32),
        ("request_canary_passed", Bool),
        ("request_index", U64),
        ("time_to_first_output_ms", F64),
        ("tpot_ms", F64),
        ("ttft_ms", F64),
        ("visible_content_truncated", Bool),
        ("visible_generation_ms", F64),
        ("repeat", U32),
        ("target", Text),
        ("http_status", U16),
        ("finish_reason", Text),
        ("stale_connection_retries", U32),
        ("cached_prompt_tokens", U64),
        ("receive_clock", Text),
        ("response_reads", U32),
        ("first_content_read_delay_us", U32),
        ("first_content_shared_read", Bool),
        ("intended_send_ms", F64),
        ("actual_send_ms", F64),
        ("send_lag_ms", F64),
        ("chunk_gaps_us", ListU32),
        ("tokens_per_chunk", F64),
        ("performance_eligible", Bool),
        ("failure_class", Text),
        ("failure_detail", Text),
        ("slo_met", Bool),
        ("finished_ms", F64),
        ("request_start_unix_ns", U64),
        ("connection_id", U64),
        ("connect_ms", F64),
        ("ttft_from_schedule_ms", F64),
        ("e2e_from_schedule_ms", F64),
        ("stage", U32),
        ("trace_line", U64),
        ("dataset_entry", U64),
        ("session", U64),
        ("turn", U32),
        ("requested_output_tokens", U64),
        ("output_length_met", Bool),
        ("request_id", Text),
        ("response_id", Text),
        ("prompt_tokens_expected", U64),
        ("prompt_length_met", Bool),
        ("ideal_cached_tokens", U64),
        ("draft_tokens", U64),
        ("draft_accepted_tokens", U64),
        ("agent_task", U64),
        ("agent_task_id", Text),
        ("agent_call", U32),
        ("agent_call_id", Text),
        ("agent_parents", ListU32),
        ("agent_delay_ms", F64),
        ("agent_task_start_ms", F64),
        ("agent_deadline_ms", F64),
    ]
};

/// A column's type, spelled short for the table above.
#[derive(Clone, Copy)]
enum Kind {
    Bool,
    U16,
    U32,
    U64,
    F64,
    Text,
    ListU32,
}

impl Kind {
    fn data_type(self) -> DataType {
        match self {
            Kind::Bool => DataType::Boolean,
            Kind::U16 => DataType::UInt16,
            Kind::U32 => DataType::UInt32,
            Kind::U64 => DataType::UInt64,
            Kind::F64 => DataType::Float64,
            Kind::Text => DataType::Utf8,
            Kind::ListU32 => DataType::List(Arc::new(Field::new_list_field(DataType::UInt32, false))),
        }
    }
}

/// The requests table's schema: the cell columns, then every request field.
/// Every column is nullable: a field an older artifact lacks, or a request
/// has no value for (a failed request's `ttft_ms`), is null, never zero.
pub fn request_schema() -> Schema {
    let columns: Vec<(&str, DataType)> =
        REQUEST_COLUMNS.iter().map(|&(name, kind)| (name, kind.data_type())).collect();
    table_schema(REQUESTS_TABLE, nullable(&columns))
}

/// One row: the cell's values and the record's fields, nested members
/// flattened to `<field>_<member>`.
pub fn request_row(cell: &Map<String, Value>, record: Value) -> Result<Map<String, Value>, NotAnObject> {
    let Value::Object(fields) = record else {
        return Err(NotAnObject);
    };
    let mut row = cell.clone();
    for (name, value) in fields {
        match value {
            Value::Object(members) => {
                for (member, inner) in members {
                    row.insert(format!("{name}_{member}"), inner);
                }
            }
            Value::Null => {}
            value => {
                row.insert(name, value);
            }
        }
    }
    Ok(row)
}
