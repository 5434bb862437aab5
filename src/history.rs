//! What earlier runs left behind: preimages of every step they planned, so
//! a step that failed (and so was never stored) can still be diffed.

use anvil_store::{Fingerprint, RunRecord, Store};
use serde_json::Value;

/// A step's preimage: from its store entry, else from the newest run
/// record that planned it.
pub fn preimage_of(store: &Store, fp: &Fingerprint) -> Option<Value> {
    if let Ok(Some(entry)) = store.read(fp) {
        return Some(entry.preimage);
    }
    let runs = store.runs().ok()?;
    runs.iter().rev().find_map(|run| preimage_in_run(run, fp))
}

pub fn preimage_in_run(run: &RunRecord, fp: &Fingerprint) -> Option<Value> {
    crate::run_extra::RunExtra::of(run).preimage(fp).cloned()
}

/// Fingerprints named in run records (stored or not), for prefix lookup.
pub fn recorded_fingerprints(store: &Store) -> Vec<Fingerprint> {
    let mut all: Vec<Fingerprint> =
        store.runs().unwrap_or_default().iter().flat_map(|r| r.nodes.iter().map(|n| n.fingerprint)).collect();
    all.sort_by_key(|f| f.to_string());
    all.dedup();
    all
}
