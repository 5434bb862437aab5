//! Will a step run, and why: compares the plan with the store and with the
//! last run of the same recipe.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};

use anvil_store::{NodeStatus, RunNode, RunRecord, Store};

use super::changes::{describe, diff_values};
use super::planned::{Plan, PlannedNode, Status};
use crate::recipe::{Kind, Spec};

pub fn assign(plan: &mut Plan, store: Option<&Store>) {
    // Read only when a step needs explaining: a run that executes nothing
    // (the common rerun) never opens the run history.
    let last_run: OnceCell<Option<RunRecord>> = OnceCell::new();
    let mut previous: Option<HashMap<&str, &RunNode>> = None;
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
            _ if !node.waits_for.is_empty() => {
                (Status::Pending, format!("provisional: waits for {}", listing(&node.waits_for)))
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
                (Status::Pending, format!("reads results this run produces: {}", listing(&waiting)))
            }
            _ => {
                let previous =
                    previous.get_or_insert_with(|| nodes_by_name(&last_run, store, &plan.recipe.key));
                (Status::Pending, why_pending(plan, i, store, previous))
            }
        };
        plan.nodes[i].status = status;
        plan.nodes[i].reason = reason;
    }
    // A pending search says what it may still measure (its stored probes
    // replayed); one its stored probes settle starts no server.
    let mut measures_nothing = vec![false; plan.nodes.len()];
    let searches: Vec<usize> = (0..plan.nodes.len())
        .filter(|&i| plan.nodes[i].kind == Kind::Search && plan.nodes[i].status == Status::Pending)
        .collect();
    for i in searches {
        let (search, measures) = super::search::explain(plan, i, store);
        measures_nothing[i] = !measures;
        plan.nodes[i].reason = format!("{}; {search}", plan.nodes[i].reason);
    }
    // Each server's pending dependents, in one pass over the nodes (not one
    // pass per server).
    let mut needing: Vec<Vec<String>> = vec![Vec::new(); plan.nodes.len()];
    for (j, node) in plan.nodes.iter().enumerate() {
        if node.status != Status::Pending || node.kind == Kind::Finally || measures_nothing[j] {
            continue;
        }
        for &d in &node.deps {
            if plan.nodes[d].kind == Kind::Server {
                needing[d].push(node.name.clone());
            }
        }
    }
    for (i, needing) in needing.into_iter().enumerate() {
        if plan.nodes[i].kind != Kind::Server {
            continue;
        }
        let (status, reason) = if needing.is_empty() {
            (Status::Cached, "every step that needs it is stored: it will not start".to_string())
        } else {
            let steps = if needing.len() == 1 { "step" } else { "steps" };
            let starts = format!("starts for {} {steps}: {}", needing.len(), listing(&needing));
            match plan.nodes[i].waits_for.as_slice() {
                [] => (Status::Pending, starts),
                waits => (Status::Pending, format!("provisional: waits for {}; {starts}", listing(waits))),
            }
        };
        plan.nodes[i].status = status;
        plan.nodes[i].reason = reason;
    }
    // A finally step runs when anything else in the run executes (as the
    // runner decides), or always when it says so.
    let anything_runs = plan
        .nodes
        .iter()
        .any(|n| n.status == Status::Pending && !matches!(n.kind, Kind::Server | Kind::Finally));
    for i in 0..plan.nodes.len() {
        let Spec::Finally(finally) = &plan.recipe.steps[i].spec else { continue };
        let (status, reason) = match (finally.always, anything_runs) {
            (true, _) => (Status::Pending, "finally, `always #true`: runs at the end of every run"),
            (false, true) => (Status::Pending, "finally: runs at the end, since this run executes steps"),
            (false, false) => (
                Status::Idle,
                "finally: nothing else runs, so nothing to restore (`always #true` runs it anyway)",
            ),
        };
        plan.nodes[i].status = status;
        plan.nodes[i].reason = reason.to_string();
    }
}

/// The last run's nodes by name (read on first use): one lookup per pending step.
fn nodes_by_name<'r>(
    last_run: &'r OnceCell<Option<RunRecord>>,
    store: Option<&Store>,
    recipe_key: &str,
) -> HashMap<&'r str, &'r RunNode> {
    let run = last_run.get_or_init(|| store.and_then(|s| s.last_run_of(recipe_key).ok().flatten()));
    let mut by_name = HashMap::new();
    for node in run.iter().flat_map(|run| &run.nodes) {
        by_name.entry(node.name.as_str()).or_insert(node);
    }
    by_name
}

/// Names for one line: the first few, then how many more.
fn listing(names: &[String]) -> String {
    const SHOWN: usize = 5;
    if names.len() <= SHOWN {
        return names.join(", ");
    }
    format!("{}, … (+{} more)", names[..SHOWN].join(", "), names.len() - SHOWN)
}

fn why_pending(plan: &Plan, i: usize, store: Option<&Store>, last_run: &HashMap<&str, &RunNode>) -> String {
    let node = &plan.nodes[i];
    let Some(previous) = last_run.get(node.name.as_str()) else {
        return "new: not in the last run of this recipe".to_string();
    };
    match previous.status {
        NodeStatus::Failed => return "failed last time (failures are never stored)".to_string(),
        NodeStatus::Skipped => return "skipped last time".to_string(),
        _ if previous.fingerprint == node.fingerprint => {
            return "not in the store (removed by gc?)".to_string();
        }
        _ => {}
    }
    let old = store.and_then(|s| crate::history::preimage_of(s, &previous.fingerprint));
    match old {
        Some(old) => explain_change(plan, &old, node, &|d| server_change(plan, d, store, last_run)),
        None => {
            format!("changed since the last run (was {}; its preimage is gone)", previous.fingerprint.short())
        }
    }
}

/// A fingerprint's length in hex: no shorter path can hold one.
const FINGERPRINT_HEX_LEN: usize = 64;

/// What moved in an upstream server since the last run, in its own
/// preimage (a server is not stored: its preimage is in the run record):
/// `environment.engine.program.distributions.vllm.version: "0.32.0" → "0.33.0"`.
fn server_change(
    plan: &Plan,
    d: usize,
    store: Option<&Store>,
    last_run: &HashMap<&str, &RunNode>,
) -> Option<String> {
    let server = &plan.nodes[d];
    let previous = last_run.get(server.name.as_str())?;
    let old = crate::history::preimage_of(store?, &previous.fingerprint)?;
    let changes = diff_values(&old, &server.preimage.value());
    let own: Vec<_> = changes.iter().filter(|c| !c.path.starts_with("upstream")).collect();
    let more = if own.len() > 1 { format!(" (+{} more)", own.len() - 1) } else { String::new() };
    // A version says more to a reader than the digest that moved with it.
    let first = own.iter().find(|c| c.path.ends_with(".version")).or(own.first())?;
    Some(format!("{}{more}", describe(first)))
}

/// One line: the first changed fields, or the upstream step that changed
/// (for a server, what moved in it, from `server_change`).
fn explain_change(
    plan: &Plan,
    old: &serde_json::Value,
    node: &PlannedNode,
    server_change: &dyn Fn(usize) -> Option<String>,
) -> String {
    let changes = diff_values(old, &node.preimage.value());
    let own: Vec<_> = changes.iter().filter(|c| !c.path.starts_with("upstream")).collect();
    if let Some(first) = own.first() {
        let more = if own.len() > 1 { format!(" (+{} more)", own.len() - 1) } else { String::new() };
        return format!("changed: {}{more}", describe(first));
    }
    // An upstream fingerprint appears as a changed value (or inside a path):
    // gather those once rather than scanning the changes for every dependency.
    let values: HashSet<&str> = changes.iter().filter_map(|c| c.b.as_str()).collect();
    let long_paths: Vec<&str> =
        changes.iter().map(|c| c.path.as_str()).filter(|p| p.len() >= FINGERPRINT_HEX_LEN).collect();
    let upstream_names: Vec<String> = node
        .deps
        .iter()
        .filter(|&&d| {
            let fp = plan.nodes[d].fingerprint.to_string();
            values.contains(fp.as_str()) || long_paths.iter().any(|p| p.contains(&fp))
        })
        .map(|&d| match plan.nodes[d].kind {
            Kind::Server => match server_change(d) {
                Some(change) => format!("{} ({change})", plan.recipe.steps[d].qualified()),
                None => plan.recipe.steps[d].qualified(),
            },
            _ => plan.recipe.steps[d].qualified(),
        })
        .collect();
    if upstream_names.is_empty() {
        "upstream changed".to_string()
    } else {
        format!("upstream changed: {}", upstream_names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::listing;

    #[test]
    fn long_lists_are_summarized() {
        let names: Vec<String> = (0..2500).map(|i| format!("c-{i}")).collect();
        assert_eq!(listing(&names), "c-0, c-1, c-2, c-3, c-4, … (+2495 more)");
        assert_eq!(listing(&names[..2]), "c-0, c-1");
    }
}
