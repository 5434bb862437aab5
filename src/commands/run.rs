//! `anvil run`: execute a recipe and print a one-screen summary.

use std::path::{Path, PathBuf};

use crate::cli::RecipeArgs;
use crate::run::{Ending, RunOptions, RunSummary, execute};

use super::{Exit, failed, load_plan, open_store};
use crate::recipe::Kind;

/// Run a recipe; its campaign outputs go to `out/<campaign>/`.
pub async fn run(store_root: &Path, args: &RecipeArgs, options: RunOptions, out: &Path) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    // What a killed run of an earlier anvil left behind.
    for reaped in anvil_proc::reap_orphans(&crate::run::registry_dir()) {
        eprintln!("note: stopped an orphaned server left by an earlier anvil: {reaped:?}");
    }
    let plan = load_plan(args, Some(&store))?;
    let pending = plan
        .nodes
        .iter()
        .filter(|n| n.status == crate::plan::Status::Pending && n.kind != crate::recipe::Kind::Server)
        .count();
    eprintln!(
        "anvil: {} ({} steps, {} to run) — store {}",
        plan.recipe.campaign.name,
        plan.nodes.len(),
        pending,
        store_root.display()
    );
    let summary = execute(plan, store.clone(), options).await?;
    let has_decision = summary.plan.recipe.steps.iter().any(|s| s.kind == Kind::Decision);
    let outputs = if summary.interrupted.is_none() && has_decision {
        crate::report::campaign::write_outputs(&summary, &store, out)
            .map_err(|e| failed(format!("writing the campaign outputs in {}: {e}", out.display())))?
    } else {
        Vec::new()
    };
    print_summary(&summary, &outputs);
    Ok(match summary.interrupted {
        Some(code) => code,
        None if summary.succeeded() => 0,
        None => 1,
    })
}

fn print_summary(summary: &RunSummary, outputs: &[PathBuf]) {
    let problems: Vec<_> =
        summary.steps.iter().filter(|s| matches!(s.ending, Ending::Failed | Ending::Rejected)).collect();
    if !problems.is_empty() {
        println!();
        for step in &problems {
            println!(
                "{} {} `{}`: {}",
                step.ending.as_str().to_uppercase(),
                step.kind,
                step.name,
                step.detail
            );
        }
    }
    for output in outputs {
        println!("wrote {}", output.display());
    }
    println!();
    println!(
        "{}: {} ran, {} cached, {} failed, {} rejected, {} skipped in {:.1}s (run {})",
        if summary.interrupted.is_some() {
            "INTERRUPTED"
        } else if summary.succeeded() {
            "ok"
        } else {
            "FAILED"
        },
        summary.count(Ending::Ran),
        summary.count(Ending::Cached),
        summary.count(Ending::Failed),
        summary.count(Ending::Rejected),
        summary.count(Ending::Skipped),
        summary.elapsed.as_secs_f64(),
        summary.run_id,
    );
}
