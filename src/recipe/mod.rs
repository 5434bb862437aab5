//! Recipes: KDL files → a validated, fully resolved list of declarations.
//!
//! The pipeline, one file each: `loader` (KDL, includes, params) → `expand`
//! (extends, sweeps, placeholders) → `convert` (schema, types) → checks of
//! names and references here. Every problem carries its file and span.

mod convert;
mod decl;
pub mod decls;
mod expand;
mod expression;
mod kind;
mod loader;
pub mod placeholders;
mod problem;
mod raw;
mod schema;
pub mod words;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kdl::KdlValue;
use miette::{NamedSource, SourceSpan};

pub use convert::parse_duration;
pub use decl::{Decl, Setting};
pub use decls::Spec;
pub use expression::Expression;
pub use kind::Kind;
pub use problem::{Problem, RecipeError, SourceText, did_you_mean};

use decl::Draft;
use problem::Problems;

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
}

/// Load and check a recipe. `overrides` are `name=value` texts from `--set`.
pub fn load(path: &Path, overrides: &[String]) -> Result<Recipe, RecipeError> {
    let mut problems = Problems::default();
    let loaded = loader::load_files(path, &mut problems);
    let params = resolve_params(&loaded.params, overrides, &mut problems);

    let decls = expand::apply_extends(loaded.decls, &mut problems);
    let decls = expand::apply_sweeps_and_placeholders(decls, &params, &mut problems);
    let mut drafts: Vec<Draft> = decls.iter().map(|raw| convert::convert(raw, &mut problems)).collect();
    let (workload_drafts, step_drafts): (Vec<&Draft>, Vec<&Draft>) =
        drafts.iter().partition(|d| d.kind == Kind::Workload);
    check_unique(&step_drafts, &mut problems);
    check_unique(&workload_drafts, &mut problems);
    check_references(&step_drafts, &workload_drafts, &mut problems);
    for draft in &drafts {
        check_properties(draft, &mut problems);
    }
    let workload_settings: BTreeMap<String, decl::Settings> = drafts
        .iter()
        .filter(|d| d.kind == Kind::Workload)
        .map(|d| (d.name.clone(), d.settings.clone()))
        .collect();
    for draft in &mut drafts {
        match draft.kind {
            Kind::Cell => take_in_workload(draft, &workload_settings),
            Kind::Server => default_engine(draft, &mut problems),
            _ => {}
        }
    }
    let mut steps = Vec::new();
    let mut workloads = Vec::new();
    for draft in drafts {
        let spec = Spec::build(&draft, &mut problems);
        let decl = Decl::from_draft(draft, spec);
        if decl.kind == Kind::Workload { workloads.push(decl) } else { steps.push(decl) }
    }

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
        },
    )
}

fn resolve_params(
    decls: &[loader::ParamDecl],
    overrides: &[String],
    problems: &mut Problems,
) -> BTreeMap<String, KdlValue> {
    let mut values: BTreeMap<String, KdlValue> =
        decls.iter().map(|p| (p.name.value.clone(), p.default.value.clone())).collect();
    for text in overrides {
        // Each override gets its own tiny "file" so its errors render with a span too.
        let source: SourceText = Arc::new(NamedSource::new("--set", text.clone()));
        let Some((name, value)) = text.split_once('=') else {
            problems.push(
                Problem::new(&source, SourceSpan::from(0..text.len()), "--set takes name=value")
                    .label("no `=`"),
            );
            continue;
        };
        let Some(declared) = decls.iter().find(|p| p.name.value == name) else {
            problems.push(
                Problem::new(
                    &source,
                    SourceSpan::from(0..name.len()),
                    format!("the recipe has no param `{name}`"),
                )
                .label("unknown param")
                .maybe_help(did_you_mean(name, decls.iter().map(|p| p.name.value.as_str()))),
            );
            continue;
        };
        // The override takes the declared default's type.
        let parsed = match &declared.default.value {
            KdlValue::Integer(_) => value.parse::<i128>().ok().map(KdlValue::Integer),
            KdlValue::Float(_) => value.parse::<f64>().ok().map(KdlValue::Float),
            KdlValue::Bool(_) => match value {
                "true" | "#true" => Some(KdlValue::Bool(true)),
                "false" | "#false" => Some(KdlValue::Bool(false)),
                _ => None,
            },
            _ => Some(KdlValue::String(value.to_string())),
        };
        match parsed {
            Some(v) => {
                values.insert(name.to_string(), v);
            }
            None => problems.push(
                Problem::new(
                    &source,
                    SourceSpan::from(name.len() + 1..text.len()),
                    format!(
                        "param `{name}` is {}, not \"{value}\"",
                        raw::describe_value(&declared.default.value)
                    )
                    .replace("is the", "takes a value like the"),
                )
                .label("wrong type"),
            ),
        }
    }
    values
}

fn check_unique(decls: &[&Draft], problems: &mut Problems) {
    let mut seen: BTreeMap<&str, &Draft> = BTreeMap::new();
    for decl in decls {
        if let Some(first) = seen.get(decl.name.as_str()) {
            let first_at = Problem::new(&first.source, first.name_span, "").location();
            problems.push(
                Problem::new(&decl.source, decl.name_span, format!("duplicate name `{}`", decl.name))
                    .label("declared again here")
                    .help(format!(
                        "{} `{}` is first declared at {first_at}; names must be unique",
                        first.kind, first.name
                    )),
            );
        } else {
            seen.insert(&decl.name, decl);
        }
    }
}

fn check_references(steps: &[&Draft], workloads: &[&Draft], problems: &mut Problems) {
    // Names by kind, looked up once per reference: scanning the steps for
    // each one made loading quadratic in the number of steps.
    let declared: HashSet<(Kind, &str)> =
        steps.iter().chain(workloads).map(|d| (d.kind, d.name.as_str())).collect();
    let step_names: HashSet<&str> = steps.iter().map(|d| d.name.as_str()).collect();
    for step in steps {
        for (key, kind) in [("server", Kind::Server), ("workload", Kind::Workload)] {
            let Some(target) = step.settings.str(key) else { continue };
            if !declared.contains(&(kind, target)) {
                let pool: &[&Draft] = if kind == Kind::Workload { workloads } else { steps };
                let known = pool.iter().filter(|d| d.kind == kind).map(|d| d.name.as_str());
                problems.push(
                    step.problem_at(
                        key,
                        format!("{} `{}` refers to unknown {kind} `{target}`", step.kind, step.name),
                    )
                    .label("unknown reference")
                    .maybe_help(did_you_mean(target, known)),
                );
            }
        }
        for target in step.settings.strings("headline") {
            if !declared.contains(&(Kind::Cell, target.as_str())) {
                problems.push(
                    step.problem_at(
                        "headline",
                        format!("decision `{}` lists unknown cell `{target}` as a headline", step.name),
                    )
                    .label("unknown reference")
                    .maybe_help(did_you_mean(
                        &target,
                        steps.iter().filter(|d| d.kind == Kind::Cell).map(|d| d.name.as_str()),
                    )),
                );
            }
        }
        for target in step.settings.strings("after") {
            if !step_names.contains(target.as_str()) {
                problems.push(
                    step.problem_at(
                        "after",
                        format!("{} `{}` runs after unknown step `{target}`", step.kind, step.name),
                    )
                    .label("unknown reference")
                    .maybe_help(did_you_mean(&target, steps.iter().map(|d| d.name.as_str()))),
                );
            }
        }
    }
}

/// A cell takes every workload setting it does not set itself; the
/// workload's name is only a reference, its content is what counts.
fn take_in_workload(cell: &mut Draft, workloads: &BTreeMap<String, decl::Settings>) {
    let Some(workload) = cell.settings.str("workload").and_then(|name| workloads.get(name)) else { return };
    for (key, setting) in &workload.0 {
        if key != "description" && !cell.settings.contains(key) {
            cell.settings.0.insert(key.clone(), setting.clone());
            cell.from_workload.push(key.clone());
        }
    }
    if let Some(reference) = cell.settings.0.get_mut("workload") {
        reference.hashed = false;
    }
}

/// A server without `engine` is external with a `url`, launched with a
/// `command`, and simulated otherwise; the settled word is hashed.
fn default_engine(server: &mut Draft, problems: &mut Problems) {
    let s = &server.settings;
    let engine = match s.str("engine").and_then(words::EngineKind::from_word) {
        Some(engine) => engine,
        None if s.contains("url") => words::EngineKind::External,
        None if s.contains("command") => words::EngineKind::Command,
        None => words::EngineKind::Sim,
    };
    let needs = match engine {
        words::EngineKind::Command => Some("command"),
        words::EngineKind::External => Some("url"),
        words::EngineKind::Sim => None,
    };
    if let Some(needed) = needs
        && !s.contains(needed)
    {
        problems.push(
            server
                .problem_at(
                    "engine",
                    format!("server `{}` with engine \"{engine}\" needs `{needed}`", server.name),
                )
                .label("incomplete server"),
        );
    }
    server.settings.0.insert(
        "engine".into(),
        Setting {
            value: serde_json::Value::String(engine.as_str().to_string()),
            span: server.name_span,
            source: server.source.clone(),
            hashed: true,
        },
    );
}

pub fn kdl_to_json(value: &KdlValue) -> serde_json::Value {
    match value {
        KdlValue::String(s) => s.clone().into(),
        KdlValue::Integer(i) => i64::try_from(*i).map(Into::into).unwrap_or_else(|_| i.to_string().into()),
        KdlValue::Float(x) => {
            serde_json::Number::from_f64(*x).map(serde_json::Value::Number).unwrap_or(serde_json::Value::Null)
        }
        KdlValue::Bool(b) => (*b).into(),
        KdlValue::Null => serde_json::Value::Null,
    }
}

/// key=value settings whose keys and values have meaning of their own.
fn check_properties(step: &Draft, problems: &mut Problems) {
    let known: &[(&str, &[(&str, PropShape)])] = &[
        (
            "ready",
            &[
                ("http", PropShape::Text),
                ("status", PropShape::Integer),
                ("timeout", PropShape::Duration),
                ("log", PropShape::Text),
            ],
        ),
        (
            "slo",
            &[("ttft", PropShape::Duration), ("tpot", PropShape::Duration), ("e2e", PropShape::Duration)],
        ),
        ("warmup", &[("requests", PropShape::Integer), ("max-tokens", PropShape::Integer)]),
        (
            "rule",
            &[
                ("label", PropShape::Text),
                ("when", PropShape::Text),
                ("winner", PropShape::Text),
                ("single-card-selection", PropShape::Text),
                ("alternate-runtime-result", PropShape::Text),
                ("promotion-boundary", PropShape::Text),
                ("reason", PropShape::Text),
            ],
        ),
    ];
    for (setting, keys) in known {
        let Some(value) = step.settings.get(setting) else { continue };
        let objects: Vec<&serde_json::Map<String, serde_json::Value>> = match value {
            serde_json::Value::Object(map) => vec![map],
            serde_json::Value::Array(items) => items.iter().filter_map(|v| v.as_object()).collect(),
            _ => Vec::new(),
        };
        for map in objects {
            for (key, v) in map {
                let Some((_, shape)) = keys.iter().find(|(k, _)| k == key) else {
                    problems.push(
                        step.problem_at(setting, format!("`{setting}` has no property `{key}`"))
                            .label("unknown property")
                            .maybe_help(did_you_mean(key, keys.iter().map(|(k, _)| *k)).or_else(|| {
                                Some(format!(
                                    "`{setting}` takes: {}",
                                    keys.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
                                ))
                            })),
                    );
                    continue;
                };
                let problem = match shape {
                    PropShape::Text => (!v.is_string()).then(|| format!("`{setting} {key}=` takes a string")),
                    PropShape::Integer => {
                        (!v.is_u64()).then(|| format!("`{setting} {key}=` takes an integer"))
                    }
                    PropShape::Duration => match v.as_str().map(parse_duration) {
                        Some(Ok(_)) => None,
                        Some(Err(err)) => Some(format!("`{setting} {key}=`: {err}")),
                        None => Some(format!("`{setting} {key}=` takes a duration such as \"90s\"")),
                    },
                };
                if let Some(message) = problem {
                    problems.push(step.problem_at(setting, message).label("invalid value"));
                }
            }
        }
    }
}

#[derive(Clone, Copy)]
enum PropShape {
    Text,
    Integer,
    Duration,
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
