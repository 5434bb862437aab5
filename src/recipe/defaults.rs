//! What a declaration takes from elsewhere before its typed form is built:
//! a cell its workload's settings, a server its engine word.

use std::collections::BTreeMap;

use super::decls::{cell, common, server};
use super::problem::Problems;
use super::settings::{self, Draft, Setting};
use crate::words;

/// A cell takes every workload setting it does not set itself; the
/// workload's name is only a reference, its content is what counts.
pub(super) fn take_in_workload(cell: &mut Draft, workloads: &BTreeMap<String, settings::Settings>) {
    let Some(workload) = cell.settings.str(cell::key::workload).and_then(|name| workloads.get(name)) else {
        return;
    };
    for (key, setting) in &workload.0 {
        if key != common::description && !cell.settings.contains(key) {
            cell.settings.0.insert(key.clone(), setting.clone());
            cell.from_workload.push(key.clone());
        }
    }
    if let Some(reference) = cell.settings.0.get_mut(cell::key::workload) {
        reference.hashed = false;
    }
}

/// A server without `engine` is external with a `url`, launched with a
/// `command`, and simulated otherwise; the settled word is hashed.
pub(super) fn default_engine(server: &mut Draft, problems: &mut Problems) {
    let s = &server.settings;
    let engine = match s.str(server::key::engine).and_then(words::EngineKind::from_word) {
        Some(engine) => engine,
        None if s.contains(server::key::url) => words::EngineKind::External,
        None if s.contains(server::key::command) => words::EngineKind::Command,
        None => words::EngineKind::Sim,
    };
    let needs = match engine {
        words::EngineKind::Command => Some(server::key::command),
        words::EngineKind::External => Some(server::key::url),
        words::EngineKind::Vllm | words::EngineKind::Sglang | words::EngineKind::LlamaCpp => {
            Some(server::key::weights)
        }
        words::EngineKind::Sim => None,
    };
    if let Some(needed) = needs
        && !s.contains(needed)
    {
        problems.push(
            server
                .problem_at(
                    server::key::engine,
                    format!("server `{}` with engine \"{engine}\" needs `{needed}`", server.name),
                )
                .label("incomplete server"),
        );
    }
    server.settings.0.insert(
        server::key::engine.into(),
        Setting {
            value: serde_json::Value::String(engine.as_str().to_string()),
            span: server.name_span,
            source: server.source.clone(),
            hashed: true,
        },
    );
}
