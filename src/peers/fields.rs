//! Reading a peer's JSON field by field: every missing or mistyped field
//! is an error that names the file and the field, never a panic.

use std::path::Path;

use serde_json::Value;

/// A malformed peer file: which file, which field, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {field}: {why}")]
pub struct FieldError {
    pub file: String,
    pub field: String,
    pub why: String,
}

/// One JSON document of one file, read with errors that point into it.
#[derive(Clone, Copy)]
pub struct Doc<'a> {
    pub file: &'a str,
}

impl<'a> Doc<'a> {
    pub fn err(&self, field: &str, why: impl Into<String>) -> FieldError {
        FieldError { file: self.file.to_string(), field: field.to_string(), why: why.into() }
    }

    pub fn get<'v>(&self, v: &'v Value, field: &str) -> Result<&'v Value, FieldError> {
        v.get(field).ok_or_else(|| self.err(field, "is missing"))
    }

    pub fn str<'v>(&self, v: &'v Value, field: &str) -> Result<&'v str, FieldError> {
        self.get(v, field)?.as_str().ok_or_else(|| self.err(field, "is not a string"))
    }

    pub fn array<'v>(&self, v: &'v Value, field: &str) -> Result<&'v Vec<Value>, FieldError> {
        self.get(v, field)?.as_array().ok_or_else(|| self.err(field, "is not an array"))
    }

    /// An array of numbers.
    pub fn numbers(&self, v: &Value, field: &str) -> Result<Vec<f64>, FieldError> {
        self.array(v, field)?
            .iter()
            .enumerate()
            .map(|(i, x)| x.as_f64().ok_or_else(|| self.err(&format!("{field}[{i}]"), "is not a number")))
            .collect()
    }
}

/// A file's name as the user reads it in messages.
pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// A peer file's bytes and its JSON, or an error naming it.
pub fn read_json(path: &Path) -> Result<(Vec<u8>, Value), FieldError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| FieldError {
        file: name.clone(),
        field: "(file)".into(),
        why: format!("cannot read: {e}"),
    })?;
    let value = serde_json::from_slice(&bytes).map_err(|e| FieldError {
        file: name,
        field: "(file)".into(),
        why: format!("is not JSON: {e}"),
    })?;
    Ok((bytes, value))
}

/// `a.b.c` under `v`.
pub fn at<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(v, |v, key| v.get(key))
}
