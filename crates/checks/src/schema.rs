//! JSON Schema validation of replies and tool arguments (the `jsonschema`
//! crate, without its network and file reference resolvers: a check's
//! schema must be self-contained).

use serde_json::Value;

/// A compiled schema and its source (kept for the evidence).
pub struct CompiledSchema {
    validator: jsonschema::Validator,
}

impl CompiledSchema {
    /// Compile `schema`, or say why it is not a usable schema.
    pub fn new(schema: &Value) -> Result<Self, jsonschema::ValidationError<'static>> {
        jsonschema::validator_for(schema).map(|validator| Self { validator })
    }

    /// Every violation as `<path>: <message>` (at most `limit`); empty when valid.
    pub fn violations(&self, instance: &Value, limit: usize) -> Vec<String> {
        self.validator
            .iter_errors(instance)
            .take(limit)
            .map(|error| {
                let path = error.instance_path().to_string();
                let path = if path.is_empty() { "/".to_owned() } else { path };
                format!("{path}: {error}")
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_paths_of_violations() {
        let schema = CompiledSchema::new(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": false
        }))
        .unwrap();
        assert!(schema.violations(&json!({"n": 1}), 5).is_empty());
        let errors = schema.violations(&json!({"n": "x", "extra": true}), 5);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors.iter().any(|e| e.starts_with("/n:")), "{errors:?}");
    }

    #[test]
    fn rejects_bad_schemas_and_remote_refs_without_panicking() {
        assert!(CompiledSchema::new(&json!({"type": "objekt"})).is_err());
        assert!(CompiledSchema::new(&json!({"$ref": "https://example.invalid/schema.json"})).is_err());
    }
}
