//! The inputs of one benchmark cell: the resolved workload, the servers to hit,
//! and the facts about them that the artifact must carry.

use anvil_words::words;
use serde::{Deserialize, Serialize};

/// A workload resolved for one cell (one server x one workload).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CellSpec {
    /// Cell node name.
    pub name: String,
    /// Model name sent in requests.
    pub model: String,
    pub api: Api,
    /// Target prompt length as the *server* counts tokens.
    pub context_tokens: u64,
    /// Closed-loop concurrency; for open-loop arrivals, the in-flight cap.
    pub concurrency: u32,
    pub arrival: Arrival,
    /// Measured requests per repeat.
    pub requests: u32,
    /// Unmeasured requests sent before the first repeat.
    pub warmup_requests: u32,
    /// When > 0 the prompt asks for about this many words (controlled output).
    pub response_words: u32,
    pub max_tokens: u32,
    pub prompt_cache_mode: PromptCacheMode,
    pub canaries: bool,
    pub thinking: ThinkingMode,
    /// Sampling and the other options sent in every body as written
    /// (flattened: their keys sit beside the others').
    #[serde(flatten)]
    pub options: crate::workload::options::RequestOptions,
    /// Mixed into the synthetic prompts' seed when not 0: two cells on one
    /// server with different salts share no prompt text, so neither finds
    /// the other's prompts in the server's prefix cache (a search's probes).
    pub prompt_salt: u64,
    pub controlled_output_policy: OutputPolicy,
    pub request_timeout_ms: u64,
    /// Campaign seed: drives prompts, arrival times and canary markers.
    pub seed: u64,
    /// Engine-specific JSON merged into every request body. String values may
    /// hold `{marker}`, `{index}` and `{seed}`, replaced per request.
    pub extra_body: serde_json::Value,
    pub slo: Option<Slo>,
    /// Number of measured runs (>= 1); several give CIs across repeats.
    pub repeat: u32,
    /// When the cell's connections are opened.
    pub connect: Connect,
    /// Load stages run one after another in each measured run; when set
    /// they replace `requests`, `arrival` and `concurrency` (see
    /// [`crate::workload::stages`]).
    pub stages: Vec<Stage>,
    /// Where the requests come from: synthetic prompts (the default), a
    /// trace, a dataset or multi-turn sessions (see [`crate::workload::source`]).
    pub traffic: crate::workload::traffic::Traffic,
    /// Stop when the named metrics' intervals are narrow enough (see
    /// [`crate::workload::stopping`]); `requests` is then its maximum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopping: Option<crate::workload::stopping::StoppingRule>,
    /// Stop sending once this share of the measured requests has failed
    /// (see [`crate::workload::error_budget`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_on_errors: Option<crate::workload::error_budget::ErrorBudget>,
    /// A request with no byte from the server for this long ends `stalled`
    /// (apart from `request_timeout_ms`, the whole request's bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// The server is stalled when a request stalls and none of the cell's
    /// connections received a byte for this long: the cell stops, and
    /// fails (see [`crate::send::liveness`]). Sets `idle_timeout_ms` too
    /// when that is unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_timeout_ms: Option<u64>,
    /// The served model's own tokenizer (the server's `tokenizer`): with
    /// it, prompts are built token-exact (see [`crate::workload::filler`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<anvil_tokens::TokenizerSpec>,
    /// Keep each measured request's answer, up to this many bytes of
    /// `answers.jsonl` (see [`crate::output::answers`]); unset: none kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_answers_bytes: Option<u64>,
}

impl Default for CellSpec {
    fn default() -> Self {
        Self {
            name: String::new(),
            model: String::new(),
            api: Api::Chat,
            context_tokens: 1024,
            concurrency: 1,
            arrival: Arrival::ClosedLoop,
            requests: 16,
            warmup_requests: 0,
            response_words: 0,
            max_tokens: 256,
            prompt_cache_mode: PromptCacheMode::Unique,
            canaries: true,
            thinking: ThinkingMode::Default,
            options: Default::default(),
            prompt_salt: 0,
            controlled_output_policy: OutputPolicy::Observe,
            request_timeout_ms: 600_000,
            seed: 0,
            extra_body: serde_json::Value::Null,
            slo: None,
            repeat: 1,
            connect: Connect::Ahead,
            stages: Vec::new(),
            traffic: crate::workload::traffic::Traffic::Synthetic,
            stopping: None,
            abort_on_errors: None,
            idle_timeout_ms: None,
            stall_timeout_ms: None,
            tokenizer: None,
            keep_answers_bytes: None,
        }
    }
}

words! {
    #[serde]
    /// When a cell opens its connections.
    #[derive(Default)]
    pub enum Connect {
        /// Before each measured run's clock starts, as many as it can use at
        /// once, so no request's timings hold a connect.
        #[default]
        Ahead = "ahead",
        /// When a request finds no open connection: connection setup is part
        /// of the measured timings, on purpose.
        OnDemand = "on-demand",
    }
}

words! {
    #[serde]
    /// Which OpenAI-compatible endpoint the requests use.
    #[derive(Default)]
    pub enum Api {
        /// `POST /v1/chat/completions`
        #[default]
        Chat = "chat",
        /// `POST /v1/completions`
        Completions = "completions",
        /// `POST /v1/responses`
        Responses = "responses",
    }
}

/// When requests are sent.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Arrival {
    /// `concurrency` workers, each sending its next request when the previous one ends.
    #[default]
    ClosedLoop,
    /// Open loop, exponential inter-arrival times (seeded).
    Poisson { rate_per_s: f64 },
    /// Open loop, evenly spaced sends.
    Constant { rate_per_s: f64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PromptCacheMode {
    /// Every prompt starts with a per-request random prefix: no prefix cache can hit.
    #[default]
    Unique,
    /// Every prompt shares the same first `prefix_tokens` tokens.
    SharedPrefix { prefix_tokens: u64 },
}

words! {
    #[serde]
    /// Sent as `chat_template_kwargs.enable_thinking` (nothing sent for `Default`).
    #[derive(Default)]
    pub enum ThinkingMode {
        #[default]
        Default = "default",
        On = "on",
        Off = "off",
    }
}

words! {
    #[serde]
    /// What to do with replies that miss `response_words`.
    #[derive(Default)]
    pub enum OutputPolicy {
        /// Record adherence only.
        #[default]
        Observe = "observe",
        /// Reject non-exact or truncated completions (excluded from distributions).
        Strict = "strict",
    }
}

/// Service-level objectives; a request meets them when every set limit holds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Slo {
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    /// Where the TTFT and E2E limits are measured from (TPOT has no start).
    #[serde(skip_serializing_if = "SloFrom::is_send")]
    pub from: SloFrom,
}

words! {
    #[serde]
    /// The moment an SLO's TTFT and E2E are measured from.
    #[derive(Default)]
    pub enum SloFrom {
        /// The actual send (`ttft_ms`, `e2e_ms`): what the server did.
        #[default]
        Send = "send",
        /// The scheduled send of an open-loop request (`ttft_from_schedule_ms`,
        /// `e2e_from_schedule_ms`): what a user arriving on time saw, client
        /// lag included. Closed-loop requests have no schedule: their send.
        Schedule = "schedule",
    }
}

impl SloFrom {
    pub fn is_send(&self) -> bool {
        *self == Self::Send
    }
}

/// One load stage: for `duration_ms`, open-loop arrivals at `arrival`'s
/// rate (capped at `concurrency` in flight), or `concurrency` closed-loop
/// workers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub arrival: Arrival,
    pub concurrency: u32,
    pub duration_ms: u64,
}

/// One server endpoint; several targets are replicas of one deployment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Target {
    /// Server root, e.g. `http://127.0.0.1:8000` (a trailing `/v1` is accepted).
    pub base_url: String,
    /// Sent as a bearer token; never written to any artifact.
    #[serde(skip_serializing)]
    pub api_key: Option<String>,
    pub label: String,
    /// How to trust an https server (`ca-bundle`, `tls-insecure`); plain
    /// http ignores it.
    #[serde(default, skip_serializing_if = "anvil_net::TlsSettings::is_default")]
    pub tls: anvil_net::TlsSettings,
}

/// Facts about the cell's environment that go into the artifact.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct CellContext {
    pub engine: String,
    pub simulated: bool,
    pub gpu: Option<String>,
    pub serve_flags: serde_json::Value,
    pub run_id: String,
    pub source_recipe: Option<String>,
    pub max_context_tokens: Option<u64>,
    pub balance: Balance,
    /// How many threads the load generator spreads the cell over (runtime
    /// workers and sender lanes; `--loadgen-workers`). How it is measured,
    /// not what: it is in the artifact, not the fingerprint.
    pub loadgen_workers: u32,
    /// The server's prefix-cache block in tokens (its own `/metrics`, or its
    /// engine's default), to set its cached tokens against the ideal ones
    /// in whole blocks.
    pub cache_block_tokens: Option<u64>,
}

impl CellContext {
    /// [`CellContext::loadgen_workers`], at least one.
    pub fn workers(&self) -> u32 {
        self.loadgen_workers.max(1)
    }
}

impl Default for CellContext {
    fn default() -> Self {
        Self {
            engine: String::new(),
            simulated: false,
            gpu: None,
            serve_flags: serde_json::Value::Null,
            run_id: String::new(),
            source_recipe: None,
            max_context_tokens: None,
            balance: Balance::RoundRobin,
            loadgen_workers: 1,
            cache_block_tokens: None,
        }
    }
}

words! {
    #[serde]
    /// How requests are spread over several targets.
    #[derive(Default)]
    pub enum Balance {
        #[default]
        RoundRobin = "round_robin",
        LeastOutstanding = "least_outstanding",
    }
}

/// Live progress of the measured requests, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Progress {
    pub done: u32,
    pub total: u32,
    pub failed: u32,
    /// Completion tokens so far divided by elapsed measured time.
    pub tok_s: f64,
}
