//! A run's campaign outputs (decision summary, workload manifest) are
//! results of that run: stored as one content-addressed entry and listed
//! in its run record as a node of kind [`OUTPUTS_KIND`], so they are in the
//! run's closure (gc keeps them, `export`, `report` and `reproduce` take
//! them from the store). `results/<campaign>/` is a copy for people.

use anvil_store::{Entry, Fingerprint, NodeStatus, RunNode, RunRecord, Store, StoreError};
use serde_json::json;

/// The run-record node kind of a run's campaign outputs.
pub const OUTPUTS_KIND: &str = "outputs";
/// Its node name.
pub const OUTPUTS_NODE: &str = "campaign-outputs";
/// The `schema` of the entry's `result.json`.
pub const OUTPUTS_SCHEMA: &str = "anvil-serving.campaign-outputs/v1";

/// Stores `files` (name, bytes) as run `run_id`'s outputs and lists them in
/// its run record. The entry is named by its content: a digest over each
/// file's name and bytes, apart from every step fingerprint by its context.
pub fn store_with_run(
    store: &Store,
    run_id: &str,
    files: &[(&str, Vec<u8>)],
) -> Result<Fingerprint, StoreError> {
    let mut hasher = blake3::Hasher::new_derive_key("anvil campaign outputs v1");
    for (name, bytes) in files {
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    let fingerprint = Fingerprint::from_bytes(*hasher.finalize().as_bytes());
    if !store.contains(&fingerprint) {
        let mut staged = store.stage(&fingerprint)?;
        let digests: serde_json::Map<String, serde_json::Value> = files
            .iter()
            .map(|(name, bytes)| (name.to_string(), json!(blake3::hash(bytes).to_hex().as_str())))
            .collect();
        staged.write_json("preimage.json", &json!({"kind": OUTPUTS_KIND, "files": digests}))?;
        staged.write_json(
            "result.json",
            &json!({"schema": OUTPUTS_SCHEMA, "run_id": run_id, "files": files.iter().map(|(n, _)| n).collect::<Vec<_>>()}),
        )?;
        for (name, bytes) in files {
            staged.write_bytes(name, bytes)?;
        }
        staged.commit()?;
    }
    if let Some(mut record) = store.run(run_id)? {
        record.nodes.retain(|n| n.kind != OUTPUTS_KIND);
        record.nodes.push(RunNode {
            name: OUTPUTS_NODE.into(),
            kind: OUTPUTS_KIND.into(),
            fingerprint,
            status: NodeStatus::Ran,
            started_at: None,
            duration_ms: None,
            detail: Some("the run's decision summary and workload manifest".into()),
        });
        store.record_run(&record)?;
    }
    Ok(fingerprint)
}

/// The stored outputs entry of `run`, when it has one (runs of an anvil
/// before this one, or of a recipe without a decision, have none).
pub fn entry_of(store: &Store, run: &RunRecord) -> Option<Entry> {
    let node = run.nodes.iter().find(|n| n.kind == OUTPUTS_KIND)?;
    store.read(&node.fingerprint).ok().flatten()
}

/// Whether a run-record node is a step (not the run's outputs).
pub fn is_step(node: &RunNode) -> bool {
    node.kind != OUTPUTS_KIND
}
