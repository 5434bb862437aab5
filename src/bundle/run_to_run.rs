//! The run-to-run spread a bundle states for each of its cells: measured
//! from the cell's repeats where it has them, else declared in the recipe
//! (`run-to-run`), metric by metric. `reproduce` judges a cell measured
//! once on a side against it (docs/bundles.md "The run-to-run spread").

use std::collections::BTreeMap;

use anvil_evidence::CompareOptions;
use anvil_evidence::run_to_run::Spreads;
use anvil_store::{RunRecord, Store};

use crate::recipe::{Recipe, Spec};

/// Per cell of `recipe` that declares `run-to-run`, its spreads.
pub fn declared(recipe: &Recipe) -> BTreeMap<String, Spreads> {
    recipe
        .steps
        .iter()
        .filter_map(|s| match &s.spec {
            Spec::Cell(cell) => cell.run_to_run.as_ref().map(|r| (s.name.clone(), r.spreads())),
            _ => None,
        })
        .collect()
}

/// Per cell of `run` (by name), the spread of each headline metric the
/// bundle states; a cell with none is left out. A cell whose artifact
/// does not read states what its recipe declares.
pub fn stated(store: &Store, run: &RunRecord, recipe: &Recipe) -> BTreeMap<String, Spreads> {
    let declared = declared(recipe);
    let mut out = BTreeMap::new();
    for node in run.nodes.iter().filter(|n| n.kind == "cell" && n.status.stored()) {
        let mut spreads = declared.get(&node.name).cloned().unwrap_or_default();
        if let Ok(Some(entry)) = store.read(&node.fingerprint) {
            let file = entry.path_of("benchmark.json");
            let head = anvil_evidence::artifact_file::head_but_records(&file).ok();
            let measured = head.and_then(|head| {
                anvil_evidence::headline::measured_spreads(&head, &file, &CompareOptions::default()).ok()
            });
            // What the repeats show outranks what was declared.
            spreads.extend(measured.unwrap_or_default());
        }
        if !spreads.is_empty() {
            out.insert(node.name.clone(), spreads);
        }
    }
    out
}
