//! The DAG: which steps a step waits for, a stable execution order, and
//! cycle detection with a readable cycle path.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use petgraph::graph::{DiGraph, NodeIndex};

use crate::recipe::{Decl, Problem};

/// Kahn's algorithm, always taking the earliest-declared ready step, so the
/// order follows the recipe wherever dependencies allow.
pub fn execution_order(deps: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let n = deps.len();
    let mut waiting_on: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (node, ds) in deps.iter().enumerate() {
        for &d in ds {
            dependents[d].push(node);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..n).filter(|&i| waiting_on[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(node)) = ready.pop() {
        order.push(node);
        for &next in &dependents[node] {
            waiting_on[next] -= 1;
            if waiting_on[next] == 0 {
                ready.push(Reverse(next));
            }
        }
    }
    if order.len() == n { Ok(order) } else { Err((0..n).filter(|i| waiting_on[*i] > 0).collect()) }
}

/// One problem per cycle, naming every step on it.
pub fn cycle_problems(deps: &[Vec<usize>], steps: &[Decl]) -> Vec<Problem> {
    let mut graph: DiGraph<usize, ()> = DiGraph::new();
    let nodes: Vec<NodeIndex> = (0..deps.len()).map(|i| graph.add_node(i)).collect();
    for (node, ds) in deps.iter().enumerate() {
        for &d in ds {
            graph.add_edge(nodes[d], nodes[node], ());
        }
    }
    petgraph::algo::tarjan_scc(&graph)
        .into_iter()
        .filter(|scc| scc.len() > 1 || graph.contains_edge(scc[0], scc[0]))
        .map(|scc| {
            let mut members: Vec<usize> = scc.iter().map(|ix| graph[*ix]).collect();
            members.sort();
            let names: Vec<String> = members.iter().map(|&i| steps[i].qualified()).collect();
            let first = &steps[members[0]];
            Problem::new(
                &first.source,
                first.name_span,
                format!("dependency cycle: {} → {}", names.join(" → "), names[0]),
            )
            .label("part of a cycle")
            .help("a step cannot wait for itself; remove one `after`, reference or gate input on this cycle")
        })
        .collect()
}
