//! Checks each raw declaration against its kind's schema and turns KDL
//! values into typed JSON settings, reporting every problem it finds.

use kdl::KdlValue;
use miette::SourceSpan;
use serde_json::{Map, Number, Value};

use super::decls;
use super::problem::{Problem, Problems, did_you_mean};
use super::raw::{RawDecl, RawField, Spanned, describe_value};
use super::schema::{self, FieldSpec, Shape, parse_duration};
use super::settings::{Draft, Setting, SettingMap, Settings};

pub fn convert(raw: &RawDecl, problems: &mut Problems) -> Draft {
    let specs = decls::fields_of(raw.kind);
    let mut settings = SettingMap::default();

    for field in &raw.fields {
        let name = field.name.value.as_str();
        if schema::STRUCTURAL.contains(&name) {
            continue;
        }
        let Some(spec) = specs.iter().find(|s| s.name == name) else {
            let known = specs.iter().map(|s| s.name).chain(schema::STRUCTURAL.iter().copied());
            problems.push(
                Problem::new(
                    &field.source,
                    field.name.span,
                    format!("unknown setting `{name}` in {} `{}`", raw.kind, raw.name.value),
                )
                .label("unknown")
                .maybe_help(did_you_mean(name, known).or_else(|| {
                    Some(format!(
                        "a {} takes: {}",
                        raw.kind,
                        specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                    ))
                })),
            );

            continue;
        };
        let Some(value) = convert_field(field, spec, problems) else {
            continue;
        };
        match settings.get_mut(name) {
            Some(existing) if spec.accumulates => accumulate(&mut existing.value, value),
            Some(_) => {
                problems.push(
                    Problem::new(
                        &field.source,
                        field.span,
                        format!("`{name}` is set twice in {} `{}`", raw.kind, raw.name.value),
                    )
                    .label("second time")
                    .help("remove one of them (only settings such as args, env and reads add up)"),
                );
            }
            None => {
                settings.insert(
                    name.to_string(),
                    Setting { value, span: field.span, source: field.source.clone(), hashed: spec.hashed },
                );
            }
        }
    }
    for spec in specs.iter().filter(|s| s.required) {
        if !settings.contains_key(spec.name) {
            problems.push(
                Problem::new(
                    &raw.source,
                    raw.name.span,
                    format!(
                        "{} `{}` needs `{}` ({})",
                        raw.kind,
                        raw.name.value,
                        spec.name,
                        spec.shape.describe()
                    ),
                )
                .label("missing a required setting"),
            );
        }
    }
    // Even with problems the declaration is kept, so references to and from
    // it are still checked and the user sees every problem in one pass.
    Draft {
        kind: raw.kind,
        name: raw.name.value.clone(),
        source: raw.source.clone(),
        span: raw.span,
        name_span: raw.name.span,
        settings: Settings(settings),
        from_workload: Vec::new(),
    }
}

/// Repeated settings add up: lists concatenate, blocks merge key by key at
/// every depth (a variant's `sim { faults { … } }` keeps the base's other faults).
fn accumulate(existing: &mut Value, more: Value) {
    match (existing, more) {
        (Value::Array(a), Value::Array(b)) => a.extend(b),
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in b {
                match a.get_mut(&key) {
                    Some(slot @ Value::Object(_)) if value.is_object() => accumulate(slot, value),
                    _ => {
                        a.insert(key, value);
                    }
                }
            }
        }
        (slot, other) => *slot = other,
    }
}

/// Why a field's value was not taken: the wrong type where `span` points
/// (`found` says what was written), or a bad value of the right type.
enum Refused {
    WrongType { span: SourceSpan, found: String },
    BadValue { span: SourceSpan, message: String },
}

fn wrong_type(span: SourceSpan, found: impl Into<String>) -> Refused {
    Refused::WrongType { span, found: found.into() }
}

/// The field's value in the JSON its shape reads, or a problem saying why not.
fn convert_field(field: &RawField, spec: &FieldSpec, problems: &mut Problems) -> Option<Value> {
    let converted = match spec.shape {
        Shape::Props | Shape::Records => props_value(field, spec.shape),
        Shape::Headed => headed_value(field),
        Shape::StringsWithProps => strings_with_props_value(field),
        Shape::Block => Ok(block_field_value(field)),
        Shape::Strings | Shape::StepRefs => strings_value(field, spec.shape),
        _ => single_value(field, spec.shape),
    };
    let problem = match converted {
        Ok(value) => return Some(value),
        Err(Refused::WrongType { span, found }) => Problem::new(
            &field.source,
            span,
            format!("`{}` expects {}, found {found}", spec.name, spec.shape.describe()),
        )
        .label("wrong type"),
        Err(Refused::BadValue { span, message }) => {
            Problem::new(&field.source, span, message).label("invalid value")
        }
    };
    problems.push(problem.maybe_help(bool_hint(spec, field)));
    None
}

/// The field's `key=value` properties, added to `map`.
fn insert_props(map: &mut Map<String, Value>, field: &RawField) {
    for (key, value) in &field.props {
        map.insert(key.value.clone(), scalar(&value.value));
    }
}

/// `Props`: the properties as an object; `Records`: one record of them (repeats add records).
fn props_value(field: &RawField, shape: Shape) -> Result<Value, Refused> {
    if !field.args.is_empty() || !field.children.is_empty() {
        return Err(wrong_type(field.span, "positional values"));
    }
    let mut map = Map::new();
    insert_props(&mut map, field);
    Ok(if shape == Shape::Records { Value::Array(vec![Value::Object(map)]) } else { Value::Object(map) })
}

/// `Headed`: one value (as `value`), its properties, and its children as
/// lists by name.
fn headed_value(field: &RawField) -> Result<Value, Refused> {
    let [head] = field.args.as_slice() else {
        let found =
            if field.args.is_empty() { "no value".into() } else { format!("{} values", field.args.len()) };
        return Err(wrong_type(field.span, found));
    };
    let mut map = Map::new();
    map.insert("value".into(), scalar(&head.value));
    insert_props(&mut map, field);
    for child in &field.children {
        let list = map.entry(child.name.value.clone()).or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(items) = list {
            items.push(block_value(child));
        }
    }
    Ok(Value::Object(map))
}

/// `StringsWithProps`: one string or more (as `values`) and properties, no block.
fn strings_with_props_value(field: &RawField) -> Result<Value, Refused> {
    if field.args.is_empty() || !field.children.is_empty() {
        let found = if field.args.is_empty() { "no value" } else { "a { … } block" };
        return Err(wrong_type(field.span, found));
    }
    let mut values = Vec::new();
    for arg in &field.args {
        match &arg.value {
            KdlValue::String(s) => values.push(Value::String(s.clone())),
            other => return Err(wrong_type(arg.span, describe_value(other))),
        }
    }
    let mut map = Map::new();
    map.insert("values".into(), Value::Array(values));
    insert_props(&mut map, field);
    Ok(Value::Object(map))
}

/// `Block`: children by name, then properties, as one object.
fn block_field_value(field: &RawField) -> Value {
    let mut map = Map::new();
    for child in &field.children {
        map.insert(child.name.value.clone(), block_value(child));
    }
    insert_props(&mut map, field);
    Value::Object(map)
}

/// `Strings` (numbers read as their text) and `StepRefs`: one string or more.
fn strings_value(field: &RawField, shape: Shape) -> Result<Value, Refused> {
    if field.args.is_empty() {
        return Err(wrong_type(field.span, "nothing"));
    }
    let mut items = Vec::new();
    for arg in &field.args {
        match &arg.value {
            KdlValue::String(s) => items.push(Value::String(s.clone())),
            KdlValue::Integer(_) | KdlValue::Float(_) if shape == Shape::Strings => {
                items.push(Value::String(super::expand::plain_text(&arg.value)))
            }
            other => return Err(wrong_type(arg.span, describe_value(other))),
        }
    }
    Ok(Value::Array(items))
}

/// Every other shape: exactly one value and no properties, typed by [`single`].
fn single_value(field: &RawField, shape: Shape) -> Result<Value, Refused> {
    let [arg] = field.args.as_slice() else {
        let found = if field.args.is_empty() {
            "nothing".to_string()
        } else {
            format!("{} values", field.args.len())
        };
        return Err(wrong_type(field.span, found));
    };
    if !field.props.is_empty() {
        return Err(wrong_type(field.props[0].0.span, "a key=value property"));
    }
    single(shape, arg).map_err(|message| match message {
        Some(message) => Refused::BadValue { span: arg.span, message },
        None => wrong_type(arg.span, describe_value(&arg.value)),
    })
}

/// One typed value; `Err(None)` is a plain type mismatch, `Err(Some(msg))` a bad value of the right type.
fn single(shape: Shape, arg: &Spanned<KdlValue>) -> Result<Value, Option<String>> {
    match (shape, &arg.value) {
        // An upstream result not known yet (`rate "{search.c.max_rate}"`): its
        // type is checked when the recipe is loaded again with its value.
        (_, KdlValue::String(s)) if super::result_refs::is_whole_placeholder(s) => {
            Ok(Value::String(s.clone()))
        }
        (Shape::Int, KdlValue::Integer(i)) => {
            let i = u64::try_from(*i)
                .map_err(|_| Some(format!("{i} is out of range (expected 0 … {})", u64::MAX)))?;
            Ok(Value::Number(i.into()))
        }
        (Shape::Number, KdlValue::Integer(i)) => Ok(Value::Number(Number::from_f64(*i as f64).ok_or(None)?)),
        (Shape::Number, KdlValue::Float(x)) => Ok(Value::Number(
            Number::from_f64(*x).ok_or_else(|| Some(format!("{x} is not a finite number")))?,
        )),
        (Shape::Str, KdlValue::String(s)) => Ok(Value::String(s.clone())),
        (Shape::Bool, KdlValue::Bool(b)) => Ok(Value::Bool(*b)),
        (Shape::Duration, KdlValue::String(s)) => {
            let d = parse_duration(s).map_err(|e| Some(e.to_string()))?;
            Ok(Value::Number((d.as_millis() as u64).into()))
        }
        (Shape::OneOf(words), KdlValue::String(s)) => {
            if words.contains(&s.as_str()) {
                Ok(Value::String(s.clone()))
            } else {
                let hint =
                    did_you_mean(s, words.iter().copied()).map(|h| format!(" ({h})")).unwrap_or_default();
                Err(Some(format!("\"{s}\" is not {}{hint}", shape.describe())))
            }
        }
        (Shape::Ref(_), KdlValue::String(s)) => Ok(Value::String(s.clone())),
        _ => Err(None),
    }
}

fn scalar(value: &KdlValue) -> Value {
    match value {
        KdlValue::String(s) => Value::String(s.clone()),
        KdlValue::Integer(i) => {
            i64::try_from(*i).map(Value::from).unwrap_or_else(|_| Value::String(i.to_string()))
        }
        KdlValue::Float(x) => Number::from_f64(*x).map(Value::Number).unwrap_or(Value::Null),
        KdlValue::Bool(b) => Value::Bool(*b),
        KdlValue::Null => Value::Null,
    }
}

/// A child of a block: one value → scalar, several → array, children or
/// properties → object.
fn block_value(field: &RawField) -> Value {
    if !field.children.is_empty() || !field.props.is_empty() {
        let mut map = Map::new();
        for child in &field.children {
            map.insert(child.name.value.clone(), block_value(child));
        }
        for (key, value) in &field.props {
            map.insert(key.value.clone(), scalar(&value.value));
        }
        return Value::Object(map);
    }
    match field.args.as_slice() {
        [] => Value::Null,
        [one] => scalar(&one.value),
        many => Value::Array(many.iter().map(|a| scalar(&a.value)).collect()),
    }
}

fn bool_hint(spec: &FieldSpec, field: &RawField) -> Option<String> {
    let is_word =
        field.args.iter().any(|a| matches!(&a.value, KdlValue::String(s) if s == "true" || s == "false"));
    (spec.shape == Shape::Bool && is_word).then(|| "KDL v2 writes booleans as #true and #false".to_string())
}
