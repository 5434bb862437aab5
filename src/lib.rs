//! anvil: LLM-serving benchmark campaigns from declarative KDL recipes.
//!
//! Read top to bottom: `recipe` (KDL → checked declarations) → `plan` (DAG,
//! fingerprints) → `store` (anvil-store) → `run` (scheduler, executors) →
//! `report` (diff, summaries). The simulated engine and the load generator
//! live in their own crates (anvil-sim, anvil-loadgen).

pub(crate) mod bundle;
pub mod cli;
mod commands;
pub(crate) mod compare;
pub(crate) mod environment;

pub use commands::main;
pub(crate) mod history;
pub mod plan;
pub mod recipe;
pub(crate) mod report;
pub mod results;
pub(crate) mod run;
pub(crate) mod slurm;
