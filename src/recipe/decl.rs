//! A concrete, typed declaration: what the plan and the executors read.

use std::collections::BTreeMap;

use miette::SourceSpan;
use serde_json::Value;

use super::kind::Kind;
use super::problem::{Problem, SourceText};

/// One resolved setting and where it was written.
#[derive(Debug, Clone)]
pub struct Setting {
    pub value: Value,
    pub span: SourceSpan,
    pub source: SourceText,
    /// Whether it enters the fingerprint (descriptions don't).
    pub hashed: bool,
}

#[derive(Debug, Clone)]
pub struct Decl {
    pub kind: Kind,
    pub name: String,
    pub source: SourceText,
    pub span: SourceSpan,
    pub name_span: SourceSpan,
    pub settings: BTreeMap<String, Setting>,
}

impl Decl {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.settings.get(key).map(|s| &s.value)
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    pub fn u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    pub fn f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }

    pub fn strings(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(Value::Array(items)) => {
                items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
            }
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    }

    /// String-valued key=value settings (`env`, `identity`, `ready`, …).
    pub fn props(&self, key: &str) -> BTreeMap<String, Value> {
        match self.get(key) {
            Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            _ => BTreeMap::new(),
        }
    }

    /// `kind.name`, the way gate expressions and messages name a step.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.kind, self.name)
    }

    /// A problem pointing at a setting (or at the declaration when unset).
    pub fn problem_at(&self, key: &str, message: impl Into<String>) -> Problem {
        match self.settings.get(key) {
            Some(setting) => Problem::new(&setting.source, setting.span, message),
            None => Problem::new(&self.source, self.name_span, message),
        }
    }

    /// The settings that can change a result, as canonical JSON (sorted keys).
    pub fn hashed_settings(&self) -> BTreeMap<String, Value> {
        self.settings.iter().filter(|(_, s)| s.hashed).map(|(k, s)| (k.clone(), s.value.clone())).collect()
    }
}
