//! Which steps each step reads or waits for: servers, `after`, and the
//! references inside gate, screen and decision expressions.

use std::collections::BTreeSet;

use anvil_expr::Reference;
use miette::SourceSpan;

use crate::recipe::{Decl, Kind, Problem, Recipe, did_you_mean};

/// An expression a step evaluates, with where it was written.
pub struct StepExpression {
    pub setting: &'static str,
    pub text: String,
    pub parsed: anvil_expr::Expr,
}

/// Expressions of a step: gate `require`s, a screen's `over`, decision `rule when=`.
pub fn expressions_of(step: &Decl, problems: &mut Vec<Problem>) -> Vec<StepExpression> {
    let texts: Vec<(&'static str, String)> = match step.kind {
        Kind::Gate => step.strings("require").into_iter().map(|t| ("require", t)).collect(),
        Kind::Screen => screen_expression(step).map(|t| vec![("over", t)]).unwrap_or_default(),
        Kind::Decision => {
            let mut all: Vec<(&'static str, String)> =
                rules_of(step).into_iter().map(|(_, when)| ("rule", when)).collect();
            all.extend(step.str("promote-when").map(|w| ("promote-when", w.to_string())));
            all
        }
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for (setting, text) in texts {
        match anvil_expr::parse(&text) {
            Ok(parsed) => out.push(StepExpression { setting, text, parsed }),
            Err(err) => problems.push(
                Problem::new(
                    &step.source_of(setting),
                    span_in_setting(step, setting, &text, err.span),
                    format!("in {} `{}`: {}", step.kind, step.name, err.message),
                )
                .label("here")
                .maybe_help(err.help.clone()),
            ),
        }
    }
    out
}

/// A screen reads one metric over a sweep: `over "cell.k*"` + `metric "aggregate_tok_s"`.
pub fn screen_expression(step: &Decl) -> Option<String> {
    Some(format!("{}.{}", step.str("over")?, step.str("metric")?))
}

/// A decision's rules: (label, condition), in order. Rules accumulate as
/// one object per `rule` line, so they are kept as a list of objects.
pub fn rules_of(step: &Decl) -> Vec<(String, String)> {
    let list = match step.get("rule") {
        Some(serde_json::Value::Array(items)) => items.clone(),
        Some(one @ serde_json::Value::Object(_)) => vec![one.clone()],
        _ => Vec::new(),
    };
    list.iter()
        // A rule without a label only contributes its statements.
        .filter_map(|r| {
            Some((
                r.get("label").and_then(|l| l.as_str()).unwrap_or("").to_string(),
                r.get("when")?.as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Map an offset inside an expression to the recipe: find the expression's
/// text inside the setting's span (escapes aside, it is written verbatim).
fn span_in_setting(step: &Decl, setting: &str, text: &str, (offset, len): (usize, usize)) -> SourceSpan {
    let Some(s) = step.settings.get(setting) else { return step.name_span };
    let source = s.source.inner();
    let start = s.span.offset();
    let end = (start + s.span.len()).min(source.len());
    match source.get(start..end).and_then(|written| written.find(text)) {
        Some(found) => SourceSpan::from((start + found + offset, len.max(1))),
        None => s.span,
    }
}

/// Steps matched by a reference (`cell.sglang-d*`); `param.x` reads no step.
/// Steps by kind and name, so a plain reference is one lookup (only
/// wildcards scan the steps).
pub type StepIndex<'a> = std::collections::HashMap<(Kind, &'a str), usize>;

pub fn step_index(recipe: &Recipe) -> StepIndex<'_> {
    recipe.steps.iter().enumerate().map(|(i, s)| ((s.kind, s.name.as_str()), i)).collect()
}

pub fn resolve_reference(
    reference: &Reference,
    recipe: &Recipe,
    index: &StepIndex<'_>,
    reader: &Decl,
    problems: &mut Vec<Problem>,
) -> Vec<usize> {
    if reference.kind == "param" {
        if !recipe.params.contains_key(&reference.name) {
            problems.push(reader.problem_at(
                reader_setting(reader),
                format!("{} `{}` reads unknown param `{}`", reader.kind, reader.name, reference.name),
            ));
        }
        return Vec::new();
    }
    let Some(kind) = Kind::parse(&reference.kind).filter(|k| k.is_step()) else {
        problems.push(
            reader
                .problem_at(
                    reader_setting(reader),
                    format!(
                        "{} `{}` reads `{}`: `{}` is not a kind of step",
                        reader.kind, reader.name, reference, reference.kind
                    ),
                )
                .maybe_help(did_you_mean(
                    &reference.kind,
                    ["server", "cell", "check", "gate", "task", "screen", "decision", "param"],
                )),
        );
        return Vec::new();
    };
    let matched: Vec<usize> = if !reference.is_wildcard() {
        index.get(&(kind, reference.name.as_str())).copied().into_iter().collect()
    } else {
        recipe
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind == kind && reference.matches_name(&s.name))
            .map(|(i, _)| i)
            .collect()
    };
    if matched.is_empty() {
        let known = recipe.steps.iter().filter(|s| s.kind == kind).map(|s| s.name.as_str());
        problems.push(
            reader
                .problem_at(
                    reader_setting(reader),
                    format!(
                        "{} `{}` reads `{}`, but there is no {kind} `{}`",
                        reader.kind, reader.name, reference, reference.name
                    ),
                )
                .label("unknown reference")
                .maybe_help(did_you_mean(&reference.name, known)),
        );
    }
    matched
}

fn reader_setting(reader: &Decl) -> &'static str {
    match reader.kind {
        Kind::Screen => "over",
        Kind::Decision => "rule",
        _ => "require",
    }
}

/// The steps each step waits for, as indices into `recipe.steps`.
pub fn dependencies(recipe: &Recipe, problems: &mut Vec<Problem>) -> Vec<Vec<usize>> {
    let index = step_index(recipe);
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
            if let Some(server) = step.str("server").and_then(index_of) {
                deps.insert(server);
            }
            deps.extend(step.strings("after").iter().filter_map(|n| index_of(n)));
            for expression in expressions_of(step, problems) {
                for reference in expression.parsed.references() {
                    deps.extend(resolve_reference(&reference, recipe, &index, step, problems));
                }
            }
            if step.kind == Kind::Decision {
                // A decision weighs every verdict of the campaign and its headline cells.
                deps.extend(
                    recipe
                        .steps
                        .iter()
                        .enumerate()
                        .filter(|(_, s)| matches!(s.kind, Kind::Gate | Kind::Screen | Kind::Check))
                        .map(|(i, _)| i),
                );
                deps.extend(step.strings("headline").iter().filter_map(|n| index_of(n)));
            }
            if step.kind == Kind::Finally {
                // A finally step comes after everything else, whatever happened to it.
                deps.extend(non_finally.iter().copied());
            }
            deps.into_iter().collect()
        })
        .collect()
}

impl Decl {
    fn source_of(&self, setting: &str) -> crate::recipe::SourceText {
        self.settings.get(setting).map_or_else(|| self.source.clone(), |s| s.source.clone())
    }
}
