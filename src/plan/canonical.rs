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

/// The bytes of `canonical(value)`, written straight from `value` (no
/// sorted copy is built: every step's preimage passes through here).
pub fn canonical_bytes(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                // Cannot fail: a string into a Vec.
                let _ = serde_json::to_writer(&mut *out, key.as_str());
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Writing a string, number, bool or null into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
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
    fn bytes_are_those_of_the_sorted_copy() {
        let value =
            json!({"z": [1.5, "x\"y", null, {"b": true, "a": -3}], "a": {"é": "\u{1}", "A": []}, "m": {}});
        assert_eq!(canonical_bytes(&value), serde_json::to_vec(&canonical(&value)).unwrap());
    }

    #[test]
    fn array_order_matters() {
        assert_ne!(canonical_bytes(&json!([1, 2])), canonical_bytes(&json!([2, 1])));
    }
}
