//! `anvil run`: execute a recipe and print a one-screen summary.

use std::path::{Path, PathBuf};

use crate::cli::RecipeArgs;
use crate::run::{Ending, RunOptions, RunSummary, execute};

use super::common::{Exit, failed, load_plan, open_store};
use crate::recipe::Kind;

/// Whether a step still to run measures a server that is not the simulated
/// engine: there, the load generator's own cost is part of what it reads.
fn measures_a_real_engine(plan: &crate::plan::Plan) -> bool {
    use crate::recipe::Spec;
    use crate::recipe::decls::Engine;
    if plan.mode == crate::plan::EngineMode::SimulatedTwins {
        return false;
    }
    plan.nodes.iter().enumerate().any(|(i, node)| {
        let real = plan.server_of(i).is_some_and(|s| match &plan.recipe.steps[s].spec {
            Spec::Server(server) => !matches!(server.engine, Engine::Sim),
            _ => false,
        });
        node.status == crate::plan::Status::Pending && real
    })
}

/// Where a run's outputs go and how its summary is printed.
pub struct Outputs<'a> {
    /// Campaign outputs go to `dir/<campaign>/`.
    pub dir: &'a Path,
    /// Write the HTML report there too.
    pub report: bool,
    /// Print the summary as JSON on stdout.
    pub json: bool,
}

/// Run a recipe; its campaign outputs go to `out.dir/<campaign>/`.
pub async fn run(
    store_root: &Path,
    args: &RecipeArgs,
    options: RunOptions,
    out: &Outputs<'_>,
) -> Result<i32, Exit> {
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
    if cfg!(debug_assertions) && measures_a_real_engine(&plan) {
        eprintln!(
            "note: this anvil is an unoptimised build (cargo's dev profile): fine for the simulated engine; \
             for numbers you keep from a real engine, build it with `cargo build --release`"
        );
    }
    let summary = execute(plan, store.clone(), options).await?;
    let has_decision = summary.plan.recipe.steps.iter().any(|s| s.kind == Kind::Decision);
    let unmeasured = headline_unmeasured(&summary, &store);
    if let Some(names) = &unmeasured {
        eprintln!(
            "no campaign outputs written: no headline cell of the decision has a result ({names}); nothing to publish"
        );
    }
    let outputs = if summary.interrupted.is_none() && has_decision && unmeasured.is_none() {
        crate::report::campaign::write_outputs(&summary, &store, out.dir)
            .map_err(|e| failed(format!("writing the campaign outputs in {}: {e}", out.dir.display())))?
    } else {
        Vec::new()
    };
    let campaign = &summary.plan.recipe.campaign.name;
    let report_path = out.dir.join(campaign).join("report.html");
    let report = if out.report && summary.interrupted.is_none() {
        match super::report::write_html(&store, &summary.run_id, &args.recipe, out.dir) {
            Ok(path) => Report::Written(path),
            Err(err) => {
                eprintln!("warning: the report could not be written: {err}");
                Report::Failed
            }
        }
    } else {
        Report::Available(report_path)
    };
    if out.json {
        print_json(&summary, &outputs, &report);
    } else {
        print_searches(&summary, &store);
        print_summary(&summary, &outputs, &report, &args.recipe);
    }
    Ok(match summary.interrupted {
        Some(code) => code,
        None if summary.succeeded() => 0,
        None => 1,
    })
}

/// The decision's headline cells, when it names some and none of them has
/// a stored result (the run could not measure them: no GPU, a server that
/// did not start): a summary then would publish a decision without its
/// evidence.
fn headline_unmeasured(summary: &crate::run::RunSummary, store: &anvil_store::Store) -> Option<String> {
    let plan = &summary.plan;
    let headline: Vec<&str> = plan
        .recipe
        .steps
        .iter()
        .filter_map(|s| match &s.spec {
            crate::recipe::Spec::Decision(d) => Some(d.headline.iter().map(String::as_str)),
            _ => None,
        })
        .flatten()
        .collect();
    let measured = |name: &str| plan.nodes.iter().any(|n| n.name == name && store.contains(&n.fingerprint));
    (!headline.is_empty() && !headline.iter().any(|name| measured(name))).then(|| headline.join(", "))
}

/// The HTML report after a run: written, or where `anvil report` would write it.
enum Report {
    Written(PathBuf),
    Available(PathBuf),
    Failed,
}

/// `run --json`: one object on stdout, like `plan --json`.
fn print_json(summary: &RunSummary, outputs: &[PathBuf], report: &Report) {
    let steps: Vec<serde_json::Value> = summary
        .steps
        .iter()
        .filter(|s| s.kind != Kind::Server)
        .map(|s| {
            serde_json::json!({
                "name": s.name,
                "kind": s.kind.as_str(),
                "fingerprint": s.fingerprint.to_string(),
                "status": s.outcome.ending.as_str(),
                "duration_ms": s.outcome.duration.as_millis() as u64,
                "detail": s.outcome.detail,
                "fault": s.outcome.fault.map(|f| f.as_str()),
            })
        })
        .collect();
    let status = if summary.interrupted.is_some() {
        "interrupted"
    } else if summary.succeeded() {
        "succeeded"
    } else {
        "failed"
    };
    let counts = serde_json::json!({
        "ran": summary.count(Ending::Ran),
        "cached": summary.count(Ending::Cached),
        "failed": summary.count(Ending::Failed),
        "rejected": summary.count(Ending::Rejected),
        "skipped": summary.count(Ending::Skipped),
    });
    let value = serde_json::json!({
        "run_id": summary.run_id,
        "campaign": summary.plan.recipe.campaign.name,
        "status": status,
        "finished_at": summary.finished_at,
        "elapsed_s": summary.elapsed.as_secs_f64(),
        "counts": counts,
        "steps": steps,
        "outputs": outputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "report": match report {
            Report::Written(p) => serde_json::Value::String(p.display().to_string()),
            _ => serde_json::Value::Null,
        },
    });
    println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
}

/// Each search's answer, whether it ran now or was stored.
fn print_searches(summary: &RunSummary, store: &anvil_store::Store) {
    for step in summary.steps.iter().filter(|s| s.kind == Kind::Search) {
        let Ok(Some(result)) = store.read_result(&step.fingerprint) else { continue };
        let Ok(search) = crate::results::from_value::<crate::results::SearchResult>(result) else { continue };
        println!(
            "search `{}`: {} (boundary {}, stopped: {}, {}){}",
            step.name,
            search.claim(),
            search.boundary,
            search.stopped,
            search.cost_words(),
            if search.simulated { " (simulated)" } else { "" }
        );
    }
}

fn print_summary(summary: &RunSummary, outputs: &[PathBuf], report: &Report, recipe: &Path) {
    let problems: Vec<_> = summary
        .steps
        .iter()
        .filter(|s| matches!(s.outcome.ending, Ending::Failed | Ending::Rejected))
        .collect();
    if !problems.is_empty() {
        println!();
        for step in &problems {
            println!(
                "{} {} `{}`: {}",
                step.outcome.ending.as_str().to_uppercase(),
                step.kind,
                step.name,
                step.outcome.detail
            );
        }
    }
    for output in outputs {
        println!("wrote {}", output.display());
    }
    match report {
        Report::Written(path) => println!("report: {}", path.display()),
        Report::Available(path) if summary.interrupted.is_none() => {
            println!(
                "report: anvil report {} (writes {}; or run with --report)",
                recipe.display(),
                path.display()
            )
        }
        _ => {}
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
