//! Tables written and read back through the Parquet crate's own reader:
//! rows, values, nulls and lists as the artifact held them.

use std::fs::File;

use anvil_loadgen::{Benchmark, Series};
use anvil_tables::{Tables, Written};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Value, json};

use crate::schema::full_record;

fn cell_doc(timings: Vec<Value>) -> Benchmark {
    Benchmark {
        configuration_fingerprint: Some("ab12".into()),
        engine: "anvil-sim".into(),
        model: "tiny".into(),
        simulated: true,
        concurrency: 4,
        request_timings: timings,
        series: Series {
            interval_s: 1.0,
            repeat: vec![0, 0],
            t: vec![0.0, 1.0],
            in_flight: vec![3.5, 4.0],
            sent: vec![10, 12],
            completed: vec![9, 11],
            failed: vec![0, 1],
            output_tok_s: vec![80.0, 90.5],
            ttft_p50_ms: vec![Some(20.0), None],
            ttft_p99_ms: vec![Some(30.0), None],
        },
        ..Benchmark::default()
    }
}

fn read(written: &Written) -> RecordBatch {
    let file = File::open(&written.path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
    let mut batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(batches.len(), 1, "a small table reads back as one batch");
    batches.remove(0)
}

#[test]
fn requests_and_series_read_back_with_their_values_and_nulls() {
    let failed = {
        let mut r = full_record(1);
        r.ttft_ms = None;
        r.e2e_ms = None;
        r.performance_eligible = false;
        r.request_canary = None;
        r.chunk_gaps_us = Vec::new();
        r
    };
    // An older anvil's record: no `receive_clock`, no draft counts.
    let mut older = serde_json::to_value(full_record(2)).unwrap();
    older.as_object_mut().unwrap().retain(|k, _| k != "receive_clock" && !k.starts_with("draft"));
    let timings =
        vec![serde_json::to_value(full_record(0)).unwrap(), serde_json::to_value(&failed).unwrap(), older];
    let dir = tempfile::tempdir().unwrap();
    let mut tables = Tables::create(dir.path()).unwrap();
    tables.add_cell("fast", cell_doc(timings)).unwrap();
    let [requests, series] = tables.finish().unwrap();
    assert_eq!((requests.rows, series.rows), (3, 2));

    let batch = read(&requests);
    assert_eq!(batch.num_rows(), 3);
    let ttft = batch.column_by_name("ttft_ms").unwrap().as_primitive::<Float64Type>();
    assert_eq!((ttft.value(0), ttft.is_null(1), ttft.value(2)), (20.5, true, 22.5));
    let cell = batch.column_by_name("cell").unwrap().as_string::<i32>();
    assert_eq!(cell.value(2), "fast");
    let fp = batch.column_by_name("configuration_fingerprint").unwrap().as_string::<i32>();
    assert_eq!(fp.value(0), "ab12");
    let class = batch.column_by_name("failure_class").unwrap().as_string::<i32>();
    assert_eq!(class.value(1), "timeout");
    let passed = batch.column_by_name("request_canary_passed").unwrap().as_boolean();
    assert!(passed.value(0) && passed.is_null(1));
    let clock = batch.column_by_name("receive_clock").unwrap().as_string::<i32>();
    assert!(clock.value(0) == "kernel" && clock.is_null(2), "a field the older record lacks is null");
    let drafts = batch.column_by_name("draft_tokens").unwrap().as_primitive::<UInt64Type>();
    assert!(drafts.is_null(2) && drafts.value(0) == 3);
    let gaps = batch.column_by_name("chunk_gaps_us").unwrap().as_list::<i32>();
    let first: Vec<u32> = gaps.value(0).as_primitive::<UInt32Type>().values().to_vec();
    assert_eq!(first, vec![14000, 15000, 13000]);
    assert_eq!(gaps.value(1).len(), 0);

    let batch = read(&series);
    let p50 = batch.column_by_name("ttft_p50_ms").unwrap().as_primitive::<Float64Type>();
    assert_eq!((p50.value(0), p50.is_null(1)), (20.0, true));
    let sent = batch.column_by_name("sent").unwrap().as_primitive::<UInt64Type>();
    assert_eq!(sent.values().to_vec(), vec![10, 12]);
}

#[test]
fn a_field_the_schema_does_not_know_is_an_error_and_leaves_no_file() {
    let mut record = serde_json::to_value(full_record(0)).unwrap();
    record["brand_new_field"] = json!(1);
    let dir = tempfile::tempdir().unwrap();
    let mut tables = Tables::create(dir.path()).unwrap();
    let err = tables.add_cell("fast", cell_doc(vec![record])).unwrap_err().to_string();
    assert!(err.contains("fast") && err.contains("brand_new_field"), "{err}");
    drop(tables);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "nothing left behind: {left:?}");
}
