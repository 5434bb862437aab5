//! anvil: LLM-serving benchmark campaigns from declarative KDL recipes.
//!
//! Layers, each importing only the ones listed before it:
//! - `step_kind`: the kinds of step (vocabulary every layer names);
//! - `recipe`: KDL → typed declarations (with spans for errors);
//! - `environment`, `terminal`, `run_extra`, `history`: the machine, the terminal, the run record's typed part, earlier runs' records;
//! - `plan`: the DAG, preimages, fingerprints, what a run will execute and why;
//! - `results`: typed step results, as stored;
//! - `quality`: kept answers scored, and arms compared on the same prompts;
//! - `document`: each planned step as a self-contained step document (key + how to run it);
//! - the executor interface (`executor/interface.rs`): the trait the scheduler drives;
//! - `run`: the scheduler, one executor per step kind, run records, the local executor;
//! - `executor::slurm`, the executor registry (`executor`): the same steps as Slurm jobs;
//! - `report`: campaign outputs and the HTML report;
//! - `peers`: peer tools' results (vLLM, AIPerf, guidellm) read into anvil's terms;
//! - `bundle`, `compare`: evidence that travels, and noise-aware comparison;
//! - `cli`, `commands`: the command line.
//!
//! The store, the simulated engine, the load generator, gate expressions,
//! server processes, functional checks and the independent re-deriver are
//! crates of their own (anvil-store, anvil-sim, anvil-loadgen, anvil-expr,
//! anvil-proc, anvil-checks, anvil-evidence).

pub mod step_kind;

pub(crate) mod did_you_mean;
pub(crate) mod scrape_url;

pub mod claims;
pub mod engines;
pub mod number_text;
pub mod placeholders;
pub mod recipe;
pub mod words;

pub(crate) mod environment;
pub(crate) mod history;
pub(crate) mod run_extra;
pub(crate) mod terminal;

pub mod plan;
pub mod results;

pub(crate) mod quality;

pub(crate) mod document;

pub(crate) mod executor;
pub(crate) mod run;

pub(crate) mod report;

pub(crate) mod peers;

pub(crate) mod bundle;
pub(crate) mod compare;

pub mod cli;
mod commands;

pub use commands::main;
