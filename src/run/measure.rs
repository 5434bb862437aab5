//! Measuring a cell on its server, in the server's turn: a cell step, or a
//! search's probe.

use super::cell;
use super::context::Context;
use super::outcome::{Failure, Produced};

/// Measure `cell` on `server` in its turn (a cell, or a search's probe). A
/// server that exited meanwhile fails it, whatever the cell saw: "server `x`
/// died during {during}"; `relabel` words any other failure.
pub(super) async fn measure_cell(
    ctx: &Context,
    server: usize,
    name: &str,
    cell: &crate::recipe::decls::CellDecl,
    fingerprint: &anvil_store::Fingerprint,
    during: &str,
    relabel: impl FnOnce(Failure) -> Failure,
) -> Result<Produced, Failure> {
    let _turn = ctx.servers.turn(server).await;
    let info = ctx.servers.acquire(server).await.map_err(Failure::new)?;
    // Its duration counts from here, not from its wait for the server.
    let began = std::time::Instant::now();
    let fingerprint = fingerprint.to_string();
    let at = cell::CellRun {
        seed: ctx.seed,
        fingerprint: &fingerprint,
        run_id: &ctx.run_id,
        recipe: &ctx.recipe_key,
        progress: &ctx.progress,
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
