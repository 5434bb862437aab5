//! The requests table's schema against the record type: every field of a
//! fully filled `RequestRecord` has its column, so a field added to the
//! record without a column fails here (and the strict decoder refuses it).

use anvil_loadgen::{CanaryResult, ControlledOutput, Failure, FailureClass, RequestRecord};
use anvil_tables::{cell_fields, request_schema, series_schema};

/// A record with every optional field set.
pub fn full_record(index: u64) -> RequestRecord {
    RequestRecord {
        content_chunks: 7,
        controlled_output: Some(ControlledOutput {
            requested_words: 4,
            observed_words: 4,
            observable: true,
            exact: true,
        }),
        decode_tok_s: Some(55.5),
        e2e_ms: Some(120.25 + index as f64),
        effective_prefill_tok_s: Some(9000.0),
        generation_ms: Some(100.0),
        mean_inter_token_latency_ms: Some(14.0),
        mean_time_per_output_token_ms: Some(15.0),
        output_token_source: "usage".into(),
        output_tokens: Some(8),
        planned_context_tokens: 512,
        prompt_tokens: Some(530),
        reasoning_chunks: 1,
        request_canary: Some(CanaryResult {
            capture_complete: true,
            foreign_marker_count: 0,
            marker: "ZX-1".into(),
            marker_at_start: true,
            observed_marker_count: 1,
            passed: true,
        }),
        request_index: index,
        time_to_first_output_ms: Some(19.0),
        tpot_ms: Some(14.5),
        ttft_ms: Some(20.5 + index as f64),
        visible_content_truncated: false,
        visible_generation_ms: Some(99.0),
        repeat: 0,
        target: "server".into(),
        http_status: Some(200),
        finish_reason: Some("length".into()),
        stale_connection_retries: 0,
        cached_prompt_tokens: Some(256),
        receive_clock: "kernel".into(),
        response_reads: 6,
        first_content_read_delay_us: Some(31),
        first_content_shared_read: false,
        intended_send_ms: 10.0,
        actual_send_ms: 10.05,
        send_lag_ms: 0.05,
        chunk_gaps_us: vec![14000, 15000, 13000],
        tokens_per_chunk: Some(1.0),
        performance_eligible: true,
        failure: Some(Failure { class: FailureClass::Timeout, detail: "late".into() }),
        slo_met: Some(true),
        finished_ms: 130.0,
        request_start_unix_ns: 1_764_000_000_000_000_000,
        connection_id: 1,
        connect_ms: Some(0.2),
        ttft_from_schedule_ms: Some(20.55),
        e2e_from_schedule_ms: Some(120.3),
        stage: Some(0),
        trace_line: Some(3),
        dataset_entry: Some(2),
        session: Some(1),
        turn: Some(0),
        requested_output_tokens: Some(8),
        output_length_met: Some(true),
        request_id: Some("req-1".into()),
        response_id: Some("chatcmpl-1".into()),
        prompt_tokens_expected: Some(530),
        prompt_length_met: Some(true),
        ideal_cached_tokens: Some(256),
        draft_tokens: Some(3),
        draft_accepted_tokens: Some(2),
        agent: Some(anvil_loadgen::AgentCallRecord {
            task: 2,
            task_id: "fix-bug".into(),
            call: 1,
            call_id: "read-a".into(),
            parents: vec![0],
            delay_ms: 350.0,
            task_start_ms: 12.5,
            deadline_ms: Some(60_000.0),
        }),
    }
}

/// The record's keys as the table names them (nested members flattened).
fn flattened_keys(record: &RequestRecord) -> Vec<String> {
    let serde_json::Value::Object(fields) = serde_json::to_value(record).unwrap() else {
        panic!("an object")
    };
    let mut keys = Vec::new();
    for (name, value) in fields {
        match value {
            serde_json::Value::Object(members) => keys.extend(members.keys().map(|m| format!("{name}_{m}"))),
            _ => keys.push(name),
        }
    }
    keys
}

#[test]
fn every_record_field_has_its_column_and_every_column_a_field() {
    let schema = request_schema();
    let cell: Vec<String> = cell_fields().iter().map(|f| f.name().clone()).collect();
    let columns: Vec<String> =
        schema.fields().iter().map(|f| f.name().clone()).filter(|n| !cell.contains(n)).collect();
    let keys = flattened_keys(&full_record(0));
    let missing: Vec<&String> = keys.iter().filter(|k| !columns.contains(k)).collect();
    let extra: Vec<&String> = columns.iter().filter(|c| !keys.contains(c)).collect();
    assert!(missing.is_empty(), "record fields without a column: {missing:?}");
    assert!(extra.is_empty(), "columns no record field fills: {extra:?}");
    assert_eq!(keys, columns, "columns follow the record's field order");
}

#[test]
fn the_tables_name_themselves_and_share_the_cell_columns() {
    for schema in [request_schema(), series_schema()] {
        assert!(schema.metadata()["anvil.table"].starts_with("anvil-serving."));
        let names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
        let cell: Vec<String> = cell_fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names[..cell.len()].iter().map(|s| s.as_str()).collect::<Vec<_>>(), cell);
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "no column name twice");
    }
}
