//! A concrete declaration: its name and spans, the settings as written
//! (what the fingerprint hashes), and the typed form the plan and the
//! executors read.

use std::collections::BTreeMap;

use miette::SourceSpan;
use serde_json::Value;

use super::decls::{SearchDecl, Spec, cell, common};
use super::expression::Expression;
use super::problem::{Problem, Problems, SourceText};
use super::settings::{Draft, Settings};
use crate::step_kind::Kind;

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
            description: draft.settings.string(common::description),
            after: draft.settings.strings(common::after),
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

    /// A problem pointing at a setting where it was written (in a workload,
    /// for a setting the cell took from one), or at the name when unset.
    pub fn problem_at(&self, key: &str, message: impl Into<String>) -> Problem {
        match self.settings.setting(key) {
            Some(setting) => Problem::new(&setting.source, setting.span, message),
            None => self.problem(message),
        }
    }

    /// The settings that can change a result, as JSON by setting name: the
    /// part of the preimage the recipe writes. `as_twin` keeps only what a
    /// server's simulated twin uses.
    pub fn fingerprinted_settings(&self, as_twin: bool) -> BTreeMap<String, Value> {
        self.settings
            .0
            .iter()
            // Ordering: the upstream fingerprints say what matters.
            .filter(|(k, s)| s.hashed && k.as_str() != common::after)
            .filter(|(k, _)| !as_twin || super::decls::server::TWIN_SETTINGS.contains(&k.as_str()))
            .map(|(k, s)| (k.clone(), s.value.clone()))
            .collect()
    }

    /// Every expression the step evaluates, parsed at load.
    pub fn expressions(&self) -> Vec<&Expression> {
        self.spec.expressions()
    }
}

impl SearchDecl {
    /// The probe at `value`: a cell of this search's server and workload with
    /// the variable set, named `search@variable=value` (names are not hashed).
    pub fn probe(&self, value: f64) -> Decl {
        let draft = self.probe_draft(value);
        let spec = cell::build(&draft, &mut Problems::default());
        Decl::from_draft(draft, Spec::Cell(spec))
    }
}
