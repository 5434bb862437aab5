//! Every file a recipe names, read and checked when the recipe loads, so a
//! broken one stops `anvil plan` and `anvil run` (exit 2) before any server
//! starts: a cell's trace, dataset or agent trace (read through as the replay reads it),
//! a server's tokenizer and CA bundle, and the files steps `reads`.
//!
//! A problem points at the recipe's setting and names the file's line and
//! column. A trace or dataset key its format does not read is not an
//! error: it is printed on stderr as a warning naming the key and the
//! first line that holds it (there is no other channel for warnings at
//! plan time). Each file is checked once however many steps name it. Run as
//! twins (`--sim`), a server's weights and CA bundle are not read, so not
//! checked; its tokenizer is (the twin's prompts are built with it).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::preimage::EngineMode;
use crate::recipe::decls::load::TrafficDecl;
use crate::recipe::{Decl, Problem, Problems, Recipe, RecipeError, Spec};

/// Check every input file of `recipe`; all problems at once.
pub fn check_inputs(recipe: &Recipe, mode: EngineMode) -> Result<(), RecipeError> {
    let dir = recipe.dir();
    let mut problems = Problems::default();
    let mut seen: HashSet<(PathBuf, &'static str)> = HashSet::new();
    let mut first_time = |path: &Path, what: &'static str| seen.insert((path.to_path_buf(), what));
    for step in &recipe.steps {
        // A search's probes are cells of its workload: its first probe stands for them.
        let probe;
        let cell = match &step.spec {
            Spec::Cell(cell) => Some((step, cell)),
            Spec::Search(search) => {
                probe = search.probe(search.min);
                match &probe.spec {
                    Spec::Cell(cell) => Some((step, cell)),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some((step, cell)) = cell {
            match &cell.load.traffic {
                TrafficDecl::Trace(trace) => {
                    let path = dir.join(&trace.file);
                    first_time(&path, "reads"); // read through here: not again as a bare read
                    if first_time(&path, "trace") {
                        match anvil_loadgen::check_trace(&path, trace.format()) {
                            Ok(summary) => warn_unknown_keys("trace", &trace.file, &summary),
                            Err(problem) => problems.push(file_problem(step, "trace", &trace.file, &problem)),
                        }
                    }
                }
                TrafficDecl::Dataset(dataset) => {
                    let path = dir.join(&dataset.file);
                    first_time(&path, "reads");
                    if first_time(&path, "dataset") {
                        match anvil_loadgen::check_dataset(&path, dataset.format()) {
                            Ok(summary) => warn_unknown_keys("dataset", &dataset.file, &summary),
                            Err(problem) => {
                                problems.push(file_problem(step, "dataset", &dataset.file, &problem));
                            }
                        }
                    }
                }
                TrafficDecl::Agents(agents) => {
                    let path = dir.join(&agents.file);
                    first_time(&path, "reads");
                    if first_time(&path, "agents") {
                        match anvil_loadgen::check_agent_trace(&path, agents.format()) {
                            Ok(summary) => warn_unknown_keys("agents", &agents.file, &summary.keys),
                            Err(problem) => {
                                problems.push(file_problem(step, "agents", &agents.file, &problem))
                            }
                        }
                    }
                }
                TrafficDecl::Synthetic | TrafficDecl::Sessions(_) => {}
            }
        }
        let twinned = matches!(&step.spec, Spec::Server(_)) && mode == EngineMode::SimulatedTwins;
        if let Spec::Server(server) = &step.spec {
            if let Some(tokenizer) = &server.tokenizer
                && let Some(file) = tokenizer.resolved_against(&dir).file()
            {
                let checked = file.map_err(|e| e.to_string()).and_then(|path| {
                    if !first_time(&path, "tokenizer") {
                        return Ok(());
                    }
                    anvil_tokens::tokenizer::read_file(&path).map(|_| ()).map_err(|e| format!("{e:#}"))
                });
                if let Err(why) = checked {
                    problems.push(
                        step.problem_at("tokenizer", format!("tokenizer {}: {why}", tokenizer.as_written()))
                            .label("this tokenizer")
                            .help("cells on this server build their prompts with it: fix the path, or drop `tokenizer` to count tokens by the server's usage"),
                    );
                }
            }
            if let Some(bundle) = server.tls.ca_bundle.as_ref().filter(|_| !twinned) {
                let path = dir.join(bundle);
                if first_time(&path, "ca-bundle")
                    && let Err(why) = anvil_net::check_ca_bundle(&path)
                {
                    problems
                        .push(step.problem_at("ca-bundle", format!("{why:#}")).label("this CA bundle").help(
                        "a PEM file of `-----BEGIN CERTIFICATE-----` blocks, relative to the recipe's folder",
                    ));
                }
            }
        }
        for read in step.spec.reads().iter().filter(|_| !twinned) {
            let path = dir.join(read);
            if first_time(&path, "reads")
                && let Err(why) = readable(&path)
            {
                problems.push(
                    step.problem_at("reads", format!("`reads` names {read}, which {why}"))
                        .label("read by this step")
                        .help(format!("paths are relative to the recipe's folder ({})", dir.display())),
                );
            }
        }
    }
    problems.into_result(&recipe.path.display().to_string(), ())
}

/// The keys of a trace or dataset its format does not read (ignored: real
/// traces carry more fields than a replay needs, but one may be a typo),
/// each once, at the first line that holds it, on stderr.
fn warn_unknown_keys(key: &str, file: &str, summary: &anvil_loadgen::InputSummary) {
    for unknown in &summary.unknown_keys {
        eprintln!("warning: {key} {file}, line {}: {unknown}", unknown.line);
    }
    if summary.more_unknown_keys {
        eprintln!(
            "warning: {key} {file}: more unknown keys, ignored (only the first {} are named)",
            anvil_loadgen::UNKNOWN_KEYS_NAMED
        );
    }
}

/// A read is a file or a folder that can be opened.
fn readable(path: &Path) -> Result<(), String> {
    let metadata = std::fs::metadata(path).map_err(|e| format!("cannot be read: {e}"))?;
    let opened = if metadata.is_dir() {
        std::fs::read_dir(path).map(|_| ())
    } else {
        std::fs::File::open(path).map(|_| ())
    };
    opened.map_err(|e| format!("cannot be read: {e}"))
}

/// The recipe's `key` setting, and where in `file` the problem is.
fn file_problem(step: &Decl, key: &str, file: &str, problem: &anvil_loadgen::FileProblem) -> Problem {
    let message = match problem.position() {
        Some(at) => format!("{key} {file}, {at}: {}", problem.message),
        None => format!("{key} {file} {}", problem.message),
    };
    let help = match key {
        "trace" => {
            "every line is read before anything runs; fix that line (docs/workloads.md has the formats)"
        }
        _ => "the file is read before anything runs; fix it (docs/workloads.md has the formats)",
    };
    step.problem_at(key, message).label(format!("this {key}")).help(help)
}
