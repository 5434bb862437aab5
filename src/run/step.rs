//! Executing one step: the store check and lock, the executor for its
//! kind, and committing its result.

use std::sync::Arc;
use std::time::Instant;

use anvil_store::{Fingerprint, Store};
use serde_json::Value;

use super::commit::commit_entry;
use super::context::Context;
use super::measure::{Target, measure_cell};
use super::measure_more::{self, Judge};
use super::outcome::{Failure, Produced};
use super::{check, decision, gate, screen, search, task};
use crate::document::Exec;
use crate::executor::interface::{Ending, ReadyStep, StepOutcome};
use crate::results::{StoredVerdict, Verdict};
use crate::step_kind::Kind;

/// Run a ready step in this process, and release its server.
pub(super) async fn run_job(ctx: Arc<Context>, job: ReadyStep) -> StepOutcome {
    let started = Instant::now();
    let end = run_step(&ctx, &job).await;
    if let Some(server) = job.server.filter(|_| job.counted) {
        ctx.servers.release(server).await;
    }
    // A cell's duration is its own, not its wait for its server's turn and start.
    let duration = end.began.unwrap_or(started).elapsed();
    let StepEnd { ending, detail, evidence, executed, fault, .. } = end;
    StepOutcome { ending, detail, evidence, duration, executed, fault }
}

/// How a step ended.
struct StepEnd {
    ending: Ending,
    detail: String,
    evidence: Option<String>,
    /// Whether it executed in this run (a cached verdict did not).
    executed: bool,
    /// When its own work began, if it first waited for its server.
    began: Option<Instant>,
    fault: Option<crate::executor::interface::Fault>,
}

impl From<(Ending, String, Option<String>, bool)> for StepEnd {
    fn from((ending, detail, evidence, executed): (Ending, String, Option<String>, bool)) -> Self {
        StepEnd { ending, detail, evidence, executed, began: None, fault: None }
    }
}

impl From<Failure> for StepEnd {
    fn from(failure: Failure) -> Self {
        let Failure { reason, detail, fault, .. } = failure;
        StepEnd { fault, ..(Ending::Failed, reason, detail, true).into() }
    }
}

/// Keeps a failure's evidence with the run (`failed/<run_id>/<fp>/`); the
/// failure stands whether or not that could be written.
fn keep_evidence(ctx: &Context, fingerprint: &Fingerprint, failure: &mut Failure) {
    if failure.evidence.is_empty() {
        return;
    }
    let files = std::mem::take(&mut failure.evidence);
    let kept = super::commit::keep_failed(&ctx.store, &ctx.run_id, fingerprint, &files);
    failure.reason.push_str(&match kept {
        Ok(dir) => format!(" (evidence: {})", dir.display()),
        Err(err) => format!(" (its evidence could not be kept: {err})"),
    });
}

async fn run_step(ctx: &Context, job: &ReadyStep) -> StepEnd {
    let always = job.kind == Kind::Finally;
    let blocking = || job.document.blocking();
    if !always && !job.forced && ctx.store.contains(&job.fingerprint) {
        let (e, d) = stored_ending(&ctx.store, job.kind, blocking, &job.fingerprint, "stored");
        return (e, d, None, false).into();
    }
    // One producer per fingerprint across concurrent runs; the lock dies with us.
    let _lock = if always {
        None
    } else {
        let store = ctx.store.clone();
        let fp = job.fingerprint;
        match store.try_lock(&fp) {
            Ok(Some(lock)) => Some(lock),
            Ok(None) => match tokio::task::spawn_blocking(move || store.lock(&fp)).await {
                Ok(Ok(lock)) => Some(lock),
                Ok(Err(err)) => return (Ending::Failed, format!("store lock: {err}"), None, false).into(),
                Err(err) => return (Ending::Failed, format!("store lock: {err}"), None, false).into(),
            },
            Err(err) => return (Ending::Failed, format!("store lock: {err}"), None, false).into(),
        }
    };
    if !always && !job.forced && ctx.store.contains(&job.fingerprint) {
        let (e, d) =
            stored_ending(&ctx.store, job.kind, blocking, &job.fingerprint, "stored by a concurrent run");
        return (e, d, None, false).into();
    }
    match produce(ctx, job).await {
        Ok(mut produced) => {
            let blocking = blocking();
            let ending = if produced.rejected && blocking { Ending::Rejected } else { Ending::Ran };
            if produced.rejected && !blocking {
                produced.summary = format!("(non-blocking) {}", produced.summary);
            }
            if always {
                return (ending, produced.summary, None, true).into();
            }
            let end: StepEnd = match commit(&ctx.store, job, &produced) {
                Ok(note) => (ending, format!("{}{note}", produced.summary), None, true).into(),
                Err(err) => super::store_full::commit_failure(ctx.store.root(), &produced, &err).into(),
            };
            StepEnd { began: produced.began, fault: end.fault.or(produced.fault), ..end }
        }
        Err(mut failure) => {
            keep_evidence(ctx, &job.fingerprint, &mut failure);
            failure.into()
        }
    }
}

/// How a step whose result is stored ends: a stored verdict still counts,
/// so a cached rejection fails the run again.
pub(super) fn stored_ending(
    store: &Store,
    kind: Kind,
    blocking: impl FnOnce() -> bool,
    fingerprint: &Fingerprint,
    how: &str,
) -> (Ending, String) {
    // Only gates and checks store verdicts: other steps' results are not read.
    let carries_verdict = matches!(kind, Kind::Gate | Kind::Check);
    let stored = carries_verdict.then(|| store.read_result(fingerprint).ok().flatten()).flatten();
    let verdict = stored.as_ref().and_then(StoredVerdict::of);
    if let Some(StoredVerdict { status: Verdict::Rejected, detail }) = verdict
        && blocking()
    {
        return (Ending::Rejected, format!("{how}: rejected: {detail}"));
    }
    (Ending::Cached, how.to_string())
}

async fn produce(ctx: &Context, job: &ReadyStep) -> Result<Produced, Failure> {
    let inputs = job.inputs.as_ref().unwrap_or(&Value::Null);
    let name = job.name.as_str();
    if matches!(job.kind, Kind::Cell | Kind::Check | Kind::Search | Kind::Task) {
        super::unchanged_inputs::check(job, &ctx.recipe_dir)?;
    }
    // Run as its step document says: what a Slurm job or any other executor runs too.
    match &job.document.exec {
        Exec::Task(task) => task::run_task(task).await,
        _ if let Some(judge) = Judge::of(&job.document.exec).filter(|j| j.budget() > 0) => {
            measure_more::judge_in_run(ctx, judge, judge.budget(), &job.extra_sites, inputs).await
        }
        Exec::Gate(gate) => gate::evaluate_gate(gate, inputs),
        Exec::Screen(screen) => screen::run_screen(screen, inputs),
        Exec::Decision(decision) => decision::run_decision(decision, inputs),
        Exec::Cell(cell) => {
            let server = job.server.ok_or_else(|| Failure::new("cell has no server"))?;
            let target = Target { name, cell, fingerprint: &job.fingerprint };
            measure_cell(ctx, server, target, "the cell", |f| f).await
        }
        Exec::Check(check) => {
            let server = job.server.ok_or_else(|| Failure::new("check has no server"))?;
            let _turn = ctx.servers.turn(server).await;
            let info = ctx.servers.acquire(server).await.map_err(Failure::new)?;
            check::run_check(check, &info).await
        }
        Exec::Declared { .. } if job.kind == Kind::Search => {
            let site = job.probe_site.as_ref().ok_or_else(|| Failure::new("search has no probes planned"))?;
            search::run_search(ctx, site, job.server).await
        }
        _ => Err(Failure::new(format!("a {} step's document holds nothing to run", job.kind))),
    }
}

/// Store the step's result under its fingerprint ([`commit_entry`]).
fn commit(store: &Store, job: &ReadyStep, produced: &Produced) -> Result<String, anvil_store::StoreError> {
    commit_entry(store, &job.fingerprint, &job.document.key, produced)
}
