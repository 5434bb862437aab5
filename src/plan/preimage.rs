//! Assembles each step's preimage from its settings, its inputs and its
//! upstream fingerprints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::fingerprint::{JUDGING_RULES, MEASUREMENT_PROTOCOL, PreimageParts, file_digest, fingerprint_of};
use crate::engines::EnginePreset;
use crate::recipe::decls::Engine;
use crate::recipe::{Decl, Kind, Recipe, Spec};

/// Facts about the world, looked up once per plan.
#[derive(Default)]
pub struct World {
    engines: BTreeMap<String, Value>,
    gpu_models: Option<Value>,
    gpu_driver: Option<Value>,
    /// Each server's canary constraint, looked up once (`recipe.step`
    /// scans every step: once per cell would make planning quadratic).
    canary_constraints: BTreeMap<String, Option<Value>>,
}

impl World {
    /// The GPU models of this machine: a cell measured on one GPU type never
    /// satisfies a run on another.
    fn gpu_models(&mut self) -> Value {
        self.gpu_models
            .get_or_insert_with(|| match crate::environment::gpu_models() {
                Some(models) => json!(models),
                None => json!("unknown: nvidia-smi not found"),
            })
            .clone()
    }

    /// The GPU driver's version: the same engine on another driver may
    /// measure otherwise.
    fn gpu_driver(&mut self) -> Value {
        self.gpu_driver
            .get_or_insert_with(|| match anvil_proc::gpu_driver() {
                Some(version) => json!(version),
                None => json!("unknown: nvidia-smi not found"),
            })
            .clone()
    }

    /// What an engine known by name runs: a Python engine's interpreter and
    /// the installed packages that decide its results (versions and a digest
    /// of their installed files), or a binary's path, hash and version; and
    /// the weights it loads (a local folder's files, or a hub snapshot).
    fn preset_engine(&mut self, preset: &EnginePreset, base_dir: &Path) -> Value {
        let weights_path = base_dir.join(&preset.weights);
        let weights = match weights_path.exists() {
            true => weights_path.display().to_string(),
            false => preset.weights.clone(),
        };
        let key = format!(
            "{}\u{0}{}\u{0}{weights}\u{0}{:?}",
            preset.name.as_str(),
            preset.program,
            preset.revision
        );
        if let Some(known) = self.engines.get(&key) {
            return known.clone();
        }
        let program = if preset.name.is_python() {
            match anvil_proc::python_identity(&preset.program, preset.distributions()) {
                Ok(id) => serde_json::to_value(id).unwrap_or(Value::Null),
                Err(err) => json!({"program": preset.program, "unresolved": err.to_string()}),
            }
        } else {
            self.engine(&preset.program, &["--version".to_string()])
        };
        let weights =
            anvil_proc::weights_identity(&weights, preset.revision.as_deref(), digest_cache().as_deref());
        let mut weights = serde_json::to_value(weights).unwrap_or(Value::Null);
        // Files keyed by their path, so a diff names the file that changed.
        if let Some(files) = weights.get_mut("files")
            && let Value::Array(list) = files.take()
        {
            let by_path = list.into_iter().filter_map(|mut file| {
                let path = file.as_object_mut()?.remove("path")?.as_str()?.to_string();
                Some((path, file))
            });
            *files = Value::Object(by_path.collect());
        }
        let identity = json!({
            "name": preset.name.as_str(),
            "program": program,
            "weights": weights,
        });
        self.engines.insert(key, identity.clone());
        identity
    }

    /// The request-body fields a cell's server preset adds to constrain each
    /// reply to its canary, when the cell has canaries on.
    fn canary_constraint(&mut self, recipe: &Recipe, cell: &crate::recipe::decls::CellDecl) -> Option<Value> {
        let canaries = cell.load.canaries.unwrap_or(anvil_loadgen::CellSpec::default().canaries);
        let body = self.canary_constraints.entry(cell.server.clone()).or_insert_with(|| {
            let Spec::Server(server) = &recipe.step(&cell.server)?.spec else { return None };
            server.engine.preset().map(EnginePreset::canary_body)
        });
        body.clone().filter(|_| canaries)
    }

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

/// Where the digests of weight files are kept between plans, keyed by
/// each file's path, size, mtime and inode, so a plan reads no weight
/// bytes twice (`$ANVIL_CACHE/digests`, default `~/.cache/anvil/digests`).
fn digest_cache() -> Option<PathBuf> {
    let root = std::env::var_os("ANVIL_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/anvil")))?;
    Some(root.join("digests"))
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
    let base_dir = recipe.dir();
    let mut settings = step.fingerprinted_settings(false);

    match &step.spec {
        Spec::Server(server) => server_parts(step, server, mode, &base_dir, world, &mut parts, &mut settings),
        // A search's result is its probes' (cells') results, judged.
        Spec::Cell(_) | Spec::Check(_) | Spec::Search(_) => {
            if let Spec::Cell(cell) = &step.spec {
                settings.extend(super::resolved_cell::fingerprinted_defaults(&cell.load));
                // An engine known by name constrains every reply to its canary:
                // that is part of what is sent (a simulated twin is sent it too).
                if let Some(body) = world.canary_constraint(recipe, cell) {
                    settings.insert("canary-constraint".into(), body);
                }
            }
            parts.environment.insert("protocol".into(), json!(MEASUREMENT_PROTOCOL));
            parts.environment.insert("campaign_seed".into(), json!(recipe.campaign.seed));
        }
        _ => {}
    }
    for file in step.spec.reads() {
        parts.files.insert(file.clone(), file_digest(&base_dir.join(file)));
    }
    if reads_results(step.kind) {
        judging_parts(step, recipe, &mut parts);
    }
    let provisional = upstream_parts(upstream, &mut parts);
    if let Spec::Search(search) = &step.spec {
        // Whatever its probes depend on (server, workload, files read,
        // protocol, seed) the search does too: its first probe's fingerprint.
        let server: Vec<(String, Upstream)> = upstream
            .iter()
            .filter_map(|(role, up)| match up {
                Upstream::Fingerprint(fp) if role == "server" => {
                    Some((role.clone(), Upstream::Fingerprint(fp.clone())))
                }
                _ => None,
            })
            .collect();
        let (probe, _) = preimage_of(&search.probe(search.snap(search.min)), recipe, &server, mode, world);
        parts.upstream.insert("first_probe".into(), json!(fingerprint_of(&probe).to_string()));
    }
    parts.settings = settings.into_iter().collect();
    (parts.into_preimage(), provisional)
}

/// A server's part: its tokenizer's content, and what it runs (the
/// simulated engine, or an engine's identity and, with GPUs, the hardware).
fn server_parts(
    step: &Decl,
    server: &crate::recipe::decls::ServerDecl,
    mode: EngineMode,
    base_dir: &Path,
    world: &mut World,
    parts: &mut PreimageParts,
    settings: &mut BTreeMap<String, Value>,
) {
    // The tokenizer's content, as every cell on this server builds its prompts with it.
    if let Some(tokenizer) = &server.tokenizer
        && let Some(file) = tokenizer.resolved_against(base_dir).file()
    {
        let digest = match file {
            Ok(path) => file_digest(&path),
            Err(why) => json!(format!("unreadable: {why}")),
        };
        parts.files.insert(format!("tokenizer {}", tokenizer.as_written()), digest);
    }
    let twin = mode == EngineMode::SimulatedTwins && !matches!(server.engine, Engine::Sim);
    if twin || matches!(server.engine, Engine::Sim) {
        *settings = step.fingerprinted_settings(true);
        settings.insert("engine".into(), json!("sim"));
        parts
            .environment
            .insert("engine".into(), json!({"simulated": true, "anvil": env!("CARGO_PKG_VERSION")}));
    } else if let Engine::Command(command) = &server.engine
        && let Some(program) = command.command.first()
    {
        let engine = match &command.preset {
            Some(preset) => world.preset_engine(preset, base_dir),
            None => world.engine(program, &command.version_args),
        };
        parts.environment.insert("engine".into(), engine);
        if server.gpus > 0 {
            let hardware = json!({
                "gpu_models": world.gpu_models(),
                "gpu_driver": world.gpu_driver(),
                "gpus_per_replica": server.gpus,
            });
            parts.environment.insert("hardware".into(), hardware);
        }
    }
}

/// A result-reading step's part: the rules it judges by, and the params its
/// expressions read (inputs like any result it reads).
fn judging_parts(step: &Decl, recipe: &Recipe, parts: &mut PreimageParts) {
    // A verdict reached by other rules is not this one.
    parts.environment.insert("judging".into(), json!(JUDGING_RULES));
    let mut params = Map::new();
    for name in step.expressions().into_iter().flat_map(|e| e.params()) {
        let value = recipe.params.get(&name).cloned().unwrap_or(Value::Null);
        params.insert(name, value);
    }
    if !params.is_empty() {
        parts.upstream.insert("params".into(), Value::Object(params));
    }
}

/// The upstream part: its server's fingerprint, the steps it comes after
/// (in any declared order) and the result digests it reads. True when a
/// result it reads is not produced yet (the step is provisional).
fn upstream_parts(upstream: &[(String, Upstream)], parts: &mut PreimageParts) -> bool {
    let mut provisional = false;
    let mut reads = Map::new();
    let mut after = Vec::new();
    for (role, up) in upstream {
        match up {
            Upstream::Fingerprint(fp) if role == "server" => {
                parts.upstream.insert(super::fingerprint::UPSTREAM_SERVER.into(), json!(fp));
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
    provisional
}

/// Steps that evaluate other steps' results rather than their configuration.
pub fn reads_results(kind: Kind) -> bool {
    matches!(kind, Kind::Gate | Kind::Screen | Kind::Decision)
}
