//! A run as its step documents: as the run ends, every settled step's
//! document is written into the store (`<store>/documents/<fp>.json`, as a
//! Slurm head writes its jobs') and the run record names them
//! (`extra.documents`, `kind.name` → fingerprint). Any step of a past run
//! can then be run again from its document alone, with the recipe gone
//! (`anvil worker --document`).

use std::collections::BTreeMap;

use anvil_store::Store;

use crate::document::{StepDocument, document_of};
use crate::plan::Plan;

/// Write the documents of `plan`'s settled steps into the store; the names
/// and fingerprints of those written. A document that cannot be written is
/// said and left out: documents are derived, and the next run writes them again.
pub(super) fn keep_documents(plan: &Plan, store: &Store) -> BTreeMap<String, String> {
    let dir = StepDocument::folder_in(store.root());
    if let Err(err) = std::fs::create_dir_all(&dir) {
        eprintln!("anvil: the run's step documents are not kept: creating {}: {err}", dir.display());
        return BTreeMap::new();
    }
    let mut kept = BTreeMap::new();
    for (i, node) in plan.nodes.iter().enumerate() {
        // A step still waiting on upstream results has no fingerprint of its own yet.
        if node.provisional || !node.waits_for.is_empty() {
            continue;
        }
        match document_of(plan, i).write_into(&dir) {
            Ok(_) => {
                kept.insert(node.qualified(), node.fingerprint.to_string());
            }
            Err(err) => eprintln!("anvil: the step document of {} is not kept: {err}", node.qualified()),
        }
    }
    kept
}
