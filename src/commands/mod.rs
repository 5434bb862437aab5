//! One file per subcommand. Each returns an exit code or an `Exit` saying
//! whether the user's input was at fault (2) or the work failed (1).

mod bundle;
mod common;
mod compare;
mod diff;
mod emit;
mod export_data;
mod graph;
mod import_result;
mod plan;
mod report;
mod run;
mod show;
mod sim;
mod store;

use clap::Parser;

pub use common::{Exit, failed, input, load_plan, open_store};

use crate::cli::{Cli, Command, RecipeArgs, StoreAction};

pub async fn dispatch(cli: Cli) -> Result<i32, Exit> {
    match cli.command {
        Command::Run {
            recipe,
            jobs,
            force,
            only,
            keep_going,
            dry_run,
            gpus,
            out,
            report,
            json,
            executor,
            loadgen_workers,
        } => {
            if dry_run {
                return plan::plan(&cli.store, &recipe, json).await;
            }
            let executor = crate::executor::choose(&executor).map_err(input)?;
            let options =
                crate::run::RunOptions { jobs, force, only, keep_going, gpus, executor, loadgen_workers };
            run::run(&cli.store, &recipe, options, &run::Outputs { dir: &out, report, json }).await
        }
        Command::Report { target, run, out, format, results } => {
            let args = report::ReportArgs {
                target: target.as_deref(),
                run: run.as_deref(),
                out,
                format,
                results: &results,
            };
            report::report(&cli.store, &args)
        }
        Command::Completions { shell } => report::completions(shell),
        Command::Man => report::man(),
        Command::Worker { document, force, loadgen_workers, job, .. } if !document.is_empty() => {
            let store = open_store(&cli.store)?;
            let args =
                crate::executor::slurm::DocumentJob { documents: document, force, job, loadgen_workers };
            crate::executor::slurm::document_worker(store, args).await.map_err(|e| input(e.to_string()))
        }
        Command::Worker { recipe, set, sim, steps, force, keep_going, job, loadgen_workers, .. } => {
            let began_ms = crate::executor::slurm::now_ms();
            let store = open_store(&cli.store)?;
            let recipe = recipe.ok_or_else(|| input("worker: --recipe or --document"))?;
            let plan = load_plan(&RecipeArgs { recipe, set, sim }, Some(&store))?;
            let args = crate::executor::slurm::WorkerArgs { steps, force, keep_going, job, loadgen_workers };
            crate::executor::slurm::worker(store, plan, args, began_ms).await.map_err(|err| match err {
                crate::executor::slurm::WorkerError::Input(message) => input(message),
                crate::executor::slurm::WorkerError::Run(err) => err.into(),
            })
        }
        Command::Cancel { run_id } => {
            crate::executor::slurm::cancel(&open_store(&cli.store)?, &run_id).map_err(failed)
        }
        Command::Plan { recipe, emit: Some(dir), .. } => emit::emit(&cli.store, &recipe, &dir),
        Command::Plan { recipe, json, emit: None } => plan::plan(&cli.store, &recipe, json).await,
        Command::Graph { recipe, format } => graph::graph(&recipe, format),
        Command::Diff { a, b, json, sim, set, all } => {
            diff::diff(&cli.store, &a, b.as_deref(), json, &diff::Resolution { sim, set, all })
        }
        Command::Show { fingerprint, json } => show::show(&cli.store, &fingerprint, json),
        Command::Runs { json } => show::runs(&cli.store, json),
        Command::Export { recipe, run, out, sign, sign_password_env } => {
            let signing = sign.map(|key| bundle::Signing { key, password_env: sign_password_env });
            bundle::export(&cli.store, recipe.as_deref(), run.as_deref(), out, signing)
        }
        Command::ExportData { target, format, out } => {
            export_data::export_data(&cli.store, &target, format, &out)
        }
        Command::ImportResult { file, from, json } => {
            import_result::import_result(&cli.store, &file, from, json)
        }
        Command::Keygen { key } => bundle::keygen(&key),
        Command::Import { bundle, into } => bundle::import(&cli.store, &bundle, into),
        Command::Verify { target, json, pubkey } => bundle::verify(&target, json, pubkey.as_deref()),
        Command::Reproduce { bundle, sim, set, into, verdicts } => {
            compare::reproduce(&cli.store, &bundle, sim, &set, into, &verdicts).await
        }
        Command::Compare { a, b, verdicts } => compare::compare(&cli.store, &a, &b, &verdicts),
        Command::Store { action: StoreAction::Verify { json } } => store::verify(&cli.store, json),
        Command::Gc { dry_run } => store::gc(&cli.store, dry_run),
        Command::Sim { port, host, profile, set } => sim::sim(&host, port, profile.as_deref(), &set).await,
    }
}

/// The runtime a command needs: the commands that serve or measure (the
/// simulated engine and the load generator's callers) get worker threads;
/// the rest read files and print, and a single thread starts faster.
fn runtime_for(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    match command {
        Command::Run { .. } | Command::Worker { .. } | Command::Reproduce { .. } | Command::Sim { .. } => {
            tokio::runtime::Builder::new_multi_thread().enable_all().build()
        }
        _ => tokio::runtime::Builder::new_current_thread().enable_all().build(),
    }
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
    crate::cli::set_color(cli.color);
    // Error reports follow --color / NO_COLOR too (miette would guess from the terminal).
    let color = crate::cli::color_enabled();
    if !color || cli.color == crate::cli::ColorChoice::Always {
        let _ = miette::set_hook(Box::new(move |_| {
            Box::new(miette::MietteHandlerOpts::new().color(color).build())
        }));
    }
    let runtime = match runtime_for(&cli.command) {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return 1;
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(exit) => {
            eprintln!("{:?}", exit.report());
            exit.code()
        }
    }
}
