//! Workload settings: what a cell sends and how. A `workload` declares them
//! once; a `cell` takes them in and may override any of them.

use std::time::Duration;

use anvil_loadgen::{OptionKind, RequestOptions};
use serde_json::Value;

use super::super::problem::Problems;
use super::super::schema::{FieldSpec, Shape};
use super::super::settings::{Draft, settings};
mod stage;
pub use stage::StageDecl;
mod abort_on_errors;
pub mod keep_answers;
mod until;
pub use abort_on_errors::AbortOnErrorsDecl;
pub use until::UntilDecl;
pub mod traffic;
use crate::words::{Api, ArrivalWord, Balance, OutputPolicy, PromptCache, ThinkingMode};
pub use crate::words::{Connect, SloFrom};
pub use traffic::TrafficDecl;

/// `connect`: when a cell opens its connections.
pub const CONNECT_WORDS: &[&str] = Connect::WORDS;

settings! {
    /// Unset settings stay `None`: the load generator's defaults apply, and the
    /// campaign report says what was set.
    #[derive(Debug, Clone)]
    pub struct LoadDecl {
        pub api: Api = "api" as Word(Api) or Api::Chat,
        pub context_tokens: Option<u64> = "context-tokens" as Int,
        pub concurrency: Option<u64> = "concurrency" as Int,
        pub requests: Option<u64> = "requests" as Int,
        pub warmup_requests: Option<u64> = "warmup-requests" as Int,
        pub response_words: Option<u64> = "response-words" as Int,
        pub max_tokens: Option<u64> = "max-tokens" as Int,
        pub prompt_cache: PromptCache = "prompt-cache" as Word(PromptCache) or PromptCache::Unique,
        pub prefix_tokens: u64 = "prefix-tokens" as Int or 0,
        pub canaries: Option<bool> = "canaries" as Bool,
        pub thinking: ThinkingMode = "thinking" as Word(ThinkingMode) or ThinkingMode::Default,
        /// Mixed into the synthetic prompts' seed (unset: the campaign seed alone).
        pub prompt_salt: Option<u64> = "prompt-salt" as Int,
        pub output_policy: OutputPolicy = "output-policy" as Word(OutputPolicy) or OutputPolicy::Observe,
        pub timeout: Option<Duration> = "timeout" as Duration,
        /// A request with no byte from the server for this long ends `stalled`.
        pub idle_timeout: Option<Duration> = "idle-timeout" as Duration,
        /// A request stalled and no connection of the cell got a byte for
        /// this long: the server is stalled, the cell fails, the server restarts.
        pub stall_timeout: Option<Duration> = "stall-timeout" as Duration,
        /// Closed loop, or the kind of gaps between open-loop sends.
        key arrival = "arrival" as Word(ArrivalWord),
        /// Requests per second of an open loop.
        key rate = "rate" as Number,
        pub arrival: Arrival,
        pub repeat: Option<u64> = "repeat" as Int,
        /// Stop when these metrics' intervals are narrow enough.
        key until = "until" as StringsWithProps,
        pub until: Option<UntilDecl>,
        /// A stopping rule's first look (unset: 50).
        pub min_requests: Option<u64> = "min-requests" as Int,
        /// A stopping rule's budget (unset: `requests`).
        pub max_requests: Option<u64> = "max-requests" as Int,
        /// A stopping rule's time bound on the measured run.
        pub max_duration: Option<Duration> = "max-duration" as Duration,
        /// Stop once this share of the measured requests has failed.
        key abort_on_errors = "abort-on-errors" as StringsWithProps,
        pub abort_on_errors: Option<AbortOnErrorsDecl>,
        /// Per-request latency limits (goodput).
        key slo = "slo" as Props,
        pub slo: Option<SloDecl>,
        /// Extra JSON merged into every request body (strings may hold
        /// `{marker}`, `{index}`, `{seed}`, filled per request).
        pub extra_body: Option<Value> = many "extra-body" as Block,
        pub balance: Balance = "balance" as Word(Balance) or Balance::RoundRobin,
        /// Unset: `ahead`.
        pub connect: Connect = "connect" as Word(Connect) or Connect::Ahead,
        /// One load stage (`stage rate=5 duration="20s"`).
        key stage = many "stage" as Records,
        /// Load stages, in order; empty: one phase of `requests`.
        pub stages: Vec<StageDecl>,
        /// Replay a trace file.
        key trace = "trace" as Headed,
        /// Sample a dataset file.
        key dataset = "dataset" as Headed,
        /// Multi-turn sessions.
        key sessions = "sessions" as Headed,
        /// Agent runs replayed as graphs of calls.
        key agents = "agents" as Headed,
        /// Where the requests come from (a trace, a dataset, sessions, agent runs; else synthetic).
        pub traffic: TrafficDecl,
        /// Files the traffic reads, relative to the recipe's folder.
        pub reads: Vec<String>,
        /// Options sent in every request body as written (their settings
        /// are the load generator's [`anvil_loadgen::REQUEST_OPTIONS`]).
        pub options: RequestOptions,
        /// Keep each measured request's answer, up to this many bytes.
        key keep_answers = "keep-answers" as Str,
        pub keep_answers: Option<u64>,
    }
    /// The fields `build` makes by hand.
    struct LoadRest;
}

/// The field-table entries of the load generator's request options.
pub fn request_option_fields() -> impl Iterator<Item = FieldSpec> {
    anvil_loadgen::REQUEST_OPTIONS.iter().map(|option| {
        let shape = match option.kind {
            OptionKind::Int => Shape::Int,
            OptionKind::Number => Shape::Number,
            OptionKind::Bool => Shape::Bool,
            OptionKind::Str => Shape::Str,
        };
        FieldSpec::new(option.setting, shape)
    })
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
    let arrival_word = s.str(key::arrival).and_then(ArrivalWord::from_word).unwrap_or(ArrivalWord::Closed);
    let staged = s.contains(key::stage);
    let arrival = match (arrival_word, s.f64(key::rate)) {
        (ArrivalWord::Closed, _) => Arrival::Closed,
        // Each stage has its own rate; the word says which kind of gaps.
        (_, None) if staged => Arrival::Closed,
        (ArrivalWord::Poisson, Some(rate_per_s)) => Arrival::Poisson { rate_per_s },
        (ArrivalWord::Constant, Some(rate_per_s)) => Arrival::Constant { rate_per_s },
        (_, None) if draft.from_workload.iter().any(|k| k == key::arrival) => Arrival::Closed,
        // `rate "{search.X.max_rate}"`: settled (and checked) once the search has answered.
        (_, None) if s.str(key::rate).is_some_and(crate::recipe::result_refs::is_whole_placeholder) => {
            Arrival::Closed
        }
        (_, None) => {
            problems.push(
                draft
                    .problem_at(
                        key::arrival,
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
    let slo = s.contains(key::slo).then(|| {
        let props = s.props(key::slo);
        let limit = |prop: &str| {
            props.get(prop).and_then(Value::as_str).and_then(|t| super::super::schema::parse_duration(t).ok())
        };
        let keys = stage::Keys { slo: key::slo, stage: key::stage, requests: key::requests, rate: key::rate };
        let from = stage::slo_from(draft, &keys, props.get("from"), problems);
        SloDecl { ttft: limit("ttft"), tpot: limit("tpot"), e2e: limit("e2e"), from }
    });
    let keys = stage::Keys { slo: key::slo, stage: key::stage, requests: key::requests, rate: key::rate };
    let stages = stage::build(draft, &keys, arrival_word, problems);
    let keys = traffic::Keys {
        trace: key::trace,
        dataset: key::dataset,
        sessions: key::sessions,
        agents: key::agents,
        stage: key::stage,
    };
    let (traffic, reads) = traffic::build(draft, &keys, problems);
    let options = RequestOptions::from_settings(|name| s.get(name));
    let keys = until::Keys {
        until: key::until,
        bounds: [key::min_requests, key::max_requests, key::max_duration],
        repeat: key::repeat,
        stage: key::stage,
        sessions: key::sessions,
        agents: key::agents,
    };
    let until = until::build(draft, &keys, problems);
    let abort_on_errors = abort_on_errors::build(draft, key::abort_on_errors, problems);
    let keep_answers = keep_answers::build(draft, key::keep_answers, problems);
    LoadDecl::from_settings(
        s,
        LoadRest { arrival, slo, stages, traffic, reads, options, until, abort_on_errors, keep_answers },
    )
}
