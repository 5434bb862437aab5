//! `anvil verify`: what a bundle claims, checked by deriving it again.
//!
//! 1. Every member's size and blake3 against the manifest, and every
//!    entry's preimage against its fingerprint (as `import` does).
//! 2. Every benchmark artifact's statistics re-derived from its own
//!    per-request records by `anvil-evidence`, an implementation that shares
//!    no code with the load generator that computed them; and each cell
//!    result's metrics against its artifact.
//! 3. The recipe, planned again from the bundle: every step must plan to
//!    the fingerprint the run recorded.
//! 4. Every gate, screen and decision evaluated again from the stored
//!    results of its inputs, and the decision summary rebuilt; the
//!    manifest's run-to-run spreads stated again (declared ones from the
//!    recipe, measured ones re-derived from the repeats).
//!
//! Each finding names the member and the field path.

use std::path::Path;

use anvil_store::{Fingerprint, NodeStatus, RunRecord, RunStatus, Store};
use serde::Serialize;
use serde_json::Value;

use super::import::{ImportError, Imported, add_entries, extract_recipe, unpack};
use crate::plan::changes::diff_values;
use crate::plan::{EngineMode, Plan, canonical_bytes, reads_results};
use crate::recipe::Kind;

/// One claim the bundle makes that did not check out.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The member (`entries/<fp>/benchmark.json`) or step (`gate.ttft-ok`).
    pub at: String,
    /// The field path inside it (`metrics.ttft_p50_ms`), empty for the whole.
    pub path: String,
    pub claimed: Value,
    pub derived: Value,
}

#[derive(Debug, Default, Serialize)]
pub struct Verification {
    pub digest: String,
    pub members: usize,
    pub entries: usize,
    pub artifacts: usize,
    /// Statistics compared across all artifacts.
    pub fields_checked: usize,
    /// Fields the re-derivation could not check, with why (first of each kind).
    pub unchecked: Vec<String>,
    pub steps_replanned: usize,
    pub verdicts_reevaluated: usize,
    /// Kept answers checked against their digests and scored again (`answers.rs`).
    pub answers_checked: usize,
    pub summary_rebuilt: bool,
    pub findings: Vec<Finding>,
}

impl Verification {
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Verify the bundle at `bundle`.
pub fn verify_bundle(bundle: &Path) -> Result<Verification, ImportError> {
    let scratch = tempfile::tempdir().map_err(|source| ImportError::Io {
        what: "creating",
        path: std::env::temp_dir(),
        source,
    })?;
    let unpacked = scratch.path().join("bundle");
    let imported = unpack(bundle, &unpacked)?;
    let mut report = Verification {
        digest: imported.verified.digest.clone(),
        members: imported.verified.manifest.members.len() + 1,
        entries: imported.entries.len(),
        ..Verification::default()
    };

    // 2. Artifacts, re-derived from their own raw records.
    for (fp, names) in &imported.entries {
        if names.iter().any(|n| n == "benchmark.json") {
            rederive_artifact(&mut report, &unpacked, fp);
        }
    }

    // 3 and 4. The recipe planned again on a store holding only the bundle.
    let store_dir = scratch.path().join("store");
    let store = Store::open(&store_dir)?;
    add_entries(&imported, &store)?;
    let Some(mut plan) = plan_again(&mut report, &imported, &store, &scratch.path().join("recipe"))? else {
        return Ok(report);
    };
    let run = &imported.run;
    replan_steps(&mut report, &mut plan, run, &store);
    let (checked, found) = super::answers::rederive(&plan, &store);
    report.answers_checked = checked;
    report.findings.extend(found.into_iter().map(|f| Finding {
        at: f.at,
        path: f.path,
        claimed: f.claimed,
        derived: f.derived,
    }));
    run_to_run_again(&mut report, &imported.verified.manifest, &store, run, &plan.recipe);
    // The decision summary, rebuilt from the same results and endings.
    rebuild_summary(&mut report, &plan, run, &store, &unpacked.join("outputs/decision-summary.json"));
    Ok(report)
}

/// The artifact of entry `fp` re-derived from its own records, and the
/// cell's stored result held to the artifact's metrics.
fn rederive_artifact(report: &mut Verification, unpacked: &Path, fp: &Fingerprint) {
    let member = format!("entries/{fp}/benchmark.json");
    // Streamed from the file (never held whole); a member that is not
    // an artifact is reported.
    let derived = match anvil_evidence::rederive_file(&unpacked.join(&member)) {
        Ok(derived) => derived,
        Err(err) => {
            report.findings.push(finding(
                &member,
                "",
                "an anvil-serving.benchmark/v1 artifact",
                &err.to_string(),
            ));
            return;
        }
    };
    report.artifacts += 1;
    report.fields_checked += derived.fields_checked() as usize;
    for unchecked in derived.unchecked {
        if report.unchecked.len() < 20 {
            report.unchecked.push(format!("{member}: {}: {}", unchecked.path, unchecked.reason));
        }
    }
    for mismatch in derived.mismatches {
        report.findings.push(Finding {
            at: member.clone(),
            path: mismatch.path,
            claimed: mismatch.stored,
            derived: mismatch.derived,
        });
    }
    // The cell's stored result repeats the artifact's metrics: they must agree.
    let result = std::fs::read(unpacked.join(format!("entries/{fp}/result.json"))).ok();
    let result = result.and_then(|bytes| serde_json::from_slice::<crate::results::CellResult>(&bytes).ok());
    // Only the metrics of the artifact, from its head (the records are not read).
    let artifact_metrics = anvil_evidence::artifact_file::head(&unpacked.join(&member))
        .ok()
        .and_then(|mut head| match head.remove("metrics") {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    if let Some(result) = result {
        for change in diff_values(&result.metrics, &Value::Object(artifact_metrics)) {
            report.findings.push(Finding {
                at: format!("entries/{fp}/result.json"),
                path: format!("metrics.{}", change.path),
                claimed: change.a,
                derived: change.b,
            });
        }
    }
}

/// The bundle's recipe, loaded with the run's `--set` values (extracted to
/// `into`) and planned on `store`; `None`, with a finding, when it does not
/// load or plan.
fn plan_again(
    report: &mut Verification,
    imported: &Imported,
    store: &Store,
    into: &Path,
) -> Result<Option<Plan>, ImportError> {
    let recipe_path = extract_recipe(imported, into)?;
    let invocation = &imported.verified.manifest.invocation;
    let recipe = match crate::recipe::load(&recipe_path, &invocation.set) {
        Ok(recipe) => recipe,
        Err(err) => {
            report.findings.push(finding("recipe", "", "loads", &format!("{err}")));
            return Ok(None);
        }
    };
    let mode = if invocation.sim { EngineMode::SimulatedTwins } else { EngineMode::AsDeclared };
    match Plan::build(recipe, Some(store), mode) {
        Ok(plan) => Ok(Some(plan)),
        Err(err) => {
            report.findings.push(finding("recipe", "", "plans", &format!("{err}")));
            Ok(None)
        }
    }
}

/// Every step the run recorded as stored, planned again to its recorded
/// fingerprint; each verdict among them evaluated again from its inputs'
/// stored results and held to the stored one.
fn replan_steps(report: &mut Verification, plan: &mut Plan, run: &RunRecord, store: &Store) {
    for position in 0..plan.order.len() {
        let i = plan.order[position];
        let node = &plan.nodes[i];
        let Some(recorded) = run.nodes.iter().find(|n| n.name == node.name) else {
            report.findings.push(finding(&qualified(plan, i), "", "in the run record", "absent"));
            continue;
        };
        if reads_results(node.kind) {
            plan.settle(i, store);
        }
        let node = &plan.nodes[i];
        // A launched server's fingerprint hashes this machine's engine binary:
        // only what the run stored is held to its recorded fingerprint.
        if !recorded.status.stored() {
            continue;
        }
        report.steps_replanned += 1;
        if node.fingerprint != recorded.fingerprint {
            report.findings.push(Finding {
                at: qualified(plan, i),
                path: "fingerprint".into(),
                claimed: Value::String(recorded.fingerprint.to_string()),
                derived: Value::String(node.fingerprint.to_string()),
            });
            continue;
        }
        let Some(again) = crate::run::reevaluate(plan, i, store) else { continue };
        report.verdicts_reevaluated += 1;
        let stored = store.read(&node.fingerprint).ok().flatten().map(|e| e.result).unwrap_or(Value::Null);
        match again {
            Ok(result) if canonical_bytes(&result) == canonical_bytes(&stored) => {}
            Ok(result) => {
                for change in diff_values(&stored, &result) {
                    report.findings.push(Finding {
                        at: qualified(plan, i),
                        path: change.path,
                        claimed: change.a,
                        derived: change.b,
                    });
                }
            }
            Err(why) => report.findings.push(finding(&qualified(plan, i), "", "evaluates", &why)),
        }
    }
}

/// The decision summary (`summary_member`, when the bundle has one and the
/// recipe a decision) rebuilt from the stored results and the run's
/// endings, held to the bundle's field by field.
fn rebuild_summary(
    report: &mut Verification,
    plan: &Plan,
    run: &RunRecord,
    store: &Store,
    summary_member: &Path,
) {
    if summary_member.is_file() && plan.recipe.steps.iter().any(|s| s.kind == Kind::Decision) {
        let claimed: Value = read_json(summary_member);
        let endings: Vec<(usize, &'static str, String)> = plan
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let recorded = run.nodes.iter().find(|n| n.name == node.name);
                let ending = recorded.map_or("skipped", |n| ending_word(n.status));
                let detail = recorded.and_then(|n| n.detail.as_deref()).unwrap_or("");
                (i, ending, detail.split_once('\n').map_or(detail, |(first, _)| first).to_string())
            })
            .collect();
        let outcomes = crate::report::campaign::Outcomes {
            endings: &endings,
            finished_at: run.finished_at.clone().unwrap_or_default(),
            all_succeeded: run.status == RunStatus::Succeeded,
        };
        let rebuilt = crate::report::campaign::decision_summary(plan, store, &outcomes);
        // Compared field by field, as JSON: a finding names the path that differs.
        let rebuilt = serde_json::to_value(&rebuilt).unwrap_or_default();
        report.summary_rebuilt = true;
        for change in diff_values(&claimed, &rebuilt) {
            report.findings.push(Finding {
                at: "outputs/decision-summary.json".into(),
                path: change.path,
                claimed: change.a,
                derived: change.b,
            });
        }
    }
}

/// The manifest's run-to-run spreads, stated again from the bundle's
/// recipe and artifacts (a measured one re-derived from the repeats): a
/// spread a publisher edited into the manifest is a finding.
fn run_to_run_again(
    report: &mut Verification,
    manifest: &super::manifest::BundleManifest,
    store: &Store,
    run: &anvil_store::RunRecord,
    recipe: &crate::recipe::Recipe,
) {
    let derived = serde_json::to_value(super::run_to_run::stated(store, run, recipe)).unwrap_or_default();
    let claimed = serde_json::to_value(&manifest.run_to_run).unwrap_or_default();
    for change in diff_values(&claimed, &derived) {
        report.findings.push(Finding {
            at: super::manifest::MANIFEST_NAME.into(),
            path: format!("run_to_run.{}", change.path),
            claimed: change.a,
            derived: change.b,
        });
    }
}

/// How the runner would have called an ending recorded as `status`.
fn ending_word(status: NodeStatus) -> &'static str {
    match status {
        NodeStatus::Ran | NodeStatus::FinallyRan | NodeStatus::Server => "ran",
        NodeStatus::Cached | NodeStatus::FinallyCached => "cached",
        NodeStatus::Failed | NodeStatus::FinallyFailed => "failed",
        NodeStatus::FinallyRejected => "rejected",
        NodeStatus::Skipped | NodeStatus::FinallySkipped | NodeStatus::Planned | NodeStatus::Unknown => {
            "skipped"
        }
    }
}

fn qualified(plan: &Plan, i: usize) -> String {
    plan.recipe.steps[i].qualified()
}

fn finding(at: &str, path: &str, claimed: &str, derived: &str) -> Finding {
    Finding {
        at: at.to_string(),
        path: path.to_string(),
        claimed: Value::String(claimed.to_string()),
        derived: Value::String(derived.to_string()),
    }
}

/// Members were hash-checked; one that is not JSON compares as null and is reported.
fn read_json(path: &Path) -> Value {
    std::fs::read(path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null)
}
