//! Recipes: KDL files → a validated, fully resolved list of declarations.
//!
//! The pipeline, one file each: `loader` (KDL, includes, params) → `expand`
//! (extends, sweeps, placeholders) → `convert` (schema, types) → checks of
//! names and references here. Every problem carries its file and span.

mod arm_checks;
mod checks;
mod convert;
mod decl;
pub mod decls;
mod defaults;
mod expand;
mod expression;
pub mod family_error;
pub mod gate_bounds;
mod loader;
mod params;
mod problem;
mod raw;
pub mod result_refs;
pub mod search_error;

mod schema;
mod settings;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::step_kind::Kind;
pub use decl::Decl;
pub use decls::Spec;
pub use expression::Expression;
pub use loader::FrozenTexts;
pub use problem::{Problem, Problems, RecipeError, SourceText, did_you_mean};
pub use result_refs::ResultValues;
pub use schema::{DurationError, parse_duration};
pub use settings::Setting;

use checks::{check_properties, check_references, check_unique};
use defaults::{default_engine, take_in_workload};
pub use params::kdl_to_json;
use params::resolve_params;
use settings::Draft;

#[derive(Debug, Clone)]
pub struct Campaign {
    pub name: String,
    pub description: Option<String>,
    pub seed: u64,
}

/// A loaded recipe: every step concrete, every reference checked.
#[derive(Debug, Clone)]
pub struct Recipe {
    /// The recipe file as given on the command line.
    pub path: PathBuf,
    /// Stable identity of this recipe across runs: its canonical path.
    pub key: String,
    pub campaign: Campaign,
    /// Parameter values after `--set` overrides.
    pub params: BTreeMap<String, serde_json::Value>,
    /// The `--set` texts as given (a bundle carries them, to reproduce the run).
    pub overrides: Vec<String>,
    /// Steps in the order they were written (includes in place).
    pub steps: Vec<Decl>,
    pub workloads: Vec<Decl>,
    /// The `executor "slurm" { … }` block, if any: how, not what, so no fingerprint sees it.
    pub executor: Option<decls::ExecutorDecl>,
    /// Every recipe file read.
    pub files: Vec<PathBuf>,
    /// The text of each of `files` as it was read (named as read): what a
    /// run loads again from when it settles upstream results
    /// ([`reload_with_results`]), never the files, which may have changed.
    pub sources: Vec<SourceText>,
}

impl Recipe {
    /// The folder relative paths in the recipe (reads, cwd, includes) start from.
    pub fn dir(&self) -> PathBuf {
        match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    pub fn step(&self, name: &str) -> Option<&Decl> {
        self.steps.iter().find(|d| d.name == name)
    }

    /// Its `executor "slurm" { … }` block; Slurm's defaults without one.
    pub fn slurm_settings(&self) -> decls::executor::SlurmSettings {
        match &self.executor {
            Some(decls::ExecutorDecl::Slurm(settings)) => settings.clone(),
            _ => decls::executor::SlurmSettings::default(),
        }
    }

    /// The recipe files' texts as this recipe read them.
    pub fn frozen_texts(&self) -> FrozenTexts {
        FrozenTexts::of(&self.files, &self.sources)
    }
}

/// Load and check a recipe. `overrides` are `name=value` texts from `--set`.
pub fn load(path: &Path, overrides: &[String]) -> Result<Recipe, RecipeError> {
    load_with_results(path, overrides, &ResultValues::new())
}

/// `extends`, sweeps and placeholders, with the upstream results known so far.
fn expand_with(
    decls: Vec<raw::RawDecl>,
    params: &BTreeMap<String, kdl::KdlValue>,
    results: &ResultValues,
    problems: &mut Problems,
) -> Vec<raw::RawDecl> {
    let mut decls = decls;
    result_refs::fill_extends(&mut decls, results);
    let decls = expand::apply_extends(decls, problems);
    let mut vars = params.clone();
    vars.extend(results.iter().map(|(name, value)| (name.clone(), result_refs::kdl_value(value))));
    expand::apply_sweeps_and_placeholders(decls, &vars, problems)
}

/// Load a recipe with the values of upstream results its settings read
/// (`{screen.X.winner_server}`); placeholders without a value stay, and their
/// steps are provisional (`Decl::unresolved`).
pub fn load_with_results(
    path: &Path,
    overrides: &[String],
    results: &ResultValues,
) -> Result<Recipe, RecipeError> {
    load_from(path, overrides, results, Texts::Files)
}

/// `recipe` loaded again, with the upstream results known now, from the
/// text it was first read from (`Recipe::sources`): an edit to the recipe
/// or an include since then changes nothing.
pub fn reload_with_results(recipe: &Recipe, results: &ResultValues) -> Result<Recipe, RecipeError> {
    load_from(&recipe.path, &recipe.overrides, results, Texts::Frozen(&recipe.frozen_texts()))
}

/// Where a load takes the recipe files' texts from.
enum Texts<'a> {
    /// The files.
    Files,
    /// What an earlier load read.
    Frozen(&'a FrozenTexts),
}

fn load_from(
    path: &Path,
    overrides: &[String],
    results: &ResultValues,
    texts: Texts<'_>,
) -> Result<Recipe, RecipeError> {
    let mut problems = Problems::default();
    let mut loaded = match texts {
        Texts::Files => loader::load_files(path, &mut problems),
        Texts::Frozen(frozen) => loader::load_files_from(path, Some(frozen), &mut problems),
    };
    let params = resolve_params(&loaded.params, overrides, &mut problems);

    // With every result placeholder unfilled: which steps read which results.
    let mut outline_problems = Problems::default();
    let outline_sink = if results.is_empty() { &mut problems } else { &mut outline_problems };
    // Without results to fill in, the outline is the recipe: no second expansion (nor a copy to expand).
    let raw_decls = std::mem::take(&mut loaded.decls);
    let (outline_input, second) =
        if results.is_empty() { (raw_decls, None) } else { (raw_decls.clone(), Some(raw_decls)) };
    let outline = expand_with(outline_input, &params, &ResultValues::new(), outline_sink);
    result_refs::check(&outline, &mut problems);
    let result_inputs = result_refs::placeholders_by_step(&outline);
    let decls = match second {
        None => outline,
        Some(raw_decls) => expand_with(raw_decls, &params, results, &mut problems),
    };
    let mut unresolved = result_refs::placeholders_by_step(&decls);
    let mut drafts: Vec<Draft> = decls.iter().map(|raw| convert::convert(raw, &mut problems)).collect();
    drop(decls); // the drafts hold what the rest needs; its memory serves them
    let (workload_drafts, step_drafts): (Vec<&Draft>, Vec<&Draft>) =
        drafts.iter().partition(|d| d.kind == Kind::Workload);
    check_unique(&step_drafts, &mut problems);
    check_unique(&workload_drafts, &mut problems);
    check_references(&step_drafts, &workload_drafts, &mut problems);
    for draft in &drafts {
        check_properties(draft, &mut problems);
    }
    let workload_settings: BTreeMap<String, settings::Settings> = drafts
        .iter()
        .filter(|d| d.kind == Kind::Workload)
        .map(|d| (d.name.clone(), d.settings.clone()))
        .collect();
    for draft in &mut drafts {
        match draft.kind {
            Kind::Cell => take_in_workload(draft, &workload_settings),
            Kind::Server => default_engine(draft, &mut problems),
            Kind::Search => decls::search::take_in_workload(draft, &workload_settings),
            _ => {}
        }
    }
    // Sized once: a declaration is large, and regrowing the list copies them all.
    let mut steps = Vec::with_capacity(drafts.len());
    let mut workloads = Vec::new();
    for draft in drafts {
        let spec = Spec::build(&draft, &mut problems);
        let mut decl = Decl::from_draft(draft, spec);
        decl.result_inputs = result_inputs.get(&decl.name).cloned().unwrap_or_default();
        decl.unresolved = unresolved.remove(&decl.name).unwrap_or_default();
        if decl.kind == Kind::Workload { workloads.push(decl) } else { steps.push(decl) }
    }

    gate_bounds::check(&steps, &mut problems);
    family_error::check(&steps, &mut problems);
    arm_checks::check(&steps, &mut problems);
    let recipe_name = path.display().to_string();
    let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf()).display().to_string();
    let campaign = Campaign {
        name: loaded.campaign.name.clone().unwrap_or_else(|| {
            path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        }),
        description: loaded.campaign.description.clone(),
        seed: loaded.campaign.seed.and_then(|s| u64::try_from(s).ok()).unwrap_or(0),
    };
    let params = params.iter().map(|(k, v)| (k.clone(), kdl_to_json(v))).collect();
    problems.into_result(
        &recipe_name,
        Recipe {
            path: path.to_path_buf(),
            key,
            campaign,
            params,
            overrides: overrides.to_vec(),
            steps,
            workloads,
            executor: loaded.executors.last().cloned(),
            files: loaded.files,
            sources: loaded.sources,
        },
    )
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
