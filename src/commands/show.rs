//! `anvil show FP` and `anvil runs`.

use std::path::Path;

use anvil_store::{Fingerprint, NodeStatus, Store};
use serde_json::json;

use super::common::{Exit, input, open_store};
use super::diff::{label_of, resolve_step_or_prefix};
use crate::results::{FailedCell, FailedCheck, FailureClassCount};

pub fn show(store_root: &Path, prefix: &str, as_json: bool) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    let fp = resolve_step_or_prefix(&store, prefix)?;
    let Some(entry) = store.read(&fp)? else {
        if let Some(shown) = show_failed(&store, &fp, as_json)? {
            return Ok(shown);
        }
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

/// What a failed step kept about why it failed.
enum FailedDoc {
    Cell(FailedCell),
    Check(FailedCheck),
}

impl FailedDoc {
    /// The failed step's document in its evidence folder, if it kept one.
    fn read(dir: &Path) -> Option<FailedDoc> {
        let read = |name: &str| std::fs::read(dir.join(name)).ok();
        if let Some(bytes) = read("failed-cell.json") {
            return serde_json::from_slice(&bytes).ok().map(FailedDoc::Cell);
        }
        serde_json::from_slice(&read("failed-check.json")?).ok().map(FailedDoc::Check)
    }

    fn to_json(&self) -> serde_json::Value {
        match self {
            FailedDoc::Cell(cell) => json!(cell),
            FailedDoc::Check(check) => json!(check),
        }
    }

    fn classes(&self) -> &[FailureClassCount] {
        match self {
            FailedDoc::Cell(cell) => &cell.classes,
            FailedDoc::Check(check) => &check.classes,
        }
    }
}

/// A step that failed in its newest run and kept its evidence there (a
/// cell that measured nothing, a check that could not complete): why, by
/// failure class with the first reply of each, and where the records are.
/// Exit 1: nothing is stored.
fn show_failed(store: &Store, fp: &Fingerprint, as_json: bool) -> Result<Option<i32>, Exit> {
    let runs = store.runs()?;
    let failed_in = runs
        .iter()
        .rev()
        .find(|run| run.nodes.iter().any(|n| n.fingerprint == *fp && n.status == NodeStatus::Failed));
    let Some(run) = failed_in else { return Ok(None) };
    let dir = store.failed_dir(&run.run_id, fp);
    let Some(failed) = FailedDoc::read(&dir) else {
        return Ok(None);
    };
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|f| f.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    files.sort();
    if as_json {
        let shown = json!({"fingerprint": fp.to_string(), "failed_in": run.run_id, "failed": failed.to_json(), "evidence": dir, "files": files});
        println!("{}", serde_json::to_string_pretty(&shown).unwrap_or_default());
        return Ok(Some(1));
    }
    println!("{fp} {}", label_of(store, fp));
    println!("FAILED in {}: nothing stored under this fingerprint; a rerun runs it again\n", run.run_id);
    let first = match &failed {
        FailedDoc::Cell(_) => "first (request, status, detail)",
        FailedDoc::Check(check) => {
            println!("{} check could not complete against {}", check.check_type.as_str(), check.target);
            println!("stopped: {}", check.stopped);
            println!("attempts before it stopped: {} ({} failed)\n", check.attempts, check.failures);
            "first (attempt, status, detail)"
        }
    };
    println!("{:<20} {:>7}  {first}", "failure class", "count");
    for class in failed.classes() {
        let status = class.first_http_status.map_or("-".to_string(), |s| s.to_string());
        println!(
            "{:<20} {:>7}  #{} {status} {}",
            class.class, class.count, class.first_request_index, class.first_detail
        );
    }
    if let FailedDoc::Cell(FailedCell { stopped: Some(stopped), .. }) = &failed {
        println!("\nstopped early: {stopped}");
    }
    println!("\nevidence: {}", dir.display());
    for file in files {
        println!("  {file}");
    }
    Ok(Some(1))
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
