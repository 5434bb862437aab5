//! Turns raw declarations into concrete ones: `extends` merges a base into
//! its variants, `sweep` expands one declaration into several, and
//! `{placeholders}` take the values of parameters and sweep variables.

use std::collections::BTreeMap;

use kdl::KdlValue;

use super::problem::{Problem, Problems, did_you_mean};
use super::raw::{RawDecl, RawField, Spanned};
use super::schema;
use crate::placeholders::{PlaceholderError, RUNTIME_PLACEHOLDERS, fill_at_load};

/// Resolve `extends` chains. Abstract declarations are kept for lookup but
/// dropped from the result.
pub fn apply_extends(decls: Vec<RawDecl>, problems: &mut Problems) -> Vec<RawDecl> {
    if !decls.iter().any(|d| d.field("extends").is_some() || is_abstract(d)) {
        return decls; // nothing to resolve: the declarations themselves, not copies of them
    }
    let by_name: BTreeMap<(crate::step_kind::Kind, String), usize> =
        decls.iter().enumerate().map(|(i, d)| ((d.kind, d.name.value.clone()), i)).collect();
    let mut resolved = Vec::new();
    for decl in &decls {
        if is_abstract(decl) {
            continue;
        }
        let mut chain = vec![decl.name.value.clone()];
        match merged(decl, &decls, &by_name, &mut chain, problems) {
            Some(d) => resolved.push(d),
            None => continue,
        }
    }
    resolved
}

fn is_abstract(decl: &RawDecl) -> bool {
    decl.field("abstract")
        .is_some_and(|f| matches!(f.args.first().map(|a| &a.value), Some(KdlValue::Bool(true))))
}

fn merged(
    decl: &RawDecl,
    all: &[RawDecl],
    by_name: &BTreeMap<(crate::step_kind::Kind, String), usize>,
    chain: &mut Vec<String>,
    problems: &mut Problems,
) -> Option<RawDecl> {
    let Some(extends) = decl.field("extends") else { return Some(decl.clone()) };
    let Some(base_name) = extends.args.first().and_then(|a| a.value.as_string().map(str::to_string)) else {
        problems.push(Problem::new(
            &decl.source,
            extends.span,
            "`extends` takes the name of another declaration of the same kind",
        ));
        return None;
    };
    if super::result_refs::is_whole_placeholder(&base_name) {
        // Its base is an upstream result not known yet: kept without one
        // (the plan holds it back until the result exists).
        return Some(decl.clone());
    }
    let Some(&base_index) = by_name.get(&(decl.kind, base_name.clone())) else {
        let known = all.iter().filter(|d| d.kind == decl.kind).map(|d| d.name.value.as_str());
        problems.push(
            Problem::new(
                &decl.source,
                extends.args[0].span,
                format!("`{base_name}` is not a {} of this recipe", decl.kind),
            )
            .label("unknown base")
            .maybe_help(did_you_mean(&base_name, known)),
        );
        return None;
    };
    if chain.contains(&base_name) {
        chain.push(base_name);
        problems.push(
            Problem::new(&decl.source, extends.span, format!("extends cycle: {}", chain.join(" → ")))
                .label("cycle"),
        );
        return None;
    }
    chain.push(base_name);
    let base = merged(&all[base_index], all, by_name, chain, problems)?;
    let mut fields: Vec<RawField> = base
        .fields
        .into_iter()
        // A base still waiting for its own base passes the wait on.
        .filter(|f| !schema::STRUCTURAL.contains(&f.name.value.as_str()) || waits_for_a_result(f))
        .filter(|f| {
            // A variant replaces what it sets again, unless the field adds up.
            let accumulates = super::decls::field_of(decl.kind, &f.name.value).is_some_and(|s| s.accumulates);
            accumulates || decl.field(&f.name.value).is_none() || waits_for_a_result(f)
        })
        .collect();
    fields.extend(decl.fields.iter().filter(|f| f.name.value != "extends").cloned());
    Some(RawDecl { fields, ..decl.clone() })
}

/// `extends="{screen.X.winner_server}"`, not filled yet.
fn waits_for_a_result(field: &RawField) -> bool {
    field.name.value == "extends"
        && field
            .args
            .first()
            .and_then(|a| a.value.as_string())
            .is_some_and(super::result_refs::is_whole_placeholder)
}

/// One sweep variable and the values it takes.
struct Sweep {
    var: String,
    values: Vec<Spanned<KdlValue>>,
}

/// Expand every `sweep` into concrete declarations and substitute placeholders.
pub fn apply_sweeps_and_placeholders(
    decls: Vec<RawDecl>,
    params: &BTreeMap<String, KdlValue>,
    problems: &mut Problems,
) -> Vec<RawDecl> {
    let mut out = Vec::new();
    for decl in decls {
        let Some(sweeps) = read_sweeps(&decl, problems) else { continue };
        for binding in grid(&sweeps) {
            let mut vars = params.clone();
            for (var, value) in &binding {
                vars.insert(var.clone(), value.clone());
            }
            let name = instance_name(&decl, &binding, &vars, problems);
            let mut instance = decl.clone();
            instance.name.value = name;
            instance.fields.retain(|f| f.name.value != "sweep");
            for field in &mut instance.fields {
                field.map_values(&mut |value, source| {
                    if let Err(problem) = substitute(value, &vars) {
                        problems.push(Problem { source: source.clone(), ..problem });
                    }
                });
            }
            out.push(instance);
        }
    }
    out
}

fn read_sweeps(decl: &RawDecl, problems: &mut Problems) -> Option<Vec<Sweep>> {
    let mut sweeps: Vec<Sweep> = Vec::new();
    for field in decl.fields_named("sweep") {
        let Some((var, values)) = field.args.split_first() else {
            problems.push(
                Problem::new(&decl.source, field.span, "a sweep needs a variable name and values")
                    .help("write: sweep \"depth\" 4 8 12 16"),
            );
            return None;
        };
        let Some(var) = var.value.as_string() else {
            problems.push(
                Problem::new(&decl.source, var.span, "the sweep variable's name must be a string")
                    .help("write: sweep \"depth\" 4 8 12 16"),
            );
            return None;
        };
        if values.is_empty() {
            problems.push(Problem::new(&decl.source, field.span, format!("sweep `{var}` has no values")));
            return None;
        }
        if sweeps.iter().any(|s| s.var == var) {
            problems.push(Problem::new(
                &decl.source,
                field.span,
                format!("sweep variable `{var}` is declared twice"),
            ));
            return None;
        }
        sweeps.push(Sweep { var: var.to_string(), values: values.to_vec() });
    }
    Some(sweeps)
}

/// The cartesian product of all sweeps (one empty binding when there are none).
fn grid(sweeps: &[Sweep]) -> Vec<Vec<(String, KdlValue)>> {
    let mut bindings = vec![Vec::new()];
    for sweep in sweeps {
        bindings = bindings
            .into_iter()
            .flat_map(|binding: Vec<(String, KdlValue)>| {
                sweep.values.iter().map(move |v| {
                    let mut b = binding.clone();
                    b.push((sweep.var.clone(), v.value.clone()));
                    b
                })
            })
            .collect();
    }
    bindings
}

/// `sglang-d{depth}` with depth=8 → `sglang-d8`; without a template the
/// variables are appended: `sglang` → `sglang-depth8`.
fn instance_name(
    decl: &RawDecl,
    binding: &[(String, KdlValue)],
    vars: &BTreeMap<String, KdlValue>,
    problems: &mut Problems,
) -> String {
    let name = &decl.name.value;
    if name.contains('{') {
        let mut value = Spanned { value: KdlValue::String(name.clone()), span: decl.name.span };
        if let Err(problem) = substitute(&mut value, vars) {
            problems.push(Problem { source: decl.source.clone(), ..problem });
        }
        return sanitize_name(&plain_text(&value.value));
    }
    let mut out = name.clone();
    for (var, value) in binding {
        out.push('-');
        out.push_str(&sanitize_name(&format!("{var}{}", plain_text(value))));
    }
    out
}

/// Names may only hold letters, digits, `-` and `_`: `0.9` becomes `0p9`.
fn sanitize_name(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '.' => 'p',
            c if c.is_ascii_alphanumeric() || c == '-' || c == '_' => c,
            _ => '_',
        })
        .collect()
}

pub fn plain_text(value: &KdlValue) -> String {
    match value {
        KdlValue::String(s) => s.clone(),
        KdlValue::Integer(i) => i.to_string(),
        KdlValue::Float(x) => x.to_string(),
        KdlValue::Bool(b) => b.to_string(),
        KdlValue::Null => "null".to_string(),
    }
}

/// Replace `{var}` in a string. A string that is exactly one placeholder
/// takes the variable's own type, so `concurrency "{c}"` stays an integer.
/// `{{` and `}}` stand for literal braces.
fn substitute(value: &mut Spanned<KdlValue>, vars: &BTreeMap<String, KdlValue>) -> Result<(), Problem> {
    let KdlValue::String(text) = &value.value else { return Ok(()) };
    if !text.contains('{') && !text.contains('}') {
        return Ok(());
    }
    if let Some(var) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}'))
        && let Some(v) = vars.get(var)
        && !var.contains(['{', '}'])
    {
        value.value = v.clone();
        return Ok(());
    }
    let vars_text: BTreeMap<String, String> = vars.iter().map(|(k, v)| (k.clone(), plain_text(v))).collect();
    match fill_at_load(text, &vars_text) {
        Ok(filled) => {
            value.value = KdlValue::String(filled);
            Ok(())
        }
        Err(PlaceholderError::LoneClose) => Err(placeholder_problem(value, "unmatched `}`", None)),
        Err(PlaceholderError::Unclosed) => {
            Err(placeholder_problem(value, "unclosed `{`", Some("write `{{` for a literal brace".into())))
        }
        Err(PlaceholderError::Unknown(var)) => {
            let known = vars.keys().map(String::as_str).chain(RUNTIME_PLACEHOLDERS.iter().copied());
            let help = did_you_mean(&var, known).or_else(|| Some("placeholders name a `param`, a `sweep` variable, or one filled at run time (port, gpus, marker, index, …)".into()));
            Err(placeholder_problem(value, &format!("unknown placeholder `{{{var}}}`"), help))
        }
    }
}

fn placeholder_problem(value: &Spanned<KdlValue>, message: &str, help: Option<String>) -> Problem {
    // The source is filled in by the caller, which knows the file.
    let dummy = std::sync::Arc::new(miette::NamedSource::new("", String::new()));
    Problem::new(&dummy, value.span, message).label("in this string").maybe_help(help)
}
