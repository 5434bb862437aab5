//! A run's inputs, frozen when it starts, in its run record
//! (`extra.frozen_inputs`, path → `blake3:` of the bytes):
//!
//! - the recipe's text and its includes' (the very text the plan was loaded
//!   from), kept whole in the record: later waves load the recipe from that
//!   text (`Plan::settle_results`), never from the working file;
//! - every file a step reads as its fingerprint hashed it (traces, datasets,
//!   `reads`, tokenizer files), by digest only: such files may be gigabytes,
//!   and the load generator reads them from their paths. A step settled in a
//!   later wave whose file no longer hashes as it did at the start fails
//!   without measuring ([`changed_since_start`]); a first-wave step is
//!   checked against its planned digest right before it runs
//!   (`unchanged_inputs`).
//!
//! The record is the place: `gc` keeps what it holds exactly as long as the
//! run's record exists (never `cache/`, which `gc` clears), and an entry's
//! count or content is not changed by a run's bookkeeping.

use std::collections::BTreeMap;

use crate::plan::Plan;
use crate::run_extra::FrozenInput;

/// The run's frozen inputs, named as the record names them.
pub(super) fn freeze(plan: &Plan) -> BTreeMap<String, FrozenInput> {
    let mut frozen = BTreeMap::new();
    // The recipe and its includes: the text the plan was loaded from.
    for source in &plan.recipe.sources {
        let text = source.inner();
        frozen.entry(source.name().to_string()).or_insert_with(|| FrozenInput {
            blake3: format!("blake3:{}", blake3::hash(text.as_bytes()).to_hex()),
            text: Some(text.clone()),
        });
    }
    // Every file a step's fingerprint hashed, as it hashes now (once however many steps read it).
    let dir = plan.recipe.dir();
    for node in &plan.nodes {
        for file in read_files(&node.preimage.value()) {
            if frozen.contains_key(&file) {
                continue;
            }
            let digest = crate::plan::file_digest(&dir.join(&file));
            // An unreadable file is its step's problem (it fails when it starts).
            if let Some(digest) = digest.as_str().filter(|d| d.starts_with("blake3:")) {
                frozen.insert(file, FrozenInput { blake3: digest.to_string(), text: None });
            }
        }
    }
    frozen
}

/// The files a preimage's `files` names, relative to the recipe's folder
/// (a server's tokenizer under `tokenizer PATH`).
fn read_files(preimage: &serde_json::Value) -> Vec<String> {
    let Some(files) = preimage.get("files").and_then(|f| f.as_object()) else { return Vec::new() };
    files.keys().map(|file| file.strip_prefix("tokenizer ").unwrap_or(file).to_string()).collect()
}

/// The files step `index` reads whose digest (as its settled fingerprint
/// hashed them) differs from the one frozen when the run started, with
/// both digests: a file edited during the run.
pub(super) fn changed_since_start(
    plan: &Plan,
    index: usize,
    frozen: &BTreeMap<String, FrozenInput>,
) -> Vec<(String, String, String)> {
    let preimage = plan.nodes[index].preimage.value();
    let Some(files) = preimage.get("files").and_then(|f| f.as_object()) else { return Vec::new() };
    files
        .iter()
        .filter_map(|(file, now)| {
            let name = file.strip_prefix("tokenizer ").unwrap_or(file);
            let then = &frozen.get(name)?.blake3;
            let now = now.as_str().unwrap_or_default();
            (then != now).then(|| (name.to_string(), then.clone(), now.to_string()))
        })
        .collect()
}

/// A digest shortened for a message (`blake3:0123456789ab…`).
pub(super) fn short_digest(digest: &str) -> String {
    match digest.strip_prefix("blake3:") {
        Some(hex) => format!("blake3:{}…", &hex[..hex.len().min(12)]),
        None => digest.to_string(),
    }
}
