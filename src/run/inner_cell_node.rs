//! A cell measured inside another step (a search's probe, a gate's extra
//! repeat) as a node of the run record, shared by `search` and `measure_more`.

use crate::step_kind::Kind;

/// A cell measured inside another step (a probe, an extra repeat) as a
/// run-record node: `ran` when this run measured it (its artifact says so),
/// `cached` when it was reused.
pub(super) fn inner_cell_node(
    store: &anvil_store::Store,
    run_id: &str,
    name: String,
    fingerprint: anvil_store::Fingerprint,
    detail: String,
) -> anvil_store::RunNode {
    let measured_now = store
        .read(&fingerprint)
        .ok()
        .flatten()
        .and_then(|entry| std::fs::File::open(entry.path_of("benchmark.json")).ok())
        .and_then(|file| serde_json::from_reader::<_, RunOf>(std::io::BufReader::new(file)).ok())
        .is_some_and(|artifact| artifact.run_id == run_id);
    anvil_store::RunNode {
        name,
        kind: Kind::Cell.as_str().to_string(),
        fingerprint,
        status: if measured_now { anvil_store::NodeStatus::Ran } else { anvil_store::NodeStatus::Cached },
        started_at: None,
        duration_ms: None,
        detail: Some(detail),
    }
}

/// The run that measured a cell, from its artifact.
#[derive(serde::Deserialize)]
struct RunOf {
    #[serde(default)]
    run_id: String,
}
