//! One side of a comparison, read from wherever results are.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anvil_store::{RunRecord, Store};
use serde_json::Value;

use super::error::CompareError;
use crate::results::{self, DecisionResult, ScreenResult};

/// A measured cell: its artifact's file, and the preimages of it and its
/// server. Nothing of the artifact is held here: [`crate::compare::compare`]
/// reads a pair's heads when it compares that pair, and readers stream the
/// records from the file, so a side of many cells holds none of them.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The artifact's file.
    pub artifact_file: PathBuf,
    pub preimage: Option<Value>,
    pub server: Option<Value>,
}

#[derive(Debug, Default)]
pub struct Side {
    pub label: String,
    pub cells: BTreeMap<String, Cell>,
    /// Screen name → winner (or "no meaningful difference").
    pub screens: BTreeMap<String, Value>,
    /// Gate and check name → status.
    pub gates: BTreeMap<String, Value>,
    pub labels: Option<Value>,
    /// Per cell, the run-to-run spread of each headline metric this side
    /// states: a bundle's manifest, or a recorded run's recipe (declared only).
    pub spreads: BTreeMap<String, anvil_evidence::run_to_run::Spreads>,
    /// A bundle's unpacked store, kept while the side's artifact files are read.
    pub scratch: Option<std::sync::Arc<tempfile::TempDir>>,
}

/// Locate a side: a bundle (`.anvil`), a lone artifact (`.json`), a recipe
/// (`.kdl`: its latest run), a run id, or a stored cell's fingerprint prefix.
/// Each cell's artifact is only found, not read.
pub fn resolve(store: &Store, text: &str) -> Result<Side, CompareError> {
    let path = Path::new(text);
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => {
            if !path.is_file() {
                return Err(CompareError::NoSuchFile { text: text.to_string() });
            }
            let name =
                path.file_stem().map_or_else(|| text.to_string(), |s| s.to_string_lossy().into_owned());
            let cell = Cell { artifact_file: path.to_path_buf(), preimage: None, server: None };
            Ok(Side { label: text.to_string(), cells: BTreeMap::from([(name, cell)]), ..Side::default() })
        }
        Some("anvil") => {
            let scratch = tempfile::tempdir().map_err(|source| CompareError::Scratch { source })?;
            let imported = crate::bundle::unpack(path, scratch.path())?;
            let temp_store = Store::open(&scratch.path().join("store"))?;
            crate::bundle::add_entries(&imported, &temp_store)?;
            let mut side = from_run(&temp_store, &imported.run);
            side.label = format!("{text} ({})", imported.verified.digest);
            side.spreads = imported.verified.manifest.run_to_run.clone();
            side.scratch = Some(std::sync::Arc::new(scratch));
            Ok(side)
        }
        Some("kdl") => {
            let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf()).display().to_string();
            let run = store.last_run_of(&key)?;
            let run = run.ok_or_else(|| CompareError::NoRun { text: text.to_string() })?;
            let mut side = from_run(store, &run);
            side.label = format!("{text} (run {})", run.run_id);
            Ok(side)
        }
        _ => {
            if let Ok(Some(run)) = store.run(text) {
                let mut side = from_run(store, &run);
                side.label = format!("run {text}");
                return Ok(side);
            }
            let fp = store
                .resolve_prefix(text)
                .map_err(|source| CompareError::Unknown { text: text.to_string(), source })?;
            let entry = store.read(&fp)?.ok_or_else(|| CompareError::NotStored { text: text.to_string() })?;
            let artifact_file = entry.path_of("benchmark.json");
            if !artifact_file.is_file() {
                return Err(CompareError::NotACell { text: text.to_string() });
            }
            let cell = Cell { artifact_file, preimage: Some(entry.preimage), server: None };
            Ok(Side {
                label: format!("cell {}", fp.short()),
                cells: BTreeMap::from([(fp.short(), cell)]),
                ..Side::default()
            })
        }
    }
}

/// What a run stored, step by step.
fn from_run(store: &Store, run: &RunRecord) -> Side {
    let extra = crate::run_extra::RunExtra::of(run);
    let preimage_of = |fp: &anvil_store::Fingerprint| extra.preimage(fp).cloned();
    let mut side = Side { spreads: declared_spreads(run, &extra.invocation.set), ..Side::default() };
    for node in run.nodes.iter().filter(|n| n.status.stored()) {
        let Ok(Some(entry)) = store.read(&node.fingerprint) else { continue };
        let result = &entry.result;
        match node.kind.as_str() {
            "cell" => {
                let artifact_file = entry.path_of("benchmark.json");
                if !artifact_file.is_file() {
                    continue;
                }
                // The server it ran on: the upstream fingerprint its preimage names.
                let stored = crate::plan::StoredPreimage::of(&entry.preimage);
                let server = stored.server().and_then(|fp| extra.preimages.get(fp).cloned());
                let preimage = preimage_of(&node.fingerprint).or(Some(entry.preimage.clone()));
                side.cells.insert(node.name.clone(), Cell { artifact_file, preimage, server });
            }
            "screen" => {
                let Ok(screen) = results::from_value::<ScreenResult>(result.clone()) else { continue };
                let winner = match (screen.winner, screen.meaningful) {
                    (Some(winner), true) => winner,
                    (None, _) => "undecided at 95% confidence".into(),
                    (Some(_), false) => "no meaningful difference".into(),
                };
                side.screens.insert(node.name.clone(), Value::String(winner));
            }
            "gate" | "check" => {
                let status =
                    results::status_of(result).map_or(Value::Null, |v| Value::String(v.as_str().into()));
                side.gates.insert(format!("{} {}", node.kind, node.name), status);
            }
            "decision" => {
                let Ok(decision) = results::from_value::<DecisionResult>(result.clone()) else { continue };
                side.labels = Some(Value::from(decision.decision_labels));
            }
            _ => {}
        }
    }
    side
}

/// The run-to-run spreads a recorded run's recipe declares, loaded as the
/// run was (`set`); none if it no longer loads.
fn declared_spreads(
    run: &RunRecord,
    set: &[String],
) -> BTreeMap<String, anvil_evidence::run_to_run::Spreads> {
    crate::recipe::load(Path::new(&run.recipe_path), set)
        .map(|recipe| crate::bundle::run_to_run::declared(&recipe))
        .unwrap_or_default()
}
