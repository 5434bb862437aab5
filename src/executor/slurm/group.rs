//! Which steps go into one Slurm job.
//!
//! GPUs are what a job allocates, and a server is what holds them: a server
//! and every cell, check and search (whose probes are cells) of this run that
//! measures it become one job, so the server starts once inside its allocation. A task is a job of its own.
//! Gates, screens, decisions and `finally` steps read stored results and
//! evaluate on the head; servers are never jobs by themselves.

use std::collections::BTreeSet;

use crate::document::Exec;
use crate::plan::{Plan, reads_results};
use crate::step_kind::Kind;

/// Kinds that run inside a Slurm job.
pub fn runs_in_a_job(kind: Kind) -> bool {
    matches!(kind, Kind::Cell | Kind::Check | Kind::Task | Kind::Search)
}

/// The job for `requested` (whose dependencies the scheduler has settled):
/// it and every other due, unassigned step on the same server whose
/// dependencies are stored already or are in the job (the worker runs them
/// in order). In execution order.
pub fn group_for(
    plan: &Plan,
    due: &[bool],
    assigned: &BTreeSet<usize>,
    requested: usize,
    stored: &dyn Fn(usize) -> bool,
) -> Vec<usize> {
    let Some(server) = plan.server_of(requested) else { return vec![requested] };
    let mut members: BTreeSet<usize> = BTreeSet::from([requested]);
    loop {
        let before = members.len();
        for &c in &plan.order {
            if members.contains(&c)
                || !due[c]
                || assigned.contains(&c)
                || !matches!(plan.nodes[c].kind, Kind::Cell | Kind::Check)
                || plan.server_of(c) != Some(server)
            {
                continue;
            }
            let ready = plan.nodes[c].deps.iter().all(|&d| {
                let kind = plan.nodes[d].kind;
                d == server
                    || members.contains(&d)
                    || (stored(d) && !reads_results(kind) && kind != Kind::Finally && kind != Kind::Server)
            });
            if ready {
                members.insert(c);
            }
        }
        if members.len() == before {
            break;
        }
    }
    plan.order.iter().copied().filter(|i| members.contains(i)).collect()
}

/// GPUs a job for `server` allocates: per replica times replicas. Applied
/// under `--sim` too (the allocation is what a real run would hold).
pub fn gpus_of(plan: &Plan, server: Option<usize>) -> u64 {
    let Some(server) = server else { return 0 };
    match crate::document::document_of(plan, server).exec {
        Exec::Server(server) => server.gpus * server.replicas.max(1),
        _ => 0,
    }
}
