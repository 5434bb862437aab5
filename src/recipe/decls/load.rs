//! Workload settings: what a cell sends and how. A `workload` declares them
//! once; a `cell` takes them in and may override any of them.

use std::time::Duration;

use serde_json::Value;

use super::super::decl::Draft;
use super::super::problem::Problems;
use super::super::schema::{FieldSpec, Shape, field, many};
mod stage;
pub use stage::{SloFrom, StageDecl};
pub mod traffic;
use super::super::words::{Api, ArrivalWord, Balance, OutputPolicy, PromptCache, Thinking};
pub use traffic::TrafficDecl;

pub const FIELDS: &[FieldSpec] = &[
    field("api", Shape::OneOf(Api::WORDS)),
    field("context-tokens", Shape::Int),
    field("concurrency", Shape::Int),
    field("requests", Shape::Int),
    field("warmup-requests", Shape::Int),
    field("response-words", Shape::Int),
    field("max-tokens", Shape::Int),
    field("prompt-cache", Shape::OneOf(PromptCache::WORDS)),
    field("prefix-tokens", Shape::Int),
    field("canaries", Shape::Bool),
    field("thinking", Shape::OneOf(Thinking::WORDS)),
    field("temperature", Shape::Number),
    field("top-p", Shape::Number),
    field("sampling-seed", Shape::Int),
    field("prompt-salt", Shape::Int),
    field("output-policy", Shape::OneOf(OutputPolicy::WORDS)),
    field("timeout", Shape::Duration),
    field("arrival", Shape::OneOf(ArrivalWord::WORDS)),
    field("rate", Shape::Number),
    field("repeat", Shape::Int),
    field("slo", Shape::Props),
    many("extra-body", Shape::Block),
    field("balance", Shape::OneOf(Balance::WORDS)),
    field("connect", Shape::OneOf(CONNECT_WORDS)),
    many("stage", Shape::Records),
    field("trace", Shape::Headed),
    field("dataset", Shape::Headed),
    field("sessions", Shape::Headed),
];

/// `connect`: when a cell opens its connections.
pub const CONNECT_WORDS: &[&str] = &["ahead", "on-demand"];

/// When a cell's connections are opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConnectWord {
    /// Before each measured run's clock starts (the default).
    #[default]
    Ahead,
    /// When a request finds none open: connection setup is measured.
    OnDemand,
}

/// Unset settings stay `None`: the load generator's defaults apply, and the
/// campaign report says what was set.
#[derive(Debug, Clone)]
pub struct LoadDecl {
    pub api: Api,
    pub context_tokens: Option<u64>,
    pub concurrency: Option<u64>,
    pub requests: Option<u64>,
    pub warmup_requests: Option<u64>,
    pub response_words: Option<u64>,
    pub max_tokens: Option<u64>,
    pub prompt_cache: PromptCache,
    pub prefix_tokens: u64,
    pub canaries: Option<bool>,
    pub thinking: Thinking,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub sampling_seed: Option<u64>,
    /// Mixed into the synthetic prompts' seed (unset: the campaign seed alone).
    pub prompt_salt: Option<u64>,
    pub output_policy: OutputPolicy,
    pub timeout: Option<Duration>,
    pub arrival: Arrival,
    pub repeat: Option<u64>,
    pub slo: Option<SloDecl>,
    /// Extra JSON merged into every request body (strings may hold
    /// `{marker}`, `{index}`, `{seed}`, filled per request).
    pub extra_body: Option<Value>,
    pub balance: Balance,
    /// Unset: `ahead`.
    pub connect: ConnectWord,
    /// Load stages, in order; empty: one phase of `requests`.
    pub stages: Vec<StageDecl>,
    /// Where the requests come from (a trace, a dataset, sessions; else synthetic).
    pub traffic: TrafficDecl,
    /// Files the traffic reads, relative to the recipe's folder.
    pub reads: Vec<String>,
}

/// When requests are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// `concurrency` clients, each sending its next request when the last ends.
    Closed,
    Poisson {
        rate_per_s: f64,
    },
    Constant {
        rate_per_s: f64,
    },
}

/// `slo ttft="2s" tpot="50ms"`: per-request latency limits (goodput).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SloDecl {
    pub ttft: Option<Duration>,
    pub tpot: Option<Duration>,
    pub e2e: Option<Duration>,
    /// Whether TTFT and E2E count from the actual or the scheduled send.
    pub from: SloFrom,
}

pub(super) fn build(draft: &Draft, problems: &mut Problems) -> LoadDecl {
    let s = &draft.settings;
    let word = |key: &str| s.str(key);
    let arrival_word = word("arrival").and_then(ArrivalWord::from_word).unwrap_or(ArrivalWord::Closed);
    let staged = s.contains("stage");
    let arrival = match (arrival_word, s.f64("rate")) {
        (ArrivalWord::Closed, _) => Arrival::Closed,
        // Each stage has its own rate; the word says which kind of gaps.
        (_, None) if staged => Arrival::Closed,
        (ArrivalWord::Poisson, Some(rate_per_s)) => Arrival::Poisson { rate_per_s },
        (ArrivalWord::Constant, Some(rate_per_s)) => Arrival::Constant { rate_per_s },
        (_, None) if draft.from_workload.iter().any(|k| k == "arrival") => Arrival::Closed,
        // `rate "{search.X.max_rate}"`: settled (and checked) once the search has answered.
        (_, None) if s.str("rate").is_some_and(crate::recipe::result_refs::is_whole_placeholder) => {
            Arrival::Closed
        }
        (_, None) => {
            problems.push(
                draft
                    .problem_at(
                        "arrival",
                        format!(
                            "{} `{}`: an open-loop arrival needs `rate` (requests per second)",
                            draft.kind, draft.name
                        ),
                    )
                    .label("no rate"),
            );
            Arrival::Closed
        }
    };
    let slo = s.contains("slo").then(|| {
        let props = s.props("slo");
        let limit = |key: &str| {
            props.get(key).and_then(Value::as_str).and_then(|t| super::super::parse_duration(t).ok())
        };
        let from = stage::slo_from(draft, props.get("from"), problems);
        SloDecl { ttft: limit("ttft"), tpot: limit("tpot"), e2e: limit("e2e"), from }
    });
    let stages = stage::build(draft, arrival_word, problems);
    let (traffic, reads) = traffic::build(draft, problems);
    LoadDecl {
        api: word("api").and_then(Api::from_word).unwrap_or(Api::Chat),
        context_tokens: s.u64("context-tokens"),
        concurrency: s.u64("concurrency"),
        requests: s.u64("requests"),
        warmup_requests: s.u64("warmup-requests"),
        response_words: s.u64("response-words"),
        max_tokens: s.u64("max-tokens"),
        prompt_cache: word("prompt-cache").and_then(PromptCache::from_word).unwrap_or(PromptCache::Unique),
        prefix_tokens: s.u64("prefix-tokens").unwrap_or(0),
        canaries: s.bool("canaries"),
        thinking: word("thinking").and_then(Thinking::from_word).unwrap_or(Thinking::Default),
        temperature: s.f64("temperature"),
        top_p: s.f64("top-p"),
        sampling_seed: s.u64("sampling-seed"),
        prompt_salt: s.u64("prompt-salt"),
        output_policy: word("output-policy")
            .and_then(OutputPolicy::from_word)
            .unwrap_or(OutputPolicy::Observe),
        timeout: s.duration("timeout"),
        arrival,
        repeat: s.u64("repeat"),
        slo,
        extra_body: s.get("extra-body").cloned(),
        balance: word("balance").and_then(Balance::from_word).unwrap_or(Balance::RoundRobin),
        connect: match word("connect") {
            Some("on-demand") => ConnectWord::OnDemand,
            _ => ConnectWord::Ahead,
        },
        stages,
        traffic,
        reads,
    }
}
