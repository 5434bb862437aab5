//! Where a run's steps execute (docs/cluster.md, "How an executor plugs in").
//!
//! - [`interface`]: the [`Executor`](interface::Executor) trait the
//!   scheduler drives, what it hands an executor (a `ReadyStep`) and what
//!   comes back (a `StepOutcome`). A leaf below `run`: `run` and each
//!   executor import it, not this module (which names them all).
//! - the local executor is `run`'s own step code (`src/run/local.rs`): every
//!   step a chosen executor does not take runs there, in this process.
//! - `slurm`: cells, checks, searches and tasks as Slurm jobs, grouped by
//!   server (`--executor slurm`). It implements the trait and uses `run`'s
//!   public interface (`run::execute` in the worker), nothing inside it.
//! - [`REGISTRY`]: every executor `--executor` can name. A new executor is
//!   one module here, its settings in `src/recipe/decls/executor.rs`, and
//!   one line in the registry.

pub mod interface;
pub mod slurm;

use interface::Start;

/// Every executor by its `--executor` name, with how to start it for a run
/// (None: every step runs in this process).
pub const REGISTRY: &[(&str, Option<Start>)] = &[("local", None), ("slurm", Some(slurm::start))];

/// The names `--executor` accepts, in registry order.
pub fn names() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|(name, _)| *name)
}

/// `--executor` named an executor the registry does not hold (bad input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown executor `{name}` (executors: {})", names().collect::<Vec<_>>().join(", "))]
pub struct UnknownExecutor {
    pub name: String,
}

/// The executor `--executor NAME` (or `ANVIL_EXECUTOR`) chooses: None for
/// local, Err for a name the registry does not hold.
pub fn choose(name: &str) -> Result<Option<Start>, UnknownExecutor> {
    REGISTRY
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, start)| *start)
        .ok_or_else(|| UnknownExecutor { name: name.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_names_local_and_slurm_once_each() {
        assert_eq!(names().collect::<Vec<_>>(), ["local", "slurm"]);
        assert!(choose("local").unwrap().is_none());
        assert!(choose("slurm").unwrap().is_some());
        let err = choose("kubernetes").err().unwrap();
        assert_eq!(err.to_string(), "unknown executor `kubernetes` (executors: local, slurm)");
    }
}
