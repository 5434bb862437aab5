//! An imported result into the store, like a cell: an entry under a
//! fingerprint of the files' contents (so importing twice adds nothing),
//! holding `benchmark.json`, and a run record naming it, so `anvil gc`
//! keeps it and `show`, `compare`, `report` and `export-data` read it.

use std::path::Path;

use anvil_store::{Fingerprint, NodeStatus, RunNode, RunRecord, RunStatus, Store, StoreError};
use serde_json::{Value, json};

use super::artifact::{IMPORTER, build};
use super::imported::Imported;
use crate::results::{CELL_RESULT_SCHEMA, CellResult};

/// One imported result as stored.
pub struct StoredCell {
    pub cell: String,
    pub fingerprint: Fingerprint,
    pub artifact: Value,
    /// False when the store already held it.
    pub added: bool,
}

pub struct StoredImport {
    pub run_id: String,
    pub run_added: bool,
    pub cells: Vec<StoredCell>,
}

/// What the fingerprint covers: the importer and the bytes read, never
/// where they were read from.
fn preimage(imported: &Imported) -> Value {
    json!({
        "kind": "imported-result",
        "importer": IMPORTER,
        "tool": imported.tool.as_str(),
        "files_blake3": imported.files.iter().map(|f| &f.blake3).collect::<Vec<_>>(),
        "part": imported.part,
    })
}

/// The cell's name: the tool and the file, and the part of a file of several.
fn cell_name(imported: &Imported, source: &Path) -> String {
    let stem = source.file_stem().map_or_else(|| "result".into(), |s| s.to_string_lossy().into_owned());
    let base = if stem.starts_with(imported.tool.as_str()) {
        stem
    } else {
        format!("{}-{stem}", imported.tool.as_str())
    };
    match imported.part {
        Some(i) => format!("{base}-{i}"),
        None => base,
    }
}

fn cell_result(artifact: &Value) -> CellResult {
    let metric = |k: &str| artifact.pointer(&format!("/metrics/{k}")).and_then(Value::as_f64);
    CellResult {
        schema: CELL_RESULT_SCHEMA.into(),
        engine: artifact.get("engine").and_then(Value::as_str).unwrap_or("unknown").into(),
        simulated: false,
        completed: artifact["completed"].as_u64().unwrap_or(0),
        failed: artifact["failed"].as_u64().unwrap_or(0),
        aggregate_tok_s: metric("throughput_tok_s"),
        ttft_p50_ms: metric("ttft_p50_ms"),
        ttft_p99_ms: metric("ttft_p99_ms"),
        decode_tok_s_mean: metric("decode_tok_s_mean"),
        wall_clock_ms: artifact.get("wall_clock_ms").and_then(Value::as_f64).unwrap_or(0.0),
        performance_eligible: artifact.get("performance_eligible").and_then(Value::as_bool),
        canaries_passed: None,
        requests: artifact.get("requests").and_then(Value::as_u64),
        repeats: Value::Null,
        metrics: artifact["metrics"].clone(),
        load: None,
        stopped_early: None,
        over_saturated_at_end: None,
        answers: None,
        accuracy: None,
    }
}

/// Stores every result read from `source` and one run record naming them.
pub fn store(store: &Store, source: &Path, imported: &[Imported]) -> Result<StoredImport, StoreError> {
    let mut cells = Vec::new();
    for one in imported {
        let preimage = preimage(one);
        let fingerprint = crate::plan::fingerprint_of(&preimage);
        let cell = cell_name(one, source);
        let artifact = build(one, &fingerprint.to_string(), &cell);
        let added = !store.contains(&fingerprint);
        if added {
            let mut staged = store.stage(&fingerprint)?;
            staged.write_json("preimage.json", &preimage)?;
            staged.write_json("result.json", &crate::results::to_value(&cell_result(&artifact)))?;
            staged.write_json("benchmark.json", &artifact)?;
            staged.commit()?;
        }
        cells.push(StoredCell { cell, fingerprint, artifact, added });
    }
    // One run per file content: a second import finds it and writes nothing.
    let first = imported.first().and_then(|i| i.files.first()).map_or("", |f| f.blake3.as_str());
    let tool = imported.first().map_or("peer", |i| i.tool.as_str());
    let run_id = format!("import-{tool}-{}", &first[..first.len().min(16)]);
    let run_added = store.run(&run_id)?.is_none();
    if run_added {
        let now = crate::run::now_rfc3339();
        let mut record = RunRecord {
            run_id: run_id.clone(),
            recipe: format!("import-result:{tool}:{first}"),
            recipe_path: source.display().to_string(),
            started_at: now.clone(),
            finished_at: Some(now.clone()),
            status: RunStatus::Succeeded,
            nodes: cells
                .iter()
                .map(|c| RunNode {
                    name: c.cell.clone(),
                    kind: "cell".into(),
                    fingerprint: c.fingerprint,
                    status: NodeStatus::Ran,
                    started_at: Some(now.clone()),
                    duration_ms: Some(0),
                    detail: Some(format!("imported from {}", tool)),
                })
                .collect(),
            extra: Value::Null,
        };
        let extra =
            crate::run_extra::RunExtra { campaign: Some(format!("imported-{tool}")), ..Default::default() };
        extra.write_to(&mut record);
        store.record_run(&record)?;
    }
    Ok(StoredImport { run_id, run_added, cells })
}
