//! The integration tests of anvil (the CLI), as one test binary: every other
//! file of this folder is a module here (why: `autotests = false` and
//! the one `[[test]]` in Cargo.toml), so a new test file needs its `mod`
//! line below.

// Helpers shared by the modules.
mod common;
mod support_servers;

mod agents;
mod broken_inputs;
mod bundles;
mod cache;
mod cells;
mod cold_cache;
mod concurrency;
mod confidence;
mod crash;
mod diff;
mod docs_fields;
mod docs_recipes;
mod engines;
mod error_storms;
mod errors;
// Parquet export is a feature (`--features parquet`; scripts/test.sh turns it on).
#[cfg(feature = "parquet")]
mod export_data;
mod failed_cells;
mod flow;
mod frozen_inputs;
mod full_disk;
mod function_length;
mod gate_bounds;
mod gates;
mod golden_fingerprints;
mod https;
mod import_result;
mod litter;
mod loadgen_workers;
mod module_cycles;
mod quality;
mod recipe_properties;
mod report;
mod report_agents;
mod report_scale;
mod request_options;
mod resolved_cells;
mod run_layer_imports;
mod saturation;
mod scrape_targets;
mod search;
mod servers;
mod slurm;
mod slurm_store;
mod stages;
mod steady_load;
mod step_documents;
mod stopping;
mod sweeps;
mod tokenizer;
mod traffic;
mod vllm;

/// With `autotests = false`, a test file that no `mod` line names is never
/// built, so never run: in every crate of the workspace, each `tests/*.rs`
/// and helper folder must be a module of that crate's `tests/main.rs`.
#[test]
fn every_test_file_is_a_module_of_its_crates_test_binary() {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut folders = vec![workspace.join("tests")];
    for krate in std::fs::read_dir(workspace.join("crates")).expect("crates/").flatten() {
        if krate.path().join("tests").is_dir() {
            folders.push(krate.path().join("tests"));
        }
    }
    let mut missing = Vec::new();
    for folder in folders {
        let main = std::fs::read_to_string(folder.join("main.rs")).unwrap_or_default();
        for entry in std::fs::read_dir(&folder).expect("tests folder").flatten() {
            let path = entry.path();
            let module = if path.extension().is_some_and(|e| e == "rs") {
                path.file_stem()
            } else if path.join("mod.rs").is_file() {
                path.file_name()
            } else {
                continue;
            };
            let module = module.and_then(|m| m.to_str()).unwrap_or_default();
            if module != "main" && !main.lines().any(|line| line.trim() == format!("mod {module};")) {
                missing.push(format!(
                    "{} (add `mod {module};` to {})",
                    path.display(),
                    folder.join("main.rs").display()
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "test files outside their crate's one test binary, never built:\n{}",
        missing.join("\n")
    );
}
