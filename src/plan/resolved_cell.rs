//! One resolved cell: a cell's declaration (workload taken in, overrides
//! applied) with every default of the load generator applied, in one
//! place. What is sent, when, how many and at what in-flight cap is this
//! value; the load generator runs it, its artifact records it
//! (`resolved_cell`), and the report, the decision summary, the workload
//! manifest and `anvil show` read it from there, never from the recipe.
//!
//! A default that changes what a cell does must change its fingerprint:
//! [`fingerprinted_defaults`] names, for the preimage, every default that
//! is not the load generator's historical one, and `tests/golden_fingerprints.rs`
//! pins a digest of each resolved cell next to its fingerprint, so a
//! resolved cell that changes while its fingerprint does not fails there.

use std::time::Duration;

use anvil_loadgen::{
    Arrival, CellSpec, DEFAULT_MIN_REQUESTS, DatasetSpec, PromptCacheMode, SessionSpec, Slo, StoppingRule,
    TraceSpec, Traffic,
};
use serde_json::{Map, Value, json};

use crate::placeholders::unescape;
use crate::recipe::decls::load::{StageDecl, TrafficDecl};
use crate::recipe::decls::{self, CellDecl, LoadDecl};
use crate::recipe::{Decl, Recipe, Spec};
use crate::words;

/// A trace's arrivals are its own (it sets its rate), so unless the cell
/// sets `concurrency` its in-flight cap is this wide.
pub const TRACE_IN_FLIGHT_CAP: u32 = 1024;

/// The model name a server's requests carry when its declaration names none.
pub use crate::recipe::decls::DEFAULT_MODEL;

/// The cell `name` of `recipe` as [`resolve`] makes it, its server's
/// model taken from the recipe (what `anvil plan` and the golden tests
/// see; a run resolves against the server it acquired, which serves the
/// same model).
pub fn resolve_in_recipe(recipe: &Recipe, name: &str) -> Option<CellSpec> {
    let step = recipe.step(name)?;
    let Spec::Cell(cell) = &step.spec else { return None };
    resolve_step(step, recipe.step(&cell.server), recipe.campaign.seed)
}

/// [`resolve`] of a cell step given its server's declaration (found by the
/// caller, who may know where it is: `recipe.step` scans every step).
pub fn resolve_step(step: &Decl, server: Option<&Decl>, seed: u64) -> Option<CellSpec> {
    let Spec::Cell(cell) = &step.spec else { return None };
    let server = match server.map(|s| &s.spec) {
        Some(Spec::Server(server)) => Some(server),
        _ => None,
    };
    let canary_body = server.and_then(|s| s.engine.preset()).map(crate::engines::EnginePreset::canary_body);
    let served = Served {
        model: server.map_or(DEFAULT_MODEL, decls::ServerDecl::served_model),
        tokenizer: server.and_then(|s| s.tokenizer.as_ref()),
        canary_body: canary_body.as_ref(),
    };
    Some(resolve(&step.name, cell, &served, seed))
}

/// A cell step as its step document runs it: resolved against its
/// server's declaration under `seed`, its file paths made absolute from
/// the recipe `recipe_key`, beside the fingerprint of its server's
/// document. What a cell, a search's probe and an extra repeat are all
/// measured from. None for a step that is not a cell.
pub fn cell_exec(
    step: &Decl,
    server: Option<&Decl>,
    seed: u64,
    recipe_key: &str,
    server_fingerprint: String,
) -> Option<crate::document::cell::CellExec> {
    let Spec::Cell(cell) = &step.spec else { return None };
    let mut spec = resolve_step(step, server, seed)?;
    resolve_paths(&mut spec, recipe_key);
    Some(crate::document::cell::CellExec {
        cell: spec,
        balance: match cell.load.balance {
            words::Balance::RoundRobin => anvil_loadgen::Balance::RoundRobin,
            words::Balance::LeastOutstanding => anvil_loadgen::Balance::LeastOutstanding,
        },
        seed,
        server: server_fingerprint,
        recipe: recipe_key.to_string(),
    })
}

/// What a cell takes from its server: the model its requests name, the
/// tokenizer its prompts are built with, and the body fields that make an
/// engine known by name begin each reply with its canary.
#[derive(Debug, Clone, Copy)]
pub struct Served<'a> {
    pub model: &'a str,
    pub tokenizer: Option<&'a anvil_loadgen::TokenizerSpec>,
    pub canary_body: Option<&'a Value>,
}

/// The cell's `extra-body` over the engine's canary constraint: the
/// cell's own fields win, so a recipe can replace or drop the constraint.
fn with_canary_constraint(extra_body: Value, constraint: Option<&Value>) -> Value {
    match (constraint, extra_body) {
        (None, body) => body,
        (Some(constraint), Value::Null) => constraint.clone(),
        (Some(Value::Object(constraint)), Value::Object(cell)) => {
            let mut merged = constraint.clone();
            merged.extend(cell);
            Value::Object(merged)
        }
        (Some(_), body) => body,
    }
}

/// The cell `name` as the load generator runs it against a server serving
/// `served.model`, under the campaign `seed`. File paths stay as written
/// (relative to the recipe's folder; [`resolve_paths`] makes them the run's).
pub fn resolve(name: &str, cell: &CellDecl, served: &Served<'_>, seed: u64) -> CellSpec {
    let model = served.model;
    let defaults = CellSpec::default();
    let load = &cell.load;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let arrival = match load.arrival {
        decls::Arrival::Closed => Arrival::ClosedLoop,
        decls::Arrival::Poisson { rate_per_s } => Arrival::Poisson { rate_per_s },
        decls::Arrival::Constant { rate_per_s } => Arrival::Constant { rate_per_s },
    };
    // A stopping rule's budget is its most requests.
    let requests = match (&load.until, load.max_requests) {
        (Some(_), Some(max)) => count(Some(max), defaults.requests),
        _ => count(load.requests, defaults.requests),
    }
    .max(1);
    let repeat = count(load.repeat, 1).max(1);
    let mut spec = CellSpec {
        name: name.to_string(),
        model: model.to_string(),
        api: load.api,
        context_tokens: load.context_tokens.unwrap_or(defaults.context_tokens),
        concurrency: in_flight_cap(load, arrival, requests, defaults.concurrency),
        arrival,
        requests,
        warmup_requests: count(load.warmup_requests, defaults.warmup_requests),
        response_words: count(load.response_words, defaults.response_words),
        max_tokens: count(load.max_tokens, defaults.max_tokens),
        prompt_cache_mode: match load.prompt_cache {
            words::PromptCache::Unique => PromptCacheMode::Unique,
            words::PromptCache::SharedPrefix => {
                PromptCacheMode::SharedPrefix { prefix_tokens: load.prefix_tokens }
            }
        },
        canaries: load.canaries.unwrap_or(defaults.canaries),
        thinking: load.thinking,
        options: load.options.clone(),
        prompt_salt: load.prompt_salt.unwrap_or(0),
        controlled_output_policy: load.output_policy,
        request_timeout_ms: load.timeout.map_or(defaults.request_timeout_ms, |t| t.as_millis() as u64),
        seed,
        extra_body: with_canary_constraint(
            load.extra_body.as_ref().map(unescape_strings).unwrap_or(Value::Null),
            served.canary_body.filter(|_| load.canaries.unwrap_or(defaults.canaries)),
        ),
        slo: load.slo.map(|slo| Slo {
            ttft_ms: slo.ttft.map(ms),
            tpot_ms: slo.tpot.map(ms),
            e2e_ms: slo.e2e.map(ms),
            from: slo.from,
        }),
        repeat,
        connect: load.connect,
        stages: Vec::new(),
        traffic: traffic(&load.traffic),
        stopping: load.until.as_ref().map(|until| StoppingRule {
            until: until.metrics.clone(),
            within: until.within,
            min_requests: count(load.min_requests, DEFAULT_MIN_REQUESTS).clamp(1, requests),
            max_requests: requests,
            max_duration_ms: load.max_duration.map(|d| d.as_millis() as u64),
        }),
        tokenizer: served.tokenizer.cloned(),
        idle_timeout_ms: load.idle_timeout.map(|d| d.as_millis() as u64),
        stall_timeout_ms: load.stall_timeout.map(|d| d.as_millis() as u64),
        abort_on_errors: load.abort_on_errors.map(|declared| anvil_loadgen::ErrorBudget {
            share: declared.share,
            after: count(declared.after, anvil_loadgen::DEFAULT_ERROR_BUDGET_AFTER),
        }),
        keep_answers_bytes: load.keep_answers,
    };
    scored_defaults(&mut spec);
    spec.stages = load.stages.iter().enumerate().map(|(i, s)| stage(s, i as u32, load, &spec)).collect();
    spec
}

/// A scored dataset is answered greedily (temperature 0 unless set) and
/// keeps its answers (its accuracy is computed from them).
fn scored_defaults(spec: &mut CellSpec) {
    if matches!(&spec.traffic, Traffic::Dataset(d) if d.format.scored().is_some()) {
        spec.options.temperature = spec.options.temperature.or(Some(0.0));
        spec.keep_answers_bytes =
            spec.keep_answers_bytes.or(Some(decls::load::keep_answers::SCORED_DEFAULT_BYTES));
    }
}

fn count(value: Option<u64>, default: u32) -> u32 {
    value.map_or(default, |v| v.min(u64::from(u32::MAX)) as u32)
}

/// The in-flight cap, or for a closed loop the workers. Unset: a closed
/// loop has one worker; an open loop may have every request it sends in
/// flight (its cap is its request count), so the client never holds a due
/// request back and the open loop stays open (as `vllm bench serve` without
/// `--max-concurrency`); a trace [`TRACE_IN_FLIGHT_CAP`]; sessions one
/// worker per conversation.
fn in_flight_cap(load: &LoadDecl, arrival: Arrival, requests: u32, closed_default: u32) -> u32 {
    if let Some(set) = load.concurrency {
        return set.clamp(1, u64::from(u32::MAX)) as u32;
    }
    match &load.traffic {
        TrafficDecl::Trace(_) => TRACE_IN_FLIGHT_CAP,
        TrafficDecl::Sessions(s) => s.sessions.clamp(1, u64::from(u32::MAX)) as u32,
        // Closed loop: one agent; open loop: every task's calls may be in flight.
        TrafficDecl::Synthetic | TrafficDecl::Dataset(_) | TrafficDecl::Agents(_) => match arrival {
            Arrival::ClosedLoop => closed_default,
            Arrival::Poisson { .. } | Arrival::Constant { .. } => requests,
        },
    }
}

/// Defaults the preimage must name because they are not the load
/// generator's historical ones (`"resolved.KEY"` keys no recipe can write):
/// an open loop whose cap is unset was capped at one request in flight
/// before; it is now uncapped, so those cells' fingerprints moved with it.
pub fn fingerprinted_defaults(load: &LoadDecl) -> Map<String, Value> {
    let mut named = Map::new();
    let synthetic = matches!(load.traffic, TrafficDecl::Synthetic | TrafficDecl::Dataset(_));
    let open_cell = !matches!(load.arrival, decls::Arrival::Closed) && load.stages.is_empty();
    let open_stage_uncapped = load.stages.iter().any(|s| s.rate.is_some() && s.concurrency.is_none());
    if synthetic && load.concurrency.is_none() && (open_cell || open_stage_uncapped) {
        named.insert("resolved.in-flight-cap".into(), json!("open loop: every due request may be in flight"));
    }
    named
}

/// The declared traffic as the load generator reads it.
fn traffic(decl: &TrafficDecl) -> Traffic {
    match decl {
        TrafficDecl::Synthetic => Traffic::Synthetic,
        TrafficDecl::Trace(t) => Traffic::Trace(TraceSpec {
            path: t.file.clone().into(),
            format: t.format(),
            block_tokens: t.block_tokens.min(u64::from(u32::MAX)) as u32,
            time_scale: t.time_scale,
            start_ms: t.start.as_millis() as u64,
            duration_ms: t.duration.map(|d| d.as_millis() as u64),
            max_requests: t.max_requests,
            looped: t.looped,
            ignore_eos: t.ignore_eos,
        }),
        TrafficDecl::Dataset(d) => Traffic::Dataset(DatasetSpec {
            path: d.file.clone().into(),
            format: d.format(),
            min_prompt_tokens: d.min_prompt_tokens,
            max_prompt_tokens: d.max_prompt_tokens,
            truncate: d.truncate,
        }),
        TrafficDecl::Sessions(s) => Traffic::Sessions(SessionSpec {
            sessions: s.sessions.min(u64::from(u32::MAX)) as u32,
            turns: s.turns.min(u64::from(u32::MAX)) as u32,
            think_time_ms: s.think_time.as_millis() as u64,
            turn_texts: s.turn_texts.clone(),
        }),
        TrafficDecl::Agents(a) => Traffic::Agents(anvil_loadgen::AgentSpec {
            path: a.file.clone().into(),
            format: a.format(),
            block_tokens: a.block_tokens.min(u64::from(u32::MAX)) as u32,
            time_scale: a.time_scale,
            recorded_arrivals: a.recorded_arrivals,
            max_tasks: a.max_tasks,
            ignore_eos: a.ignore_eos,
            deadline_ms: a.deadline.map(|d| d.as_secs_f64() * 1000.0),
        }),
    }
}

/// Trace and dataset paths are relative to the recipe's folder (as its
/// fingerprint reads them); this makes them the run's.
pub fn resolve_paths(spec: &mut CellSpec, recipe_key: &str) {
    let dir = std::path::Path::new(recipe_key).parent().unwrap_or(std::path::Path::new("."));
    match &mut spec.traffic {
        Traffic::Trace(t) => t.path = dir.join(&t.path),
        Traffic::Dataset(d) => d.path = dir.join(&d.path),
        Traffic::Agents(a) => a.path = dir.join(&a.path),
        Traffic::Synthetic | Traffic::Sessions(_) => {}
    }
    spec.tokenizer = spec.tokenizer.as_ref().map(|t| t.resolved_against(dir));
}

/// A declared stage as the load generator runs it: with a rate, open loop
/// capped at its own or the cell's `concurrency`, else uncapped (its cap
/// is the most arrivals its window has in any repeat); without, closed
/// loop with its own or the cell's workers.
fn stage(s: &StageDecl, index: u32, load: &LoadDecl, spec: &CellSpec) -> anvil_loadgen::Stage {
    let arrival = match (s.rate, s.arrival) {
        (None, _) => Arrival::ClosedLoop,
        (Some(rate_per_s), words::ArrivalWord::Constant) => Arrival::Constant { rate_per_s },
        (Some(rate_per_s), _) => Arrival::Poisson { rate_per_s },
    };
    let duration_ms = s.duration.as_millis() as u64;
    let set = s.concurrency.or(load.concurrency);
    let concurrency = match (set, arrival) {
        (Some(c), _) => c.clamp(1, u64::from(u32::MAX)) as u32,
        (None, Arrival::ClosedLoop) => CellSpec::default().concurrency,
        (None, _) => {
            let mut stage = anvil_loadgen::Stage { arrival, concurrency: 1, duration_ms };
            let most = (0..spec.repeat)
                .map(|repeat| anvil_loadgen::stage_arrivals(&stage, spec.seed, repeat, index))
                .max()
                .unwrap_or(1);
            stage.concurrency = most.clamp(1, u32::MAX as usize) as u32;
            return stage;
        }
    };
    anvil_loadgen::Stage { arrival, concurrency, duration_ms }
}

/// Literal braces (`{{`) in `extra-body` strings; `{marker}`, `{index}` and
/// `{seed}` stay for the load generator to fill per request.
fn unescape_strings(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(unescape(s)),
        Value::Array(items) => Value::Array(items.iter().map(unescape_strings).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), unescape_strings(v))).collect())
        }
        other => other.clone(),
    }
}
