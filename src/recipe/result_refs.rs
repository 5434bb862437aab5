//! Upstream results as settings: `server="{screen.draft-depth.winner_server}"`,
//! `rate "{search.capacity.max_rate}"`, `extends="{screen.X.winner_server}"`.
//!
//! A recipe loads first with every such placeholder unfilled: that pass says
//! which steps read which results, and checks each placeholder (a kind that
//! offers results, a field it produces, a step that exists). Once the plan
//! finds the results in the store it loads the recipe again with their values
//! (`load_with_results`), so a settled step holds — and its fingerprint hashes —
//! the resolved value, exactly as if it had been written by hand.

use std::collections::BTreeMap;

use kdl::KdlValue;
use serde_json::Value;

use super::problem::{Problem, Problems, did_you_mean};
use super::raw::{RawDecl, RawField};
use crate::placeholders::result_names;
use crate::step_kind::Kind;

/// Values of result placeholders, by placeholder name (`screen.d.winner_server`).
pub type ResultValues = BTreeMap<String, Value>;

/// The fields each kind of step offers to settings, by kind word.
pub const OFFERED: &[(&str, &[&str])] = &[
    // `winner_server` is the server of the winning cell; `winner_value` its metric.
    ("screen", &["winner", "winner_server", "winner_value", "meaningful"]),
    ("search", &["max_rate", "max_concurrency", "max_value"]),
];

/// `kind.step.field`, split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultRef<'a> {
    pub kind: &'a str,
    pub step: &'a str,
    pub field: &'a str,
}

impl ResultRef<'_> {
    /// `kind.step`, the way expressions and messages name the step.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.kind, self.step)
    }
}

/// Split a placeholder name; None unless it has three parts.
pub fn parse(name: &str) -> Option<ResultRef<'_>> {
    let mut parts = name.splitn(3, '.');
    let (kind, step, field) = (parts.next()?, parts.next()?, parts.next()?);
    (!kind.is_empty() && !step.is_empty() && !field.is_empty()).then_some(ResultRef { kind, step, field })
}

/// The fields `kind` offers (empty for a kind whose results are not settings).
pub fn offered(kind: &str) -> &'static [&'static str] {
    OFFERED.iter().find(|(k, _)| *k == kind).map(|(_, fields)| *fields).unwrap_or(&[])
}

/// A string that is one result placeholder and nothing else (it may stand
/// for a number or a name until it is filled).
pub fn is_whole_placeholder(text: &str) -> bool {
    text.strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .is_some_and(|inner| !inner.contains(['{', '}']) && parse(inner).is_some())
}

/// A result's value as the KDL value loading substitutes.
pub fn kdl_value(value: &Value) -> KdlValue {
    match value {
        Value::String(s) => KdlValue::String(s.clone()),
        Value::Bool(b) => KdlValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => KdlValue::Integer(i.into()),
            None => KdlValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::Null => KdlValue::Null,
        other => KdlValue::String(other.to_string()),
    }
}

/// `extends="{screen.X.winner_server}"` whose winner is known: the winner
/// becomes the base before `extends` is resolved. Unknown ones stay, and
/// `apply_extends` keeps such a declaration without a base for now.
pub fn fill_extends(decls: &mut [RawDecl], values: &ResultValues) {
    for decl in decls {
        for field in decl.fields.iter_mut().filter(|f| f.name.value == "extends") {
            for arg in &mut field.args {
                let Some(text) = arg.value.as_string() else { continue };
                let name = text.trim_start_matches('{').trim_end_matches('}');
                if is_whole_placeholder(text)
                    && let Some(Value::String(base)) = values.get(name)
                {
                    arg.value = KdlValue::String(base.clone());
                }
            }
        }
    }
}

/// One result placeholder in a declaration, and the string that holds it.
struct Site<'a> {
    name: String,
    field: &'a RawField,
    span: miette::SourceSpan,
}

fn sites(decl: &RawDecl) -> Vec<Site<'_>> {
    fn walk<'a>(field: &'a RawField, out: &mut Vec<Site<'a>>) {
        let values = field.args.iter().chain(field.props.iter().map(|(_, v)| v));
        for value in values {
            if let Some(text) = value.value.as_string() {
                out.extend(result_names(text).into_iter().map(|name| Site {
                    name: name.to_string(),
                    field,
                    span: value.span,
                }));
            }
        }
        for child in &field.children {
            walk(child, out);
        }
    }
    let mut out = Vec::new();
    for field in &decl.fields {
        walk(field, &mut out);
    }
    out
}

/// The result placeholders each step's settings hold, by step name, after
/// sweeps (a cell holds those of its workload too).
pub fn placeholders_by_step(decls: &[RawDecl]) -> BTreeMap<String, Vec<String>> {
    let own = |decl: &RawDecl| -> Vec<String> { sites(decl).into_iter().map(|s| s.name).collect() };
    let workloads: BTreeMap<&str, Vec<String>> =
        decls.iter().filter(|d| d.kind == Kind::Workload).map(|d| (d.name.value.as_str(), own(d))).collect();
    let mut out = BTreeMap::new();
    for decl in decls.iter().filter(|d| d.kind != Kind::Workload) {
        let mut names = own(decl);
        let workload = decl.field("workload").and_then(|f| f.args.first()).and_then(|a| a.value.as_string());
        names.extend(workload.and_then(|w| workloads.get(w)).into_iter().flatten().cloned());
        names.sort();
        names.dedup();
        if !names.is_empty() {
            out.insert(decl.name.value.clone(), names);
        }
    }
    out
}

/// Check every result placeholder: a kind that offers results, a field it
/// produces, a step that exists, read by a step that takes settings.
pub fn check(decls: &[RawDecl], problems: &mut Problems) {
    for decl in decls {
        for site in sites(decl) {
            if let Some((message, help)) = problem_with(decl, &site.name, decls) {
                problems.push(
                    Problem::new(&site.field.source, site.span, message)
                        .label("this placeholder")
                        .maybe_help(help),
                );
            }
        }
    }
}

fn problem_with(reader: &RawDecl, name: &str, decls: &[RawDecl]) -> Option<(String, Option<String>)> {
    let what = format!("{} `{}`", reader.kind, reader.name.value);
    if matches!(reader.kind, Kind::Gate | Kind::Screen | Kind::Decision) {
        return Some((
            format!("{what} uses `{{{name}}}` as a setting"),
            Some(format!("{}s read results in their expressions: write {name} there", reader.kind)),
        ));
    }
    let Some(reference) = parse(name) else {
        return Some((
            format!("`{{{name}}}` is not a result placeholder"),
            Some(
                "a result placeholder names kind.step.field, e.g. {screen.draft-depth.winner_server}".into(),
            ),
        ));
    };
    let fields = offered(reference.kind);
    if fields.is_empty() {
        let kinds: Vec<&str> = OFFERED.iter().map(|(k, _)| *k).collect();
        return Some((
            format!("`{{{name}}}`: {} results cannot be settings", reference.kind),
            Some(format!("settings take the results of: {}", kinds.join(", "))),
        ));
    }
    if !fields.contains(&reference.field) {
        let hint = did_you_mean(reference.field, fields.iter().copied())
            .unwrap_or_else(|| format!("a {} offers: {}", reference.kind, fields.join(", ")));
        return Some((
            format!("`{{{name}}}`: a {} result has no field `{}`", reference.kind, reference.field),
            Some(hint),
        ));
    }
    let same_kind = decls.iter().filter(|d| d.kind.as_str() == reference.kind);
    if !same_kind.clone().any(|d| d.name.value == reference.step) {
        return Some((
            format!("{what} reads `{{{name}}}`, but there is no {} `{}`", reference.kind, reference.step),
            did_you_mean(reference.step, same_kind.map(|d| d.name.value.as_str())),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kind_step_field() {
        let r = parse("screen.draft-depth.winner_server").unwrap();
        assert_eq!((r.kind, r.step, r.field), ("screen", "draft-depth", "winner_server"));
        assert_eq!(r.qualified(), "screen.draft-depth");
        assert_eq!(parse("screen.x"), None);
        assert!(is_whole_placeholder("{search.c.max_rate}"));
        assert!(!is_whole_placeholder("x{search.c.max_rate}"));
        assert!(!is_whole_placeholder("{port}"));
    }

    #[test]
    fn numbers_keep_their_type() {
        assert_eq!(kdl_value(&serde_json::json!(12)), KdlValue::Integer(12));
        assert_eq!(kdl_value(&serde_json::json!(2.5)), KdlValue::Float(2.5));
        assert_eq!(kdl_value(&serde_json::json!("k12")), KdlValue::String("k12".into()));
    }
}
