//! `anvil compare A B` and `anvil reproduce BUNDLE`: noise-aware answers
//! to "do these numbers agree?".

use std::path::{Path, PathBuf};

use anvil_evidence::{CompareOptions, Verdict};

use crate::bundle::Invocation;
use crate::cli::VerdictArgs;
use crate::compare::{self, Reproduction, Side};
use crate::plan::{EngineMode, Plan};
use crate::recipe::Spec;
use crate::run::{RunOptions, execute};

use super::common::{Exit, failed, input, open_store, reproduce_code};

fn options(verdicts: &VerdictArgs) -> Result<CompareOptions, Exit> {
    if !(verdicts.threshold > 0.0 && verdicts.threshold < 1.0) {
        return Err(input(format!(
            "--threshold takes a fraction between 0 and 1, not {}",
            verdicts.threshold
        )));
    }
    Ok(CompareOptions { threshold: verdicts.threshold, ..CompareOptions::default() })
}

fn print(report: &compare::Report, verdicts: &VerdictArgs) {
    if verdicts.json {
        println!("{}", serde_json::to_string_pretty(report).unwrap_or_default());
    } else {
        print!("{}", compare::render(report, verdicts.all));
    }
}

pub fn compare(store_root: &Path, a: &str, b: &str, verdicts: &VerdictArgs) -> Result<i32, Exit> {
    let options = options(verdicts)?;
    let store = open_store(store_root)?;
    // Files only: each pair's heads are read when it is compared, and the
    // records streamed from the files by the headline rows.
    let a = compare::resolve(&store, a).map_err(input)?;
    let b = compare::resolve(&store, b).map_err(input)?;
    let report = compare::compare(&a, &b, &options).map_err(input)?;
    print(&report, verdicts);
    Ok(0)
}

pub async fn reproduce(
    store_root: &Path,
    bundle: &Path,
    sim: bool,
    set: &[String],
    into: Option<PathBuf>,
    verdicts: &VerdictArgs,
) -> Result<i32, Exit> {
    let options = options(verdicts)?;
    reproduce_and_judge(store_root, bundle, sim, set, into, verdicts, &options)
        .await
        .map_err(Exit::in_reproduce)
}

async fn reproduce_and_judge(
    store_root: &Path,
    bundle: &Path,
    sim: bool,
    set: &[String],
    into: Option<PathBuf>,
    verdicts: &VerdictArgs,
    options: &CompareOptions,
) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    let bundle_text = bundle.display().to_string();
    // The published side, checked like `verify` checks it.
    let published: Side = compare::resolve(&store, &bundle_text).map_err(failed)?;

    let scratch = tempfile::tempdir().map_err(|e| failed(format!("temporary folder: {e}")))?;
    let imported =
        crate::bundle::unpack(bundle, scratch.path()).map_err(|e| failed(format!("reproduce: {e}")))?;
    let manifest = &imported.verified.manifest;
    let into = into.unwrap_or_else(|| PathBuf::from("reproductions").join(&manifest.campaign));
    let recipe_path = crate::bundle::extract_recipe(&imported, &into)
        .map_err(|e| failed(format!("unpacking the recipe: {e}")))?;
    let Invocation { set: mut overrides, sim: published_sim } = manifest.invocation.clone();
    overrides.extend(set.iter().cloned()); // later values win
    let mode = if sim || published_sim { EngineMode::SimulatedTwins } else { EngineMode::AsDeclared };
    let recipe =
        crate::recipe::load(&recipe_path, &overrides).map_err(|e| Exit::Input(miette::Report::new(e)))?;
    let plan = Plan::build(recipe, Some(&store), mode).map_err(|e| Exit::Input(miette::Report::new(e)))?;
    let headline = headline_cells(&plan);
    eprintln!(
        "anvil: reproducing {} ({}) from {} — servers {}",
        manifest.campaign,
        imported.verified.digest,
        recipe_path.display(),
        if mode == EngineMode::SimulatedTwins { "as simulated twins" } else { "as declared" }
    );
    let summary = execute(plan, store.clone(), RunOptions { jobs: 4, ..RunOptions::default() }).await?;
    if summary.interrupted.is_some() {
        return Err(failed("interrupted"));
    }
    crate::report::campaign::write_outputs(&summary, &store, &into.join("results"))
        .map_err(|e| failed(format!("writing the campaign outputs: {e}")))?;
    let run =
        store.run(&summary.run_id)?.ok_or_else(|| failed("the reproduction's run record is missing"))?;
    let reproduced = compare::resolve(&store, &run.run_id).map_err(failed)?;
    let mut report = compare::compare(&published, &reproduced, options).map_err(failed)?;
    let reproduction = {
        let judged = report.metrics_judged(&headline);
        let reproduction = Reproduction::of(report.labels_reproduced(), &judged);
        if !verdicts.json {
            print(&report, verdicts);
            println!();
            for line in summary_lines(&judged, &reproduction, !headline.is_empty(), options.threshold) {
                println!("{line}");
            }
        }
        reproduction
    };
    let answer = reproduction.answer;
    report.reproduction = Some(reproduction);
    if verdicts.json {
        print(&report, verdicts);
    }
    Ok(match answer {
        Verdict::Reproduced => reproduce_code::REPRODUCED,
        Verdict::Differs => reproduce_code::DIFFERS,
        Verdict::Inconclusive => reproduce_code::INCONCLUSIVE,
    })
}

/// Names of the cells a recipe's decision heads its summary with (empty:
/// no decision, or one that names none).
fn headline_cells(plan: &Plan) -> Vec<String> {
    plan.recipe
        .steps
        .iter()
        .filter_map(|s| match &s.spec {
            Spec::Decision(d) => Some(d.headline.iter().cloned()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// What `reproduce` says below the comparison: the decision labels, the
/// judged cells counted by verdict with what differs and what is open,
/// and the answer.
fn summary_lines(
    judged: &compare::MetricsJudged<'_>,
    reproduction: &Reproduction,
    decision_headline: bool,
    threshold: f64,
) -> Vec<String> {
    let mut lines = Vec::new();
    match reproduction.labels_reproduced {
        Some(true) => lines.push("every decision label reproduced".to_string()),
        Some(false) => {
            lines.push("DECISION LABELS DIFFER: the published conclusion did not reproduce here".to_string())
        }
        None => {}
    }
    let names: Vec<&str> = judged.cells.iter().map(|c| c.name.as_str()).collect();
    let scope = if decision_headline { "the decision's headline cells" } else { "every cell" };
    let mut line = if names.is_empty() {
        format!("headline metrics: none judged ({scope}: no cell compared)")
    } else {
        format!(
            "headline metrics of {scope} ({}) at ±{:.0}%: {}",
            names.join(", "),
            threshold * 100.0,
            judged.counts_words()
        )
    };
    if !judged.missing.is_empty() {
        line.push_str(&format!("; not compared: {}", judged.missing.join(", ")));
    }
    lines.push(line);
    if let Some(differs) = judged.differs_words() {
        lines.push(format!("differs: {differs}"));
    }
    if let Some(open) = judged.inconclusive_words(threshold) {
        lines.push(format!("inconclusive: {open}"));
    }
    lines.push(format!(
        "reproduction {}",
        match reproduction.answer {
            Verdict::Reproduced => "REPRODUCED",
            Verdict::Differs => "DIFFERS",
            Verdict::Inconclusive => "INCONCLUSIVE",
        }
    ));
    lines
}
