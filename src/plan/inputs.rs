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
use crate::recipe::decls::{CellDecl, ServerDecl};
use crate::recipe::{Decl, Problem, Problems, Recipe, RecipeError, Spec};

/// Check every input file of `recipe`; all problems at once.
pub fn check_inputs(recipe: &Recipe, mode: EngineMode) -> Result<(), RecipeError> {
    let mut check = InputCheck { dir: recipe.dir(), problems: Problems::default(), seen: HashSet::new() };
    for step in &recipe.steps {
        match &step.spec {
            Spec::Cell(cell) => check.traffic(step, cell),
            // A search's probes are cells of its workload: its first probe stands for them.
            Spec::Search(search) => {
                if let Spec::Cell(cell) = &search.probe(search.min).spec {
                    check.traffic(step, cell);
                }
            }
            _ => {}
        }
        let twinned = matches!(&step.spec, Spec::Server(_)) && mode == EngineMode::SimulatedTwins;
        if let Spec::Server(server) = &step.spec {
            check.server(step, server, twinned);
        }
        // A twin reads none of its server's files but the tokenizer.
        if !twinned {
            check.reads(step);
        }
    }
    check.problems.into_result(&recipe.path.display().to_string(), ())
}

/// What the check carries from step to step: the recipe's folder, the
/// problems found so far, and the files already checked, each by what it
/// was read as (so a file many steps name is checked once).
struct InputCheck {
    dir: PathBuf,
    problems: Problems,
    seen: HashSet<(PathBuf, &'static str)>,
}

impl InputCheck {
    /// Whether `path` is not yet checked as `what` (and from now on it is).
    fn first_time(&mut self, path: &Path, what: &'static str) -> bool {
        self.seen.insert((path.to_path_buf(), what))
    }

    /// The trace, dataset or agent trace a cell replays, read through as the
    /// replay reads it.
    fn traffic(&mut self, step: &Decl, cell: &CellDecl) {
        match &cell.load.traffic {
            TrafficDecl::Trace(trace) => self.traffic_file(step, "trace", &trace.file, |path| {
                anvil_loadgen::check_trace(path, trace.format())
            }),
            TrafficDecl::Dataset(dataset) => self.traffic_file(step, "dataset", &dataset.file, |path| {
                anvil_loadgen::check_dataset(path, dataset.format())
            }),
            TrafficDecl::Agents(agents) => self.traffic_file(step, "agents", &agents.file, |path| {
                anvil_loadgen::check_agent_trace(path, agents.format()).map(|summary| summary.keys)
            }),
            TrafficDecl::Synthetic | TrafficDecl::Sessions(_) => {}
        }
    }

    /// One traffic file, checked by `check` as its `key` (once); its unknown
    /// keys are warnings, its problem points at the step's `key` setting.
    fn traffic_file(
        &mut self,
        step: &Decl,
        key: &'static str,
        file: &str,
        check: impl FnOnce(&Path) -> Result<anvil_loadgen::InputSummary, anvil_loadgen::FileProblem>,
    ) {
        let path = self.dir.join(file);
        self.first_time(&path, "reads"); // read through here: not again as a bare read
        if self.first_time(&path, key) {
            match check(&path) {
                Ok(summary) => warn_unknown_keys(key, file, &summary),
                Err(problem) => self.problems.push(file_problem(step, key, file, &problem)),
            }
        }
    }

    /// A server's tokenizer, and its CA bundle unless it runs as a twin.
    fn server(&mut self, step: &Decl, server: &ServerDecl, twinned: bool) {
        if let Some(tokenizer) = &server.tokenizer
            && let Some(file) = tokenizer.resolved_against(&self.dir).file()
        {
            let checked = file.map_err(|e| e.to_string()).and_then(|path| {
                if !self.first_time(&path, "tokenizer") {
                    return Ok(());
                }
                anvil_tokens::tokenizer::read_file(&path).map(|_| ()).map_err(|e| format!("{e:#}"))
            });
            if let Err(why) = checked {
                self.problems.push(
                    step.problem_at("tokenizer", format!("tokenizer {}: {why}", tokenizer.as_written()))
                        .label("this tokenizer")
                        .help("cells on this server build their prompts with it: fix the path, or drop `tokenizer` to count tokens by the server's usage"),
                );
            }
        }
        if let Some(bundle) = server.tls.ca_bundle.as_ref().filter(|_| !twinned) {
            let path = self.dir.join(bundle);
            if self.first_time(&path, "ca-bundle")
                && let Err(why) = anvil_net::check_ca_bundle(&path)
            {
                self.problems.push(
                    step.problem_at("ca-bundle", format!("{why:#}")).label("this CA bundle").help(
                        "a PEM file of `-----BEGIN CERTIFICATE-----` blocks, relative to the recipe's folder",
                    ),
                );
            }
        }
    }

    /// The files and folders a step `reads`: each must open.
    fn reads(&mut self, step: &Decl) {
        for read in step.spec.reads() {
            let path = self.dir.join(read);
            if self.first_time(&path, "reads")
                && let Err(why) = readable(&path)
            {
                self.problems.push(
                    step.problem_at("reads", format!("`reads` names {read}, which {why}"))
                        .label("read by this step")
                        .help(format!("paths are relative to the recipe's folder ({})", self.dir.display())),
                );
            }
        }
    }
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
