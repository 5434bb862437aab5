//! What every step of a run shares.

use std::path::PathBuf;
use std::sync::Arc;

use anvil_store::Store;

use super::progress::Progress;
use super::servers::ServerPool;

/// Shared by every step of the run.
pub(super) struct Context {
    pub(super) store: Store,
    pub(super) servers: ServerPool,
    pub(super) recipe_dir: PathBuf,
    pub(super) recipe_key: String,
    pub(super) seed: u64,
    pub(super) run_id: String,
    pub(super) progress: Arc<Progress>,
    /// The run's cells are measured elsewhere (a cluster executor takes
    /// them): a gate here measures no extra repeats.
    pub(super) cells_elsewhere: bool,
    /// `--loadgen-workers`: the load generator's threads per cell.
    pub(super) loadgen_workers: u32,
}
