//! Checks across declarations once each is converted: unique names,
//! references that resolve, and key=value settings whose keys mean something.

use std::collections::{HashMap, HashSet};

use super::decls::{common, decision, load, server};
use super::problem::{Problem, Problems, did_you_mean};
use super::schema::parse_duration;
use super::settings::Draft;
use crate::step_kind::Kind;

pub(super) fn check_unique(decls: &[&Draft], problems: &mut Problems) {
    // Hashed: a tree of 100,000 names costs a cache miss per level.
    let mut seen: HashMap<&str, &Draft> = HashMap::with_capacity(decls.len());
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

pub(super) fn check_references(steps: &[&Draft], workloads: &[&Draft], problems: &mut Problems) {
    // Names by kind, looked up once per reference: scanning the steps for
    // each one made loading quadratic in the number of steps.
    let declared: HashSet<(Kind, &str)> =
        steps.iter().chain(workloads).map(|d| (d.kind, d.name.as_str())).collect();
    let step_names: HashSet<&str> = steps.iter().map(|d| d.name.as_str()).collect();
    for step in steps {
        for (key, kind) in [("server", Kind::Server), ("workload", Kind::Workload)] {
            let Some(target) = step.settings.str(key) else { continue };
            // `server="{screen.X.winner_server}"`: checked once the winner is known.
            if !declared.contains(&(kind, target)) && !super::result_refs::is_whole_placeholder(target) {
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
        for target in step.settings.strings(decision::key::headline) {
            if !declared.contains(&(Kind::Cell, target.as_str())) {
                problems.push(
                    step.problem_at(
                        decision::key::headline,
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
        for target in step.settings.strings(common::after) {
            if !step_names.contains(target.as_str()) {
                problems.push(
                    step.problem_at(
                        common::after,
                        format!("{} `{}` runs after unknown step `{target}`", step.kind, step.name),
                    )
                    .label("unknown reference")
                    .maybe_help(did_you_mean(&target, steps.iter().map(|d| d.name.as_str()))),
                );
            }
        }
    }
}

/// key=value settings whose keys and values have meaning of their own.
pub(super) fn check_properties(step: &Draft, problems: &mut Problems) {
    let known: &[(&str, &[(&str, PropShape)])] = &[
        (
            server::key::ready,
            &[
                ("http", PropShape::Text),
                ("status", PropShape::Integer),
                ("timeout", PropShape::Duration),
                ("log", PropShape::Text),
            ],
        ),
        (
            load::key::slo,
            &[
                ("ttft", PropShape::Duration),
                ("tpot", PropShape::Duration),
                ("e2e", PropShape::Duration),
                ("from", PropShape::Text),
            ],
        ),
        (
            load::key::stage,
            &[
                ("rate", PropShape::Number),
                ("concurrency", PropShape::Integer),
                ("duration", PropShape::Duration),
                ("arrival", PropShape::Text),
            ],
        ),
        (server::key::warmup, &[("requests", PropShape::Integer), ("max-tokens", PropShape::Integer)]),
        (
            decision::key::rule,
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
                    PropShape::Number => {
                        (!v.is_number()).then(|| format!("`{setting} {key}=` takes a number"))
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
    Number,
    Duration,
}
