//! anvil: LLM-serving benchmark campaigns from declarative KDL recipes.
//!
//! Read top to bottom: `recipe` (KDL → checked declarations) → `plan` (DAG,
//! fingerprints) → `store` (anvil-store) → `run` (scheduler, executors) →
//! `report` (diff, summaries). The simulated engine and the load generator
//! live in their own crates (anvil-sim, anvil-loadgen).

pub mod recipe;
pub mod plan;
pub mod report;
pub mod history;
pub mod run;
pub mod cli;
mod commands;
