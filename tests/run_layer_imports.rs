//! The run layer and the executors run step documents, not the recipe: no
//! file under `src/run/` or `src/executor/` names `crate::recipe` (a `use`
//! of it, as `grep -rn "use crate::recipe" src/run src/executor` finds, or a
//! path through it). What a step needs to run is in its document
//! (`src/document/`), which the planner writes from the recipe.

use std::path::{Path, PathBuf};

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
fn naming_the_recipe() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src/run", "src/executor"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 40, "the run layer's files were not found under {}", root.display());
    let mut naming: Vec<String> = files
        .into_iter()
        .filter(|path| std::fs::read_to_string(path).unwrap_or_default().contains("crate::recipe"))
        .map(|path| path.strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .collect();
    naming.sort();
    naming
}

#[test]
fn the_run_layer_names_no_recipe_type() {
    let naming = naming_the_recipe();
    assert!(
        naming.is_empty(),
        "these files name crate::recipe: run their steps from the step document instead: {naming:?}"
    );
}
