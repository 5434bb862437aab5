//! The command line: clap definitions, turned into calls of `commands::*`.
//! Exit codes: 0 success, 1 a step failed or a gate rejected (or the store
//! is damaged), 2 bad input (recipe errors, unknown names, bad flags).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::commands;

#[derive(Parser, Debug)]
#[command(name = "anvil", version, about = "Run LLM-serving benchmark campaigns from KDL recipes")]
pub struct Cli {
    /// The result store (default ./store).
    #[arg(long, global = true, env = "ANVIL_STORE", default_value = "store")]
    pub store: PathBuf,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Args, Debug, Clone)]
pub struct RecipeArgs {
    /// The recipe file (.kdl).
    pub recipe: PathBuf,
    /// Override a recipe param: --set depth=12 (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Run every server as its simulated twin.
    #[arg(long)]
    pub sim: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a recipe: execute every step whose result is not stored.
    Run {
        #[command(flatten)]
        recipe: RecipeArgs,
        /// Steps to run at once.
        #[arg(long, short = 'j', default_value_t = 4)]
        jobs: usize,
        /// Rerun these steps even if stored (the stored entry is kept).
        #[arg(long, num_args = 1..)]
        force: Vec<String>,
        /// Run only these steps and what they depend on.
        #[arg(long, num_args = 1..)]
        only: Vec<String>,
        /// Go on with independent steps after a failure.
        #[arg(long)]
        keep_going: bool,
        /// Show the plan and run nothing.
        #[arg(long)]
        dry_run: bool,
        /// GPU ids to hand to servers, e.g. 0,1,2,3 (default: nvidia-smi).
        #[arg(long)]
        gpus: Option<String>,
        /// Where campaign outputs (decision summary, workload manifest) go.
        #[arg(long, default_value = "results")]
        out: PathBuf,
    },
    /// Show the steps, their fingerprints, and what a run would execute and why.
    Plan {
        #[command(flatten)]
        recipe: RecipeArgs,
        #[arg(long)]
        json: bool,
    },
    /// Export the DAG.
    Graph {
        #[command(flatten)]
        recipe: RecipeArgs,
        #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
        format: GraphFormat,
    },
    /// Explain what differs between two fingerprints (hex prefixes), or
    /// between RECIPE:STEP as it resolves now and its last run.
    Diff {
        a: String,
        b: Option<String>,
        #[arg(long)]
        json: bool,
        /// For RECIPE:STEP: resolve the recipe with its servers as simulated twins.
        #[arg(long)]
        sim: bool,
        /// For RECIPE:STEP: override a recipe param (repeatable).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        set: Vec<String>,
    },
    /// Print a stored step.
    Show {
        fingerprint: String,
        #[arg(long)]
        json: bool,
    },
    /// List recorded runs.
    Runs {
        #[arg(long)]
        json: bool,
    },
    /// Store maintenance.
    Store {
        #[command(subcommand)]
        action: StoreAction,
    },
    /// Remove stored steps that no recorded run needs.
    Gc {
        #[arg(long)]
        dry_run: bool,
    },
    /// Run the simulated OpenAI-compatible engine.
    Sim {
        #[arg(long, default_value_t = 8000)]
        port: u16,
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// A JSON profile file.
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Set one profile key: --set decode-step-ms=12 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum StoreAction {
    /// Rehash every stored file and report damage.
    Verify {
        #[arg(long)]
        json: bool,
    },
}

#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum GraphFormat {
    Dot,
    Mermaid,
}

/// Parse arguments, run, and return the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() { 2 } else { 0 };
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return 1;
        }
    };
    match runtime.block_on(commands::dispatch(cli)) {
        Ok(code) => code,
        Err(exit) => {
            eprintln!("{:?}", exit.report());
            exit.code()
        }
    }
}
