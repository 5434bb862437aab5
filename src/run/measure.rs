//! Measuring a cell on its server, in the server's turn: a cell step, a
//! search's probe, or a gate's or screen's extra repeat.

use std::time::Instant;

use super::context::Context;
use super::outcome::{Failure, Produced};
use super::{cell, commit};
use crate::executor::interface::Ending;
use crate::step_kind::Kind;

/// Which cell to measure (its seed is its own, `CellExec::seed`), under which fingerprint.
pub(super) struct Target<'a> {
    pub name: &'a str,
    pub cell: &'a crate::document::CellExec,
    pub fingerprint: &'a anvil_store::Fingerprint,
}

/// Measure `target` on `server` in its turn (a cell, a search's probe, an
/// extra repeat). A server that exited meanwhile fails it, whatever the cell
/// saw: "server `x` died during {during}"; `relabel` words any other failure.
pub(super) async fn measure_cell(
    ctx: &Context,
    server: usize,
    target: Target<'_>,
    during: &str,
    relabel: impl FnOnce(Failure) -> Failure,
) -> Result<Produced, Failure> {
    let Target { name, cell, fingerprint } = target;
    let _turn = ctx.servers.turn(server).await;
    let info = ctx.servers.acquire(server).await.map_err(Failure::new)?;
    // Its duration counts from here, not from its wait for the server.
    let began = std::time::Instant::now();
    let fingerprint = fingerprint.to_string();
    let at = cell::CellRun {
        fingerprint: &fingerprint,
        run_id: &ctx.run_id,
        recipe: &ctx.recipe_key,
        progress: &ctx.progress,
        loadgen_workers: ctx.loadgen_workers,
    };
    let result = cell::run_cell(name, cell, &info, &at).await;
    match ctx.servers.crashed(server).await {
        Some(crash) => {
            Err(Failure::new(format!("server `{}` died during {during}", info.name)).with_detail(crash))
        }
        None => {
            if result
                .as_ref()
                .is_err_and(|f| f.fault == Some(crate::executor::interface::Fault::ServerStalled))
            {
                // A frozen server would stall every later step too: start it afresh.
                ctx.servers.restart(server).await;
            }
            result.map(|produced| Produced { began: Some(began), ..produced }).map_err(relabel)
        }
    }
}

/// A cell measured inside another step (a search's probe, an extra
/// repeat): what to call it and where to store it.
pub(super) struct Inner<'a> {
    pub name: &'a str,
    /// Resolved by the plan, as its step document would hold it.
    pub cell: &'a crate::document::CellExec,
    pub fingerprint: anvil_store::Fingerprint,
    pub preimage: &'a serde_json::Value,
    /// What it is, for its failure ("probe rate=4", "extra repeat 2 of x").
    pub what: String,
}

/// Measure `inner` on `server` and store it under its own fingerprint,
/// unless a concurrent run stored it first; with its own progress line.
pub(super) async fn measure_and_store(
    ctx: &Context,
    server: usize,
    inner: &Inner<'_>,
) -> Result<(), Failure> {
    let (name, what) = (inner.name, inner.what.as_str());
    let store = ctx.store.clone();
    let fp = inner.fingerprint;
    // One producer per fingerprint across concurrent runs, as for any cell.
    let _lock = tokio::task::spawn_blocking(move || store.lock(&fp))
        .await
        .map_err(|e| Failure::new(format!("store lock: {e}")))?
        .map_err(|e| Failure::new(format!("store lock: {e}")))?;
    if ctx.store.contains(&fp) {
        return Ok(());
    }
    let started = Instant::now();
    ctx.progress.started(name, Kind::Cell);
    let target = Target { name, cell: inner.cell, fingerprint: &fp };
    let produced =
        measure_cell(ctx, server, target, what, |f| Failure { reason: format!("{what}: {}", f.reason), ..f })
            .await;
    let ending = if produced.is_ok() { Ending::Ran } else { Ending::Failed };
    let line = match &produced {
        Ok(p) => p.summary.clone(),
        Err(f) => f.reason.clone(),
    };
    // Its own duration, not its wait for the server.
    let began = produced.as_ref().ok().and_then(|p| p.began).unwrap_or(started);
    ctx.progress.finished(name, Kind::Cell, ending, &line, began.elapsed(), false);
    let produced = produced?;
    commit::commit_entry(&ctx.store, &fp, inner.preimage, &produced).map_err(|e| {
        let failure = super::store_full::commit_failure(ctx.store.root(), &produced, &e);
        Failure { reason: format!("{what}: {}", failure.reason), ..failure }
    })?;
    Ok(())
}
