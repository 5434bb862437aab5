//! Running a campaign on a Slurm cluster with a shared store
//! (`anvil run --executor slurm`, docs/cluster.md).
//!
//! The head plans as usual; each group of steps that shares a server (and
//! each task) becomes one Slurm job running `anvil worker`: a job of cells
//! only runs from their step documents, which the head writes into the
//! store (no recipe on the node); other jobs plan the recipe again. It commits
//! its results to the shared store with the normal locked, atomic protocol.
//! The head (`head::Head`, an [`Executor`](super::Executor)) follows the jobs
//! with `scontrol` and reads how each step ended from the store. Nothing
//! here changes a step or its fingerprint.

mod cancel;
mod document_worker;
mod documents;
mod error;
mod group;
mod head;
mod jobs;
mod progress_file;
mod sbatch;
pub mod settings;
mod state;
mod worker;

pub use cancel::cancel;
pub use document_worker::{DocumentJob, document_worker};
pub use head::start;
pub use jobs::now_ms;
pub use worker::{WorkerArgs, WorkerError, worker};
