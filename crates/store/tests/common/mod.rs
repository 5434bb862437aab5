//! Helpers shared by the store's integration tests.
#![allow(dead_code)]

use anvil_store::{Entry, Fingerprint, NodeStatus, RunNode, RunRecord, Store};
use serde_json::json;

/// A fresh store in its own temporary directory (removed on drop).
pub struct TestStore {
    pub store: Store,
    pub dir: tempfile::TempDir,
}

pub fn new_store() -> TestStore {
    let dir = tempfile::tempdir().expect("create temp dir");
    let store = Store::open(&dir.path().join("store")).expect("open new store");
    TestStore { store, dir }
}

/// A distinct fingerprint per label.
pub fn fp(label: &str) -> Fingerprint {
    Fingerprint::of_bytes(label.as_bytes())
}

/// Commit an entry the way the lead will: preimage, result, one log file.
pub fn put(store: &Store, label: &str) -> Entry {
    let fingerprint = fp(label);
    let mut staged = store.stage(&fingerprint).expect("stage");
    staged
        .write_json("preimage.json", &json!({ "node": label, "protocol": "capacity-v4" }))
        .expect("preimage");
    staged.write_json("result.json", &json!({ "label": label, "tokens": 42 })).expect("result");
    staged.write_bytes("logs/server.log", format!("log of {label}\n").as_bytes()).expect("log");
    staged.commit().expect("commit")
}

pub fn run_record(run_id: &str, recipe: &str, started_at: &str, labels: &[&str]) -> RunRecord {
    RunRecord {
        run_id: run_id.to_string(),
        recipe: recipe.to_string(),
        recipe_path: format!("/recipes/{recipe}.kdl"),
        started_at: started_at.to_string(),
        finished_at: None,
        status: anvil_store::RunStatus::Succeeded,
        nodes: labels
            .iter()
            .map(|label| RunNode {
                name: label.to_string(),
                kind: "cell".to_string(),
                fingerprint: fp(label),
                status: NodeStatus::Ran,
                started_at: None,
                duration_ms: Some(5),
                detail: None,
            })
            .collect(),
        extra: json!({ "host": "test" }),
    }
}
