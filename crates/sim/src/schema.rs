//! Generate one JSON value that fits a JSON Schema (the subset structured
//! output and tool parameters use in practice): object / properties /
//! required, string, number, integer, boolean, null, array / items /
//! minItems / maxItems, enum, const, minimum / maximum, anyOf / oneOf,
//! and `type` given as a list.

use serde_json::{Map, Value, json};

use crate::rng::SimRng;

const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta", "kappa", "sigma", "omega"];
/// Deeper schemas than this get `null` instead of recursing forever.
const MAX_DEPTH: usize = 32;

/// A value for `schema`, chosen deterministically from `rng`.
pub fn value_for_schema(schema: &Value, rng: &mut SimRng) -> Value {
    generate(schema, rng, 0)
}

fn generate(schema: &Value, rng: &mut SimRng, depth: usize) -> Value {
    let Some(schema) = schema.as_object() else {
        // `true` or an empty schema accepts anything.
        return Value::String("value".into());
    };
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    if let Some(choices) = schema.get("enum").and_then(Value::as_array).filter(|c| !c.is_empty()) {
        let pick = rng.below(choices.len() as u64) as usize;
        return choices[pick].clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema.get(key).and_then(Value::as_array).and_then(|v| v.first()) {
            return generate(first, rng, depth + 1);
        }
    }
    match schema_type(schema).as_deref() {
        Some("object") => object_value(schema, rng, depth),
        Some("array") => array_value(schema, rng, depth),
        Some("string") => string_value(schema, rng),
        Some("integer") => integer_value(schema, rng),
        Some("number") => number_value(schema, rng),
        Some("boolean") => Value::Bool(rng.chance(0.5)),
        Some("null") => Value::Null,
        _ if schema.contains_key("properties") => object_value(schema, rng, depth),
        _ if schema.contains_key("items") => array_value(schema, rng, depth),
        _ => Value::String("value".into()),
    }
}

/// The schema's type; for a list of types, the first that is not "null".
fn schema_type(schema: &Map<String, Value>) -> Option<String> {
    match schema.get("type")? {
        Value::String(t) => Some(t.clone()),
        Value::Array(types) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            names.iter().find(|t| **t != "null").or(names.first()).map(|t| (*t).to_owned())
        }
        _ => None,
    }
}

fn object_value(schema: &Map<String, Value>, rng: &mut SimRng, depth: usize) -> Value {
    let mut object = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        // Every property, required or not: the result is valid either way
        // and exercises the client's parser more.
        for (name, property) in properties {
            object.insert(name.clone(), generate(property, rng, depth + 1));
        }
    }
    // A required name without a property schema still has to be present.
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            object.entry(name).or_insert_with(|| Value::String("value".into()));
        }
    }
    Value::Object(object)
}

fn array_value(schema: &Map<String, Value>, rng: &mut SimRng, depth: usize) -> Value {
    let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1);
    let max = schema.get("maxItems").and_then(Value::as_u64).unwrap_or(min.max(3)).max(min);
    let len = (min + rng.below(max - min + 1)).min(64);
    let items = schema.get("items").cloned().unwrap_or(json!({"type": "string"}));
    Value::Array((0..len).map(|_| generate(&items, rng, depth + 1)).collect())
}

fn string_value(schema: &Map<String, Value>, rng: &mut SimRng) -> Value {
    let mut text = WORDS[rng.below(WORDS.len() as u64) as usize].to_owned();
    let min_len = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    while text.chars().count() < min_len.min(4096) {
        text.push('x');
    }
    if let Some(max_len) = schema.get("maxLength").and_then(Value::as_u64) {
        text = text.chars().take(max_len as usize).collect();
    }
    Value::String(text)
}

fn bounds(schema: &Map<String, Value>) -> (f64, f64) {
    let low = schema.get("minimum").and_then(Value::as_f64).unwrap_or(0.0);
    let high = schema.get("maximum").and_then(Value::as_f64).unwrap_or(low.max(0.0) + 100.0);
    (low, high.max(low))
}

fn integer_value(schema: &Map<String, Value>, rng: &mut SimRng) -> Value {
    let (low, high) = bounds(schema);
    let (low, high) = (low.ceil() as i64, high.floor() as i64);
    if high < low {
        return json!(low);
    }
    let span = high.saturating_sub(low).saturating_add(1) as u64;
    json!(low.saturating_add(rng.below(span) as i64))
}

fn number_value(schema: &Map<String, Value>, rng: &mut SimRng) -> Value {
    let (low, high) = bounds(schema);
    // Quarter steps keep the text short and exactly representable.
    let value = low + ((high - low) * rng.next_f64() * 4.0).floor() / 4.0;
    json!(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_an_object_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"type": "integer", "minimum": 18, "maximum": 20},
                "score": {"type": "number"},
                "ok": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
                "kind": {"enum": ["a", "b"]},
                "maybe": {"type": ["null", "string"]},
                "nested": {"type": "object", "properties": {"x": {"const": 5}}, "required": ["x", "y"]}
            },
            "required": ["name", "age"]
        });
        let v = value_for_schema(&schema, &mut SimRng::new(3));
        assert!(v["name"].is_string());
        let age = v["age"].as_i64().unwrap();
        assert!((18..=20).contains(&age));
        assert!(v["score"].is_f64());
        assert!(v["ok"].is_boolean());
        assert_eq!(v["tags"].as_array().unwrap().len(), 2);
        assert!(["a", "b"].contains(&v["kind"].as_str().unwrap()));
        assert!(v["maybe"].is_string());
        assert_eq!(v["nested"]["x"], 5);
        assert!(v["nested"]["y"].is_string());
    }

    #[test]
    fn odd_schemas_do_not_panic() {
        for schema in [
            json!(true),
            json!({}),
            json!({"type": 5}),
            json!({"anyOf": []}),
            json!({"type": "integer", "minimum": 5, "maximum": 1}),
        ] {
            let _ = value_for_schema(&schema, &mut SimRng::new(1));
        }
    }
}
