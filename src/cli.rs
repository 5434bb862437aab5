//! The command line: clap definitions. `commands` turns them into calls.
//! Exit codes: 0 success, 1 a step failed or a gate rejected (or the store
//! is damaged), 2 bad input (recipe errors, unknown names, bad flags).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "anvil", version, about = "Run LLM-serving benchmark campaigns from KDL recipes")]
pub struct Cli {
    /// The result store (default ./store).
    #[arg(long, global = true, env = "ANVIL_STORE", default_value = "store")]
    pub store: PathBuf,

    /// Colour in terminal output: auto (a terminal, and NO_COLOR unset), always or never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

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
        /// Also write the HTML report (`<out>/<campaign>/report.html`).
        #[arg(long)]
        report: bool,
        /// Print a machine-readable summary (steps, statuses, fingerprints,
        /// durations, outputs, report path) on stdout instead of the text one.
        #[arg(long)]
        json: bool,
        /// Where cells, checks and tasks run: here, or as Slurm jobs (docs/cluster.md).
        #[arg(long, env = "ANVIL_EXECUTOR", default_value = "local",
              value_parser = clap::builder::PossibleValuesParser::new(crate::executor::names()))]
        executor: String,
        /// Threads the load generator spreads each cell over (runtime workers
        /// and sender lanes; one is enough up to ~10,000 req/s, docs/metrics.md).
        #[arg(long, env = "ANVIL_LOADGEN_WORKERS", default_value_t = 1,
              value_parser = clap::value_parser!(u32).range(1..=256))]
        loadgen_workers: u32,
    },
    /// Run some steps of a recipe inside a Slurm job (`anvil run --executor slurm` submits these),
    /// or one cell from its step document alone (`--document`, written by `anvil plan --emit`).
    Worker {
        /// The recipe file.
        #[arg(long, required_unless_present = "document", conflicts_with = "document")]
        recipe: Option<PathBuf>,
        /// A cell's step document (repeatable: cells of one server, measured
        /// in order on one launch); their server's document lies beside them.
        #[arg(long, value_name = "STEP.json")]
        document: Vec<PathBuf>,
        #[arg(long = "set", value_name = "NAME=VALUE")]
        set: Vec<String>,
        #[arg(long)]
        sim: bool,
        /// The steps of this job, comma-separated.
        #[arg(long, required_unless_present = "document")]
        steps: Vec<String>,
        #[arg(long)]
        force: Vec<String>,
        #[arg(long)]
        keep_going: bool,
        /// The Slurm job id (default $SLURM_JOB_ID).
        #[arg(long)]
        job: Option<String>,
        /// As `anvil run --loadgen-workers`.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
        loadgen_workers: u32,
    },
    /// Cancel the Slurm jobs of a run (`anvil runs` lists run ids).
    Cancel { run_id: String },
    /// Show the steps, their fingerprints, and what a run would execute and why.
    Plan {
        #[command(flatten)]
        recipe: RecipeArgs,
        #[arg(long)]
        json: bool,
        /// Write each step as a step document, `DIR/<fingerprint>.json`
        /// (its key and how to run it), and `DIR/plan.json` (names and edges).
        #[arg(long, value_name = "DIR")]
        emit: Option<PathBuf>,
    },
    /// Export the DAG.
    Graph {
        #[command(flatten)]
        recipe: RecipeArgs,
        #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
        format: GraphFormat,
    },
    /// Explain what differs between two fingerprints (hex prefixes), two
    /// step documents (`plan --emit`), or RECIPE:STEP as it resolves now
    /// and its last run.
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
        /// List every differing raw result field, not only the headline comparison.
        #[arg(long)]
        all: bool,
    },
    /// Print a stored step.
    Show {
        /// A fingerprint (a hex prefix of 4 or more digits), or RECIPE:STEP
        /// for the step as the recipe's last run recorded it.
        #[arg(value_name = "FP|RECIPE:STEP")]
        fingerprint: String,
        #[arg(long)]
        json: bool,
    },
    /// Write a recipe's latest run (or `--run RUN_ID`) as one bundle file:
    /// the recipe and what it reads, every stored result, the run record and
    /// the campaign outputs.
    Export {
        /// The recipe whose latest run to export.
        #[arg(required_unless_present = "run")]
        recipe: Option<PathBuf>,
        /// Export this recorded run instead.
        #[arg(long, conflicts_with = "recipe")]
        run: Option<String>,
        /// The bundle file (default `<campaign>.anvil`).
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
        /// Sign the bundle with this minisign secret key (`<bundle>.minisig`).
        #[arg(long, value_name = "SECRET_KEY")]
        sign: Option<PathBuf>,
        /// The environment variable holding the secret key's password, if it has one.
        #[arg(long, value_name = "VAR", requires = "sign")]
        sign_password_env: Option<String>,
    },
    /// Write every measured cell's per-request records and per-second
    /// series as Parquet tables (`requests.parquet`, `series.parquet`):
    /// TARGET is a run id, a recipe (its latest run), a stored cell's
    /// fingerprint prefix, a bundle (.anvil) or a benchmark/v1 file (.json).
    ExportData {
        target: String,
        #[arg(long, value_enum, default_value_t = DataFormat::Parquet)]
        format: DataFormat,
        /// The folder the tables go to (created if missing).
        #[arg(long, short = 'o', default_value = "anvil-data")]
        out: PathBuf,
    },
    /// Turn a peer tool's result file into a benchmark/v1 cell in the
    /// store, built from the file's per-request data with anvil's
    /// definitions: `vllm bench serve --save-detailed` JSON, an AIPerf
    /// export (`profile_export.jsonl`, `profile_export_aiperf.json` or
    /// their folder) or a guidellm JSON report (docs/peers.md).
    ImportResult {
        file: PathBuf,
        /// The tool that wrote FILE (default: detected from its keys).
        #[arg(long, value_enum)]
        from: Option<PeerTool>,
        /// Print what was imported as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make an unencrypted minisign key pair for signing bundles (KEY and KEY.pub).
    Keygen {
        #[arg(default_value = "anvil-signing.key")]
        key: PathBuf,
    },
    /// Check a bundle and add its results to the store; unpack its recipe.
    Import {
        bundle: PathBuf,
        /// Where to unpack the recipe (default `imported/<campaign>`).
        #[arg(long)]
        into: Option<PathBuf>,
    },
    /// Check a bundle (every hash, every statistic re-derived from the raw
    /// records, every gate, screen and decision re-evaluated), or a lone
    /// `anvil-serving.benchmark/v1` artifact.
    Verify {
        target: PathBuf,
        #[arg(long)]
        json: bool,
        /// Check the bundle's signature (`<bundle>.minisig`) against this minisign public key.
        #[arg(long, value_name = "PUBLIC_KEY")]
        pubkey: Option<PathBuf>,
    },
    /// Run a bundle's recipe here (its servers as declared, or their
    /// simulated twins with --sim) and answer, noise-aware, whether its
    /// decision labels and the headline metrics of its headline cells
    /// (every cell without a decision) reproduce: exit 0 reproduced, 1
    /// differs, 3 inconclusive, 4 when it could not be done. A cell
    /// measured once is judged against the run-to-run spread the bundle
    /// states.
    Reproduce {
        bundle: PathBuf,
        /// Run every server as its simulated twin.
        #[arg(long)]
        sim: bool,
        /// Override a recipe param on top of the bundle's own --set values (repeatable).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        set: Vec<String>,
        /// Where to unpack the recipe and write campaign outputs (default `reproductions/<campaign>`).
        #[arg(long)]
        into: Option<PathBuf>,
        #[command(flatten)]
        verdicts: VerdictArgs,
    },
    /// Compare two results, noise-aware: each side a bundle (.anvil), a
    /// benchmark/v1 file (.json), a recipe (.kdl, its latest run), a run id
    /// or a stored cell's fingerprint prefix.
    Compare {
        a: String,
        b: String,
        #[command(flatten)]
        verdicts: VerdictArgs,
    },
    /// Render a run as one self-contained HTML page with plots (or
    /// markdown, or CSV): a recipe's latest run, `--run RUN_ID`, or a bundle.
    Report {
        /// A recipe (.kdl: its latest run) or a bundle (.anvil).
        #[arg(required_unless_present = "run")]
        target: Option<PathBuf>,
        /// Report this recorded run instead.
        #[arg(long, conflicts_with = "target")]
        run: Option<String>,
        /// The file to write (`-`: stdout). Default: html to
        /// `<results>/<campaign>/report.html`, md and csv to stdout.
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
        format: ReportFormat,
        /// Where the run wrote its campaign outputs (the decision summary).
        #[arg(long, default_value = "results")]
        results: PathBuf,
    },
    /// Print a shell completion script: `anvil completions bash > /etc/bash_completion.d/anvil`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `anvil man | man -l -`.
    Man,
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

/// How comparisons decide.
#[derive(clap::Args, Debug, Clone)]
pub struct VerdictArgs {
    /// Relative band within which B reproduces A (0.10: ±10%).
    #[arg(long, default_value_t = 0.10)]
    pub threshold: f64,
    #[arg(long)]
    pub json: bool,
    /// Every metric of every cell (by default only of cells that differ).
    #[arg(long)]
    pub all: bool,
}

#[derive(Subcommand, Debug)]
pub enum StoreAction {
    /// Rehash every stored file and report damage.
    Verify {
        #[arg(long)]
        json: bool,
    },
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// One self-contained HTML page with plots.
    Html,
    /// Markdown, for a pull request or an issue.
    Md,
    /// One row per cell with the headline metrics.
    Csv,
}

pub use crate::terminal::{ColorChoice, color_enabled, set_color};

/// How `export-data` writes its tables.
/// The peer tools `anvil import-result` reads.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerTool {
    /// `vllm bench serve --save-result --save-detailed`
    VllmBench,
    /// AIPerf's profile export
    Aiperf,
    /// guidellm's JSON report
    Guidellm,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFormat {
    /// Apache Parquet, one file per table.
    Parquet,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum GraphFormat {
    Dot,
    Mermaid,
}
