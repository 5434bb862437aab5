//! Canonical JSON: object keys sorted at every depth, no whitespace. The
//! fingerprint hashes these bytes, so two equal settings always hash alike.

use serde_json::{Map, Value};

pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut sorted = Map::new();
            for key in keys {
                sorted.insert(key.clone(), canonical(&map[key]));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

pub fn canonical_bytes(value: &Value) -> Vec<u8> {
    // Serialising a Value cannot fail: its keys are strings.
    serde_json::to_vec(&canonical(value)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "s"}});
        let b = json!({"a": {"x": "s", "y": [1, 2]}, "b": 1});
        assert_eq!(canonical_bytes(&a), canonical_bytes(&b));
        assert_eq!(String::from_utf8(canonical_bytes(&a)).unwrap(), r#"{"a":{"x":"s","y":[1,2]},"b":1}"#);
    }

    #[test]
    fn array_order_matters() {
        assert_ne!(canonical_bytes(&json!([1, 2])), canonical_bytes(&json!([2, 1])));
    }
}
