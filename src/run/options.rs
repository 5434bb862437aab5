//! What `anvil run` (and a Slurm job's worker) asks of a run.

use crate::executor::interface::Start;

/// The flags that shape a run, not its steps.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub jobs: usize,
    pub force: Vec<String>,
    pub only: Vec<String>,
    pub keep_going: bool,
    /// `--gpus 0,1,…`; detected with nvidia-smi when absent.
    pub gpus: Option<String>,
    /// `--executor NAME` (`crate::executor::REGISTRY`): where the steps it
    /// takes run (None: every step runs here).
    pub executor: Option<Start>,
    /// `--loadgen-workers`: the load generator's threads per cell (0 is taken as 1).
    pub loadgen_workers: u32,
}
