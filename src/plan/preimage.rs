//! Assembles each step's preimage from its settings, its inputs and its
//! upstream fingerprints.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::fingerprint::{MEASUREMENT_PROTOCOL, PreimageParts, file_digest};
use crate::recipe::{Decl, Kind, Recipe};

/// Settings that a server's simulated twin keeps; the real command line
/// cannot change a simulated result, so it does not count there.
const TWIN_SETTINGS: &[&str] = &["sim", "model", "replicas", "gpus", "identity"];

/// Facts about the world, looked up once per plan.
#[derive(Default)]
pub struct World {
    engines: BTreeMap<String, Value>,
}

impl World {
    /// Resolved path, content hash and version output of an engine program.
    fn engine(&mut self, program: &str, version_args: &[String]) -> Value {
        let key = format!("{program}\u{0}{}", version_args.join("\u{0}"));
        self.engines
            .entry(key)
            .or_insert_with(|| {
                let args: Vec<&str> = version_args.iter().map(String::as_str).collect();
                match anvil_proc::engine_identity(program, &args) {
                    Ok(id) => json!({"program": program, "path": id.program_path, "blake3": id.blake3, "version": id.version_output}),
                    // An engine missing here may exist on the machine that runs it:
                    // record the absence; launching will fail with a clear error.
                    Err(err) => json!({"program": program, "unresolved": err.to_string()}),
                }
            })
            .clone()
    }
}

/// Whether servers run as themselves or as their simulated twins (`--sim`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineMode {
    AsDeclared,
    SimulatedTwins,
}

/// How a step reads its upstream: by configuration fingerprint, or — for
/// steps that evaluate results (gates, screens, decisions) — by the digest
/// of the result, so an unchanged result does not trigger re-evaluation.
pub enum Upstream {
    Fingerprint(String),
    ResultDigest(Option<String>),
}

pub fn preimage_of(
    step: &Decl,
    recipe: &Recipe,
    upstream: &[(String, Upstream)],
    mode: EngineMode,
    world: &mut World,
) -> (Value, bool) {
    let kind: &'static str = step.kind.as_str();
    let mut parts = PreimageParts::new(kind);
    let mut settings = step.hashed_settings();
    settings.remove("after"); // ordering: the upstream fingerprints say what matters
    let base_dir = recipe.dir();

    match step.kind {
        Kind::Server => {
            let engine = step.str("engine").unwrap_or("sim");
            let twin = mode == EngineMode::SimulatedTwins && engine != "sim";
            if twin || engine == "sim" {
                settings.retain(|k, _| TWIN_SETTINGS.contains(&k.as_str()));
                settings.insert("engine".into(), json!("sim"));
                parts
                    .environment
                    .insert("engine".into(), json!({"simulated": true, "anvil": env!("CARGO_PKG_VERSION")}));
            } else if engine == "command" {
                let command = step.strings("command");
                if let Some(program) = command.first() {
                    let version_args = match step.get("version-args") {
                        Some(_) => step.strings("version-args"),
                        None => vec!["--version".to_string()],
                    };
                    parts.environment.insert("engine".into(), world.engine(program, &version_args));
                }
            }
        }
        Kind::Cell | Kind::Check => {
            parts.environment.insert("protocol".into(), json!(MEASUREMENT_PROTOCOL));
            parts.environment.insert("campaign_seed".into(), json!(recipe.campaign.seed));
        }
        _ => {}
    }
    for file in step.strings("reads") {
        parts.files.insert(file.clone(), file_digest(&base_dir.join(&file)));
    }
    if reads_results(step.kind) {
        // Params an expression reads are inputs like any result it reads.
        let mut params = Map::new();
        for expression in super::dependencies::expressions_of(step, &mut Vec::new()) {
            for reference in expression.parsed.references().into_iter().filter(|r| r.kind == "param") {
                params.insert(
                    reference.name.clone(),
                    recipe.params.get(&reference.name).cloned().unwrap_or(Value::Null),
                );
            }
        }
        if !params.is_empty() {
            parts.upstream.insert("params".into(), Value::Object(params));
        }
    }
    let mut provisional = false;
    let mut reads = Map::new();
    let mut after = Vec::new();
    for (role, up) in upstream {
        match up {
            Upstream::Fingerprint(fp) if role == "server" => {
                parts.upstream.insert("server".into(), json!(fp));
            }
            Upstream::Fingerprint(fp) => after.push(json!(fp)),
            Upstream::ResultDigest(Some(digest)) => {
                reads.insert(role.clone(), json!(digest));
            }
            Upstream::ResultDigest(None) => {
                reads.insert(role.clone(), json!("not yet produced"));
                provisional = true;
            }
        }
    }
    if !after.is_empty() {
        // Declaration order must not change a fingerprint.
        after.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        parts.upstream.insert("after".into(), Value::Array(after));
    }
    if !reads.is_empty() {
        parts.upstream.insert("reads".into(), Value::Object(reads));
    }
    parts.settings = settings.into_iter().collect();
    (parts.into_preimage(), provisional)
}

/// Steps that evaluate other steps' results rather than their configuration.
pub fn reads_results(kind: Kind) -> bool {
    matches!(kind, Kind::Gate | Kind::Screen | Kind::Decision)
}
