//! Which steps each step reads or waits for: servers, `after`, and the
//! references inside gate, screen and decision expressions.

use std::collections::BTreeSet;

use anvil_expr::Reference;

use super::step_index::StepIndex;
use crate::recipe::{Decl, Expression, Kind, Problem, Recipe, Spec, did_you_mean};

/// Steps matched by a reference (`cell.sglang-d*`); `param.x` reads no step.
pub fn resolve_reference(
    reference: &Reference,
    recipe: &Recipe,
    index: &StepIndex<'_>,
    reader: &Decl,
    expression: &Expression,
    problems: &mut Vec<Problem>,
) -> Vec<usize> {
    if reference.kind == "param" {
        if !recipe.params.contains_key(&reference.name) {
            problems.push(expression.problem(format!(
                "{} `{}` reads unknown param `{}`",
                reader.kind, reader.name, reference.name
            )));
        }
        return Vec::new();
    }
    let Some(kind) = Kind::from_word(&reference.kind).filter(|k| k.is_step()) else {
        problems.push(
            expression
                .problem(format!(
                    "{} `{}` reads `{}`: `{}` is not a kind of step",
                    reader.kind, reader.name, reference, reference.kind
                ))
                .maybe_help(did_you_mean(
                    &reference.kind,
                    ["server", "cell", "check", "gate", "task", "screen", "decision", "search", "param"],
                )),
        );
        return Vec::new();
    };
    let matched = index.matching(kind, reference);
    if matched.is_empty() {
        let known = recipe.steps.iter().filter(|s| s.kind == kind).map(|s| s.name.as_str());
        problems.push(
            expression
                .problem(format!(
                    "{} `{}` reads `{}`, but there is no {kind} `{}`",
                    reader.kind, reader.name, reference, reference.name
                ))
                .label("unknown reference")
                .maybe_help(did_you_mean(&reference.name, known)),
        );
    }
    for &i in &matched {
        if let Spec::Search(search) = &recipe.steps[i].spec
            && let Some(problem) = search.check_read(reference)
        {
            problems.push(
                expression
                    .problem(format!("{} `{}` reads `{reference}`: {problem}", reader.kind, reader.name)),
            );
        }
    }
    matched
}

/// The steps each step waits for, as indices into `recipe.steps`.
pub fn dependencies(recipe: &Recipe, problems: &mut Vec<Problem>) -> Vec<Vec<usize>> {
    let index = StepIndex::new(recipe);
    let by_name: std::collections::HashMap<&str, usize> =
        recipe.steps.iter().enumerate().map(|(i, s)| (s.name.as_str(), i)).collect();
    let index_of = |name: &str| by_name.get(name).copied();
    let non_finally: Vec<usize> =
        (0..recipe.steps.len()).filter(|&i| recipe.steps[i].kind != Kind::Finally).collect();
    recipe
        .steps
        .iter()
        .map(|step| {
            let mut deps = BTreeSet::new();
            if let Some(server) = step.spec.server().and_then(index_of) {
                deps.insert(server);
            }
            deps.extend(step.after.iter().filter_map(|n| index_of(n)));
            // `{screen.X.winner_server}` in a setting: the screen comes first.
            deps.extend(result_input_steps(step).filter_map(index_of));
            for expression in step.expressions() {
                for reference in expression.parsed.references() {
                    deps.extend(resolve_reference(&reference, recipe, &index, step, expression, problems));
                }
            }
            if let Spec::Decision(decision) = &step.spec {
                // A decision weighs every verdict of the campaign and its headline cells.
                deps.extend(
                    recipe
                        .steps
                        .iter()
                        .enumerate()
                        .filter(|(_, s)| matches!(s.kind, Kind::Gate | Kind::Screen | Kind::Check))
                        .map(|(i, _)| i),
                );
                deps.extend(decision.headline.iter().filter_map(|n| index_of(n)));
            }
            if step.kind == Kind::Finally {
                // A finally step comes after everything else, whatever happened to it.
                deps.extend(non_finally.iter().copied());
            }
            deps.into_iter().collect()
        })
        .collect()
}

/// The steps whose results a step's settings read (`{screen.X.field}` → `X`).
pub fn result_input_steps(step: &Decl) -> impl Iterator<Item = &str> {
    step.result_inputs.iter().filter_map(|name| crate::recipe::result_refs::parse(name)).map(|r| r.step)
}
