//! A concrete declaration: its name and spans, the settings as written
//! (what the fingerprint hashes), and the typed form the plan and the
//! executors read.

use std::collections::BTreeMap;

use miette::SourceSpan;
use serde_json::Value;

use super::decls::Spec;
use super::expression::Expression;
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

/// The settings of one declaration by name, as the loader checked them.
/// Only the recipe layer reads them by name: everything downstream reads
/// the typed [`Spec`].
#[derive(Debug, Clone, Default)]
pub struct Settings(pub(super) SettingMap);

/// Settings by name, in name order: a sorted list rather than a `BTreeMap`,
/// whose every node has room for eleven entries when most declarations set
/// two or three (a plan of 100,000 steps spent 100 MB on empty slots).
#[derive(Debug, Clone, Default)]
pub struct SettingMap(Vec<(String, Setting)>);

impl SettingMap {
    fn position(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&Setting> {
        self.position(key).ok().map(|i| &self.0[i].1)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Setting> {
        self.position(key).ok().map(|i| &mut self.0[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Sets `key`, replacing a setting of that name.
    pub fn insert(&mut self, key: String, setting: Setting) {
        match self.position(&key) {
            Ok(i) => self.0[i].1 = setting,
            Err(i) => self.0.insert(i, (key, setting)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Setting)> {
        self.0.iter().map(|(k, s)| (k, s))
    }
}

impl<'a> IntoIterator for &'a SettingMap {
    type Item = (&'a String, &'a Setting);
    type IntoIter =
        std::iter::Map<std::slice::Iter<'a, (String, Setting)>, fn(&'a (String, Setting)) -> Self::Item>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, s)| (k, s))
    }
}

impl Settings {
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).map(|s| &s.value)
    }

    pub(super) fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    pub(super) fn string(&self, key: &str) -> Option<String> {
        self.str(key).map(str::to_string)
    }

    pub(super) fn u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    pub(super) fn f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    pub(super) fn bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }

    /// Durations are stored in milliseconds by the loader.
    pub(super) fn duration(&self, key: &str) -> Option<std::time::Duration> {
        self.u64(key).map(std::time::Duration::from_millis)
    }

    pub(super) fn strings(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(Value::Array(items)) => {
                items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
            }
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    }

    /// key=value settings (`identity`, `ready`, …).
    pub(super) fn props(&self, key: &str) -> BTreeMap<String, Value> {
        match self.get(key) {
            Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            _ => BTreeMap::new(),
        }
    }

    /// key=value settings whose values are text (`env`): numbers are written out.
    pub(super) fn text_props(&self, key: &str) -> BTreeMap<String, String> {
        self.props(key).into_iter().map(|(k, v)| (k, text_of(&v))).collect()
    }

    pub(super) fn setting(&self, key: &str) -> Option<&Setting> {
        self.0.get(key)
    }

    pub(super) fn contains(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }
}

/// A JSON scalar as the text a command line or environment would carry.
pub(super) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A declaration before its typed form is built (workloads taken in,
/// engines defaulted).
#[derive(Debug, Clone)]
pub(super) struct Draft {
    pub kind: Kind,
    pub name: String,
    pub source: SourceText,
    pub span: SourceSpan,
    pub name_span: SourceSpan,
    pub settings: Settings,
    /// Settings a cell took in from its workload (the workload reports their problems).
    pub from_workload: Vec<String>,
}

impl Draft {
    /// `kind `name``, the way messages name a declaration.
    pub fn what(&self) -> String {
        format!("{} `{}`", self.kind, self.name)
    }

    /// A problem pointing at a setting (or at the declaration when unset).
    pub fn problem_at(&self, key: &str, message: impl Into<String>) -> Problem {
        match self.settings.setting(key) {
            Some(setting) => Problem::new(&setting.source, setting.span, message),
            None => Problem::new(&self.source, self.name_span, message),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Decl {
    pub kind: Kind,
    pub name: String,
    pub source: SourceText,
    pub span: SourceSpan,
    pub name_span: SourceSpan,
    pub description: Option<String>,
    /// Steps this one runs after (ordering only).
    pub after: Vec<String>,
    /// What the step does, typed.
    pub spec: Spec,
    /// The upstream results its settings read (`screen.x.winner_server`),
    /// filled or not (`result_refs.rs`).
    pub result_inputs: Vec<String>,
    /// Those of them this load had no value for: the step is provisional.
    pub unresolved: Vec<String>,
    settings: Settings,
}

impl Decl {
    pub(super) fn from_draft(draft: Draft, spec: Spec) -> Decl {
        Decl {
            kind: draft.kind,
            description: draft.settings.string("description"),
            after: draft.settings.strings("after"),
            name: draft.name,
            source: draft.source,
            span: draft.span,
            name_span: draft.name_span,
            spec,
            result_inputs: Vec::new(),
            unresolved: Vec::new(),
            settings: draft.settings,
        }
    }

    /// `kind.name`, the way gate expressions and messages name a step.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.kind, self.name)
    }

    /// A problem pointing at the declaration's name.
    pub fn problem(&self, message: impl Into<String>) -> Problem {
        Problem::new(&self.source, self.name_span, message)
    }

    /// The settings that can change a result, as JSON by setting name: the
    /// part of the preimage the recipe writes. `as_twin` keeps only what a
    /// server's simulated twin uses.
    pub fn fingerprinted_settings(&self, as_twin: bool) -> BTreeMap<String, Value> {
        self.settings
            .0
            .iter()
            // Ordering: the upstream fingerprints say what matters.
            .filter(|(k, s)| s.hashed && k.as_str() != "after")
            .filter(|(k, _)| !as_twin || super::decls::server::TWIN_SETTINGS.contains(&k.as_str()))
            .map(|(k, s)| (k.clone(), s.value.clone()))
            .collect()
    }

    /// Every expression the step evaluates, parsed at load.
    pub fn expressions(&self) -> Vec<&Expression> {
        self.spec.expressions()
    }
}
