//! `anvil show FP` and `anvil runs`.

use std::path::Path;

use anvil_store::NodeStatus;
use serde_json::json;

use super::common::{Exit, input, open_store};
use super::diff::{label_of, resolve_step_or_prefix};

pub fn show(store_root: &Path, prefix: &str, as_json: bool) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    let fp = resolve_step_or_prefix(&store, prefix)?;
    let Some(entry) = store.read(&fp)? else {
        return Err(input(format!(
            "{fp} is recorded but not stored (it failed, or gc removed it) {}",
            label_of(&store, &fp)
        )));
    };
    if as_json {
        let files: Vec<_> = entry
            .files
            .iter()
            .map(|f| json!({"name": f.name, "blake3": f.blake3, "bytes": f.bytes}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&json!({"fingerprint": fp.to_string(), "created_at": entry.created_at, "preimage": entry.preimage, "result": entry.result, "files": files})).unwrap_or_default());
        return Ok(0);
    }
    println!("{fp} {}", label_of(&store, &fp));
    println!(
        "kind: {}   stored: {}   dir: {}",
        entry.preimage["kind"].as_str().unwrap_or("?"),
        entry.created_at,
        entry.dir.display()
    );
    let benchmark = entry.path_of("benchmark.json");
    if benchmark.exists() {
        // The table needs the figures, not the per-request lists: a large
        // cell is shown without reading those into memory.
        if let Ok(head) = anvil_evidence::artifact_file::head(&benchmark) {
            println!("\n{}", anvil_loadgen::render_table(&serde_json::Value::Object(head)));
        }
    } else {
        println!("\nresult:\n{}", serde_json::to_string_pretty(&entry.result).unwrap_or_default());
    }
    println!("\nfiles:");
    for file in &entry.files {
        println!(
            "  {:<28} {:>10} bytes  blake3:{}",
            file.name,
            file.bytes,
            &file.blake3[..16.min(file.blake3.len())]
        );
    }
    Ok(0)
}

pub fn runs(store_root: &Path, as_json: bool) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    let runs = store.runs()?;
    if as_json {
        let list: Vec<_> = runs
            .iter()
            .map(|r| json!({"run_id": r.run_id, "recipe": r.recipe_path, "started_at": r.started_at, "finished_at": r.finished_at, "status": r.status, "nodes": r.nodes.iter().map(|n| json!({"name": n.name, "kind": n.kind, "fingerprint": n.fingerprint.to_string(), "status": n.status, "duration_ms": n.duration_ms, "detail": n.detail})).collect::<Vec<_>>()}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&list).unwrap_or_default());
        return Ok(0);
    }
    for run in &runs {
        let count = |s: NodeStatus| run.nodes.iter().filter(|n| n.status == s).count();
        println!(
            "{}  {}  {:<9}  ran {:>3}  cached {:>3}  failed {:>3}  {}",
            run.run_id,
            run.started_at,
            run.status.as_str(),
            count(NodeStatus::Ran),
            count(NodeStatus::Cached),
            count(NodeStatus::Failed),
            run.recipe_path
        );
    }
    if runs.is_empty() {
        println!("no runs recorded in {}", store_root.display());
    }
    Ok(0)
}
