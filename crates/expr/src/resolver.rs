//! How an expression reads results: the caller implements [`Resolver`].
//! [`JsonResolver`] is a ready-made one over a `{kind: {name: result}}` document.

use crate::reference::Reference;

/// Looks references up. The language never interprets kinds or fields; a
/// resolver decides what `cell.tp1.aggregate_tok_s` means.
pub trait Resolver {
    fn resolve(&self, reference: &Reference) -> Resolved;
}

/// What a reference resolved to.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// One value (a plain reference).
    Value(serde_json::Value),
    /// One value per matching node (a wildcard reference), in sweep order.
    Many(Vec<(String, serde_json::Value)>),
    /// The input is absent; the reason is shown to the user.
    Missing(String),
}

/// Resolves against a JSON document `{ "cell": { "tp1": {...}, ... }, "check": {...} }`.
/// Wildcards match node names in document order. A wildcard that matches no
/// node, or a matching node that lacks the field, is `Missing`: a gate over a
/// sweep should not pass on the part of the sweep that happened to finish.
#[derive(Debug, Clone, Copy)]
pub struct JsonResolver<'a> {
    results: &'a serde_json::Value,
}

impl<'a> JsonResolver<'a> {
    pub fn new(results: &'a serde_json::Value) -> Self {
        JsonResolver { results }
    }
}

impl Resolver for JsonResolver<'_> {
    fn resolve(&self, reference: &Reference) -> Resolved {
        let Some(nodes) = self.results.get(&reference.kind).and_then(|v| v.as_object()) else {
            return Resolved::Missing(format!("no {} results", reference.kind));
        };
        if !reference.is_wildcard() {
            let Some(node) = nodes.get(&reference.name) else {
                return Resolved::Missing(format!("no result for {} {}", reference.kind, reference.name));
            };
            return match reference.select(node) {
                Ok(value) => Resolved::Value(value.clone()),
                Err(why) => Resolved::Missing(why.to_string()),
            };
        }
        let mut matched = Vec::new();
        for (name, node) in nodes.iter().filter(|(name, _)| reference.matches_name(name)) {
            let selected = Reference { name: name.clone(), ..reference.clone() };
            match selected.select(node) {
                Ok(value) => matched.push((name.clone(), value.clone())),
                Err(why) => return Resolved::Missing(why.to_string()),
            }
        }
        if matched.is_empty() {
            return Resolved::Missing(format!("no {} matches `{}`", reference.kind, reference.name));
        }
        Resolved::Many(matched)
    }
}
