//! The local executor: a step runs in this process, with the run's server
//! pool, the per-fingerprint store lock and the atomic commit (`step.rs`).
//! Every step the run's chosen executor does not take runs here; with no
//! executor chosen (`--executor local`), all of them do.

use std::sync::Arc;

use super::context::Context;
use super::step;
use crate::executor::interface::{BoxFuture, Executor, ReadyStep, StepOutcome};
use crate::step_kind::Kind;

/// One wave's local executor (a wave has its own server pool).
pub(super) struct Local {
    ctx: Arc<Context>,
}

impl Local {
    pub fn new(ctx: Arc<Context>) -> Local {
        Local { ctx }
    }
}

impl Executor for Local {
    fn takes(&self, _kind: Kind) -> bool {
        true
    }

    fn run(self: Arc<Self>, step: ReadyStep) -> BoxFuture<'static, StepOutcome> {
        Box::pin(async move { step::run_job(self.ctx.clone(), step).await })
    }
}
