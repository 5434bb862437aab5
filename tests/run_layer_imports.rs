//! The run layer and the executors run step documents, not the recipe: no
//! file under `src/run/` or `src/executor/` names `crate::recipe` (a `use`
//! of it, as `grep -rn "use crate::recipe" src/run src/executor` finds, or a
//! path through it). The files that still do are listed in [`NOT_YET`],
//! each waiting for its steps to carry what it reads in their documents. A
//! file that stops naming the recipe fails the test until it leaves the
//! list, so the list only shrinks; a new file that names it is refused.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Files that still read recipe types, to be moved onto step documents.
const NOT_YET: &[&str] = &[
    "src/executor/interface.rs",
    "src/executor/slurm/group.rs",
    "src/executor/slurm/settings.rs",
    "src/run/cell.rs",
    "src/run/decision.rs",
    "src/run/decision_family_tests.rs",
    "src/run/error.rs",
    "src/run/gate.rs",
    "src/run/gate_oc_tests.rs",
    "src/run/interval_verdict.rs",
    "src/run/launch.rs",
    "src/run/measure.rs",
    "src/run/measure_more.rs",
    "src/run/mod.rs",
    "src/run/scheduler.rs",
    "src/run/screen.rs",
    "src/run/screen_oc_tests.rs",
    "src/run/search.rs",
    "src/run/servers.rs",
    "src/run/step.rs",
    "src/run/waves.rs",
];

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|x| x == "rs") {
            found.push(path);
        }
    }
}

/// The files under `src/run` and `src/executor` that name `crate::recipe`,
/// relative to the workspace.
fn naming_the_recipe() -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src/run", "src/executor"] {
        rust_files(&root.join(dir), &mut files);
    }
    files
        .into_iter()
        .filter(|path| std::fs::read_to_string(path).unwrap_or_default().contains("crate::recipe"))
        .map(|path| path.strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_run_layer_names_no_recipe_type_beyond_the_files_not_yet_moved() {
    let naming = naming_the_recipe();
    let listed: BTreeSet<String> = NOT_YET.iter().map(|f| f.to_string()).collect();
    let new: Vec<&String> = naming.difference(&listed).collect();
    assert!(
        new.is_empty(),
        "these files name crate::recipe: run their steps from the step document instead: {new:?}"
    );
    let moved: Vec<&String> = listed.difference(&naming).collect();
    assert!(moved.is_empty(), "these files no longer name crate::recipe: take them off NOT_YET: {moved:?}");
}
