//! `param`s and `--set`: each override takes its declared default's type,
//! and its errors point into a tiny source of its own.

use std::collections::BTreeMap;
use std::sync::Arc;

use kdl::KdlValue;
use miette::{NamedSource, SourceSpan};

use super::loader;
use super::problem::{Problem, Problems, SourceText, did_you_mean};
use super::raw;

pub(super) fn resolve_params(
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
