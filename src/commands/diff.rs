//! `anvil diff A B`: every differing field between two fingerprints'
//! preimages, recursing into upstream fingerprints so root causes are told
//! apart from cascades; stored results that differ are shown side by side.

use std::path::Path;

use anvil_store::{Fingerprint, Store};
use serde_json::{Value, json};

use crate::cli::RecipeArgs;
use crate::document::StepDocument;
use crate::history;
use crate::plan::changes::{Change, describe, diff_values};

use super::common::{Exit, input, load_plan, open_store};

/// How `RECIPE:STEP` sides are resolved (the flags `plan` takes).
pub struct Resolution {
    pub sim: bool,
    pub set: Vec<String>,
    /// Every differing raw result field, not only the headline comparison.
    pub all: bool,
}

/// The headline comparison of two stored cells (None unless both are cells).
fn measured_comparison(store: &Store, a: &Fingerprint, b: &Fingerprint) -> Option<String> {
    let side = |fp: &Fingerprint| crate::compare::resolve(store, &fp.to_string()).ok();
    let (a, b) = (side(a)?, side(b)?);
    let report = crate::compare::compare(&a, &b, &anvil_evidence::CompareOptions::default()).ok()?;
    (!report.cells.is_empty()).then(|| crate::compare::render(&report, true))
}

/// Preimages of the steps a recipe resolves to now, which no store holds yet.
type Current = std::collections::HashMap<Fingerprint, Value>;

/// One side of a diff.
struct Side {
    label: String,
    fingerprint: Fingerprint,
    preimage: Value,
}

pub fn diff(
    store_root: &Path,
    a: &str,
    b: Option<&str>,
    as_json: bool,
    resolution: &Resolution,
) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    let mut current = Current::new();
    let (a, b) = match b {
        Some(b) => (side(&store, a, resolution, &mut current)?, side(&store, b, resolution, &mut current)?),
        None => {
            let now = side(&store, a, resolution, &mut current)?;
            (last_run_side(&store, a)?, now)
        }
    };
    let explained = explain(&store, &current, &a.preimage, &b.preimage, 0);
    let results = result_changes(&store, &a.fingerprint, &b.fingerprint);
    if as_json {
        let doc = json!({
            "a": {"fingerprint": a.fingerprint.to_string(), "label": a.label},
            "b": {"fingerprint": b.fingerprint.to_string(), "label": b.label},
            "identical": a.fingerprint == b.fingerprint,
            "changes": explained.iter().map(to_json).collect::<Vec<_>>(),
            "results": results.as_ref().map(|r| r.iter().map(|c| json!({"path": c.path, "a": c.a, "b": c.b})).collect::<Vec<_>>()),
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return Ok(0);
    }
    println!("a: {} {}", a.fingerprint, a.label);
    println!("b: {} {}", b.fingerprint, b.label);
    if a.fingerprint == b.fingerprint {
        println!("identical fingerprints: nothing differs");
        return Ok(0);
    }
    print_explained(&explained, 0);
    // Two measured cells: the noise-aware comparison of their headline metrics first.
    if let Some(table) = measured_comparison(&store, &a.fingerprint, &b.fingerprint) {
        println!("\nmeasured results:\n{table}");
    }
    match results {
        Some(changes) if changes.is_empty() => println!("\nstored results are identical"),
        Some(changes) if !resolution.all => {
            println!("\nstored results differ in {} fields (--all lists them)", changes.len());
        }
        Some(changes) => {
            println!("\nstored results differ ({} fields):", changes.len());
            for change in &changes {
                println!("  {}", describe(change));
            }
        }
        None => {}
    }
    Ok(0)
}

/// A changed field; for an upstream fingerprint, what changed up there.
struct Explained {
    change: Change,
    cascade: Option<Vec<Explained>>,
}

fn explain(store: &Store, current: &Current, a: &Value, b: &Value, depth: usize) -> Vec<Explained> {
    let preimage = |fp: &Fingerprint| current.get(fp).cloned().or_else(|| history::preimage_of(store, fp));
    diff_values(a, b)
        .into_iter()
        .map(|change| {
            let cascade = (change.path.starts_with("upstream") && depth < 8)
                .then(|| {
                    let fa = change.a.as_str()?.parse::<Fingerprint>().ok()?;
                    let fb = change.b.as_str()?.parse::<Fingerprint>().ok()?;
                    let pa = preimage(&fa)?;
                    let pb = preimage(&fb)?;
                    Some(explain(store, current, &pa, &pb, depth + 1))
                })
                .flatten();
            Explained { change, cascade }
        })
        .collect()
}

fn print_explained(items: &[Explained], depth: usize) {
    let pad = "  ".repeat(depth + 1);
    let (roots, cascades): (Vec<_>, Vec<_>) =
        items.iter().partition(|e| e.cascade.is_none() && !e.change.path.starts_with("upstream"));
    if !roots.is_empty() {
        println!(
            "{pad}{}:",
            if depth == 0 { "root causes (this step's own settings)" } else { "changed there" }
        );
        for item in roots {
            println!("{pad}  {}", describe(&item.change));
        }
    }
    for item in cascades {
        println!("{pad}cascade: {}", describe(&item.change));
        if let Some(nested) = &item.cascade {
            print_explained(nested, depth + 1);
        }
    }
}

fn to_json(item: &Explained) -> Value {
    json!({
        "path": item.change.path,
        "a": item.change.a,
        "b": item.change.b,
        "presence": item.change.presence,
        "cause": if item.change.path.starts_with("upstream") { "cascade" } else { "root" },
        "upstream_changes": item.cascade.as_ref().map(|c| c.iter().map(to_json).collect::<Vec<_>>()),
    })
}

fn result_changes(store: &Store, a: &Fingerprint, b: &Fingerprint) -> Option<Vec<Change>> {
    let ra = store.read(a).ok().flatten()?.result;
    let rb = store.read(b).ok().flatten()?.result;
    Some(diff_values(&ra, &rb))
}

/// `RECIPE:STEP` (the step as the recipe resolves now) or a fingerprint prefix.
fn side(store: &Store, spec: &str, resolution: &Resolution, current: &mut Current) -> Result<Side, Exit> {
    if spec.ends_with(".json") && Path::new(spec).is_file() {
        return document_side(Path::new(spec), current);
    }
    if let Some((recipe, step)) = recipe_step(spec) {
        let args = RecipeArgs { recipe: recipe.into(), set: resolution.set.clone(), sim: resolution.sim };
        let plan = load_plan(&args, Some(store))?;
        current.extend(plan.nodes.iter().map(|n| (n.fingerprint, n.preimage.value())));
        let node = plan
            .nodes
            .iter()
            .find(|n| n.name == step)
            .ok_or_else(|| input(format!("{recipe} has no step `{step}`")))?;
        return Ok(Side {
            label: format!("({} {} as {} resolves now)", node.kind, node.name, recipe),
            fingerprint: node.fingerprint,
            preimage: node.preimage.value(),
        });
    }
    let fingerprint = resolve_prefix(store, spec)?;
    let preimage = history::preimage_of(store, &fingerprint)
        .ok_or_else(|| input(format!("no preimage recorded for {fingerprint}")))?;
    Ok(Side { label: label_of(store, &fingerprint), fingerprint, preimage })
}

/// A step document (`anvil plan --emit`): its key is the preimage; the
/// documents beside it explain a change upstream.
fn document_side(path: &Path, current: &mut Current) -> Result<Side, Exit> {
    let document = StepDocument::read(path).map_err(|e| input(e.to_string()))?;
    let siblings = path.parent().and_then(|dir| std::fs::read_dir(dir).ok());
    for entry in siblings.into_iter().flatten().flatten() {
        if let Ok(sibling) = StepDocument::read(&entry.path())
            && let Ok(fingerprint) = sibling.fingerprint.parse::<Fingerprint>()
        {
            current.insert(fingerprint, sibling.key);
        }
    }
    let fingerprint = document.key_fingerprint();
    Ok(Side {
        label: format!("({} {} in {})", document.kind, document.name, path.display()),
        fingerprint,
        preimage: document.key,
    })
}

fn last_run_side(store: &Store, spec: &str) -> Result<Side, Exit> {
    let (recipe, step) = recipe_step(spec).ok_or_else(|| {
        input("with one argument, diff takes RECIPE:STEP and compares it with its last run")
    })?;
    let (run, node) = last_run_node(store, recipe, step)?;
    let preimage = history::preimage_in_run(&run, &node.fingerprint)
        .or_else(|| history::preimage_of(store, &node.fingerprint))
        .ok_or_else(|| input("the last run kept no preimage"))?;
    Ok(Side {
        label: format!("({} {} in {} at {})", node.kind, node.name, run.run_id, run.started_at),
        fingerprint: node.fingerprint,
        preimage,
    })
}

/// The last run of `recipe` with this store, and its node `step`.
fn last_run_node(
    store: &Store,
    recipe: &str,
    step: &str,
) -> Result<(anvil_store::RunRecord, anvil_store::RunNode), Exit> {
    let key = Path::new(recipe)
        .canonicalize()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| recipe.to_string());
    let run = store
        .last_run_of(&key)?
        .ok_or_else(|| input(format!("{recipe} has never been run with this store")))?;
    let node = run
        .nodes
        .iter()
        .find(|n| n.name == step)
        .cloned()
        .ok_or_else(|| input(format!("the last run of {recipe} had no step `{step}`")))?;
    Ok((run, node))
}

/// A fingerprint from a hex prefix, or from `RECIPE:STEP` (the step as
/// the recipe's last run with this store recorded it).
pub fn resolve_step_or_prefix(store: &Store, spec: &str) -> Result<Fingerprint, Exit> {
    match recipe_step(spec) {
        Some((recipe, step)) => Ok(last_run_node(store, recipe, step)?.1.fingerprint),
        None => resolve_prefix(store, spec),
    }
}

fn recipe_step(spec: &str) -> Option<(&str, &str)> {
    let (recipe, step) = spec.rsplit_once(':')?;
    Path::new(recipe).is_file().then_some((recipe, step))
}

/// A unique hex prefix among stored entries and fingerprints runs recorded.
pub fn resolve_prefix(store: &Store, prefix: &str) -> Result<Fingerprint, Exit> {
    if let Ok(fp) = store.resolve_prefix(prefix) {
        return Ok(fp);
    }
    let prefix_lower = prefix.to_ascii_lowercase();
    if prefix_lower.len() < 4 || !prefix_lower.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(input(format!(
            "`{prefix}` is neither RECIPE:STEP nor a fingerprint prefix (at least 4 hex digits)"
        )));
    }
    let matches: Vec<Fingerprint> = history::recorded_fingerprints(store)
        .into_iter()
        .filter(|f| f.to_string().starts_with(&prefix_lower))
        .collect();
    match matches.as_slice() {
        [one] => Ok(*one),
        [] => Err(input(format!("no stored or recorded fingerprint starts with `{prefix}`"))),
        many => Err(input(format!(
            "`{prefix}` is ambiguous: {}",
            many.iter().map(|f| f.short()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// "(cell headline, last recorded in run-…)"
pub fn label_of(store: &Store, fp: &Fingerprint) -> String {
    let runs = store.runs().unwrap_or_default();
    runs.iter()
        .rev()
        .find_map(|run| {
            run.nodes
                .iter()
                .find(|n| n.fingerprint == *fp)
                .map(|n| format!("({} {}, {} in {})", n.kind, n.name, n.status, run.run_id))
        })
        .unwrap_or_default()
}
