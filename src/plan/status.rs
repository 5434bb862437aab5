//! Will a step run, and why: compares the plan with the store and with the
//! last run of the same recipe.

use anvil_store::Store;

use super::changes::{describe, diff_values};
use super::{Plan, PlannedNode};
use crate::recipe::Kind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Its result is in the store: a run will not execute it.
    Cached,
    /// A run will execute it.
    Pending,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Cached => "cached",
            Status::Pending => "pending",
        }
    }
}

/// The blake3 of a stored step's result, which result-reading steps hash.
pub fn result_digest(store: &Store, node: &PlannedNode) -> Option<String> {
    let entry = store.read(&node.fingerprint).ok().flatten()?;
    Some(format!("blake3:{}", blake3::hash(&super::canonical_bytes(&entry.result)).to_hex()))
}

pub fn assign(plan: &mut Plan, store: Option<&Store>) {
    let last_run = store.and_then(|s| s.last_run_of(&plan.recipe.key).ok().flatten());
    let order = plan.order.clone();
    for &i in &order {
        let node = &plan.nodes[i];
        let (status, reason) = match node.kind {
            Kind::Server => continue, // decided below, from its dependents
            Kind::Finally => {
                (Status::Pending, "finally: runs at the end of a run that executed anything".to_string())
            }
            _ if store.is_some_and(|s| s.contains(&node.fingerprint)) => {
                (Status::Cached, "stored".to_string())
            }
            _ if node.provisional => {
                let waiting: Vec<String> = node
                    .deps
                    .iter()
                    .filter(|&&d| {
                        plan.nodes[d].kind != Kind::Server && plan.nodes[d].status == Status::Pending
                    })
                    .map(|&d| plan.recipe.steps[d].qualified())
                    .collect();
                (Status::Pending, format!("reads results this run produces: {}", waiting.join(", ")))
            }
            _ => (Status::Pending, why_pending(plan, i, store, last_run.as_ref())),
        };
        plan.nodes[i].status = status;
        plan.nodes[i].reason = reason;
    }
    for i in 0..plan.nodes.len() {
        if plan.nodes[i].kind != Kind::Server {
            continue;
        }
        let needing: Vec<&str> = plan
            .nodes
            .iter()
            .filter(|n| n.status == Status::Pending && n.deps.contains(&i) && n.kind != Kind::Finally)
            .map(|n| n.name.as_str())
            .collect();
        let (status, reason) = if needing.is_empty() {
            (Status::Cached, "every step that needs it is stored: it will not start".to_string())
        } else {
            (
                Status::Pending,
                format!(
                    "starts for {} step{}: {}",
                    needing.len(),
                    if needing.len() == 1 { "" } else { "s" },
                    needing.join(", ")
                ),
            )
        };
        plan.nodes[i].status = status;
        plan.nodes[i].reason = reason;
    }
}

fn why_pending(
    plan: &Plan,
    i: usize,
    store: Option<&Store>,
    last_run: Option<&anvil_store::RunRecord>,
) -> String {
    let node = &plan.nodes[i];
    let Some(previous) = last_run.and_then(|run| run.nodes.iter().find(|n| n.name == node.name)) else {
        return "new: not in the last run of this recipe".to_string();
    };
    match previous.status.as_str() {
        "failed" => return "failed last time (failures are never stored)".to_string(),
        "skipped" => return "skipped last time".to_string(),
        _ if previous.fingerprint == node.fingerprint => {
            return "not in the store (removed by gc?)".to_string();
        }
        _ => {}
    }
    let old = store.and_then(|s| crate::history::preimage_of(s, &previous.fingerprint));
    match old {
        Some(old) => explain_change(plan, &old, node),
        None => {
            format!("changed since the last run (was {}; its preimage is gone)", previous.fingerprint.short())
        }
    }
}

/// One line: the first changed fields, or the upstream step that changed.
fn explain_change(plan: &Plan, old: &serde_json::Value, node: &PlannedNode) -> String {
    let changes = diff_values(old, &node.preimage);
    let own: Vec<_> = changes.iter().filter(|c| !c.path.starts_with("upstream")).collect();
    if let Some(first) = own.first() {
        let more = if own.len() > 1 { format!(" (+{} more)", own.len() - 1) } else { String::new() };
        return format!("changed: {}{more}", describe(first));
    }
    let upstream_names: Vec<String> = node
        .deps
        .iter()
        .filter(|&&d| {
            changes.iter().any(|c| {
                c.path.contains(&plan.nodes[d].fingerprint.to_string())
                    || c.b.as_str() == Some(&plan.nodes[d].fingerprint.to_string())
            })
        })
        .map(|&d| plan.recipe.steps[d].qualified())
        .collect();
    if upstream_names.is_empty() {
        "upstream changed".to_string()
    } else {
        format!("upstream changed: {}", upstream_names.join(", "))
    }
}
