//! anvil-checks: functional checks against an OpenAI-compatible server.
//!
//! A recipe's `check "tp2-json" server="sglang-tp2" type="json-schema" { … }`
//! becomes a [`CheckSpec`]; [`run_check`] sends its requests to a
//! [`Target`] and returns a [`CheckOutcome`] with pass/fail, one line for
//! people, and evidence detailed enough for anyone to re-judge the result.
//!
//! A wrong reply is a failed check (`Ok` with `passed == false`); `Err` is
//! kept for a check that could not run at all: an unusable spec, or a
//! server that cannot be reached. See `docs/checks.md`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), anvil_checks::CheckError> {
//! use anvil_checks::{CheckSpec, CheckType, Target, run_check};
//! let spec = CheckSpec::new("tp2-json", CheckType::JsonSchema, "qwen3-8b");
//! let outcome = run_check(&spec, &Target::new("http://127.0.0.1:30000")).await?;
//! println!("{}: {}", if outcome.passed { "PASS" } else { "FAIL" }, outcome.detail);
//! # Ok(()) }
//! ```

mod canary_marker;
mod chat;
mod checks;
mod client;
mod json_reply;
mod outcome;
mod prompts;
mod schema;
mod spec;
mod sse;
mod text;

use serde_json::json;

pub use outcome::{Attempt, CheckOutcome};
pub use spec::{CheckSpec, CheckType, Target};

use checks::tool_call::OfferedTool;
use client::ApiClient;
use schema::CompiledSchema;

/// Why a spec cannot run (caught before any request is sent).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    #[error("check `{check}`: `{field}` must be at least 1")]
    Zero { check: String, field: &'static str },
    #[error("check `{check}`: the schema is not a valid JSON schema: {message}")]
    BadSchema { check: String, message: String },
    #[error("check `{check}`: {message}")]
    BadTool { check: String, message: String },
}

/// Check a spec without contacting any server (for recipe loading).
pub fn validate(spec: &CheckSpec) -> Result<(), SpecError> {
    let zero = |field| SpecError::Zero { check: spec.name.clone(), field };
    if spec.requests == 0 {
        return Err(zero("requests"));
    }
    if spec.concurrency == 0 {
        return Err(zero("concurrency"));
    }
    if spec.max_tokens == 0 {
        return Err(zero("max-tokens"));
    }
    match spec.check_type {
        CheckType::JsonSchema => compiled_schema(spec).map(drop),
        CheckType::ToolCall => offered_tool(spec).map(drop),
        _ => Ok(()),
    }
}

fn compiled_schema(spec: &CheckSpec) -> Result<(serde_json::Value, CompiledSchema), SpecError> {
    let schema = spec.schema.clone().unwrap_or_else(prompts::default_schema);
    let compiled = CompiledSchema::new(&schema)
        .map_err(|e| SpecError::BadSchema { check: spec.name.clone(), message: e.to_string() })?;
    Ok((schema, compiled))
}

fn offered_tool(spec: &CheckSpec) -> Result<OfferedTool, SpecError> {
    let function = spec.tool.clone().unwrap_or_else(prompts::default_tool);
    OfferedTool::new(function)
        .map_err(|e| SpecError::BadTool { check: spec.name.clone(), message: e.to_string() })
}

/// Why a check could not run at all; the message holds the whole chain of
/// causes.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The spec cannot run ([`SpecError`]).
    #[error("{0}")]
    InvalidSpec(String),
    /// No connection to the server.
    #[error("{0}")]
    Unreachable(String),
    /// Anything else that kept it from running (the HTTP client could not be built).
    #[error("{0}")]
    CouldNotRun(String),
}

impl CheckError {
    /// The word a failed check's evidence files it under.
    pub fn class(&self) -> &'static str {
        match self {
            CheckError::InvalidSpec(_) => "invalid_spec",
            CheckError::Unreachable(_) => "unreachable",
            CheckError::CouldNotRun(_) => "could_not_run",
        }
    }

    fn of(stopped: &Stopped) -> CheckError {
        let message = client::error_chain(stopped);
        match stopped {
            Stopped::Spec(_) => CheckError::InvalidSpec(message),
            Stopped::Call { source: client::CallError::Unreachable { .. }, .. } => {
                CheckError::Unreachable(message)
            }
            Stopped::Client(_) | Stopped::Call { .. } => CheckError::CouldNotRun(message),
        }
    }
}

/// What stopped a check before it finished; its message is the error
/// and its chain of causes ([`client::error_chain`]).
#[derive(Debug, thiserror::Error)]
enum Stopped {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("cannot build the HTTP client")]
    Client(#[source] anvil_net::NetError),
    /// A request that could not be made (a server that cannot be reached).
    #[error("check `{check}` ({check_type}) against {url}")]
    Call {
        check: String,
        check_type: CheckType,
        url: String,
        #[source]
        source: client::CallError,
    },
}

/// Run `spec` against `target`. `Err` only when the check cannot run (an
/// invalid spec, a server that cannot be reached); any wrong answer from
/// the server is `Ok` with `passed == false` and evidence saying why.
pub async fn run_check(spec: &CheckSpec, target: &Target) -> Result<CheckOutcome, CheckError> {
    run_check_keeping(spec, target).await.map_err(|unfinished| unfinished.error)
}

/// A check that could not complete: why, and what it judged before it
/// stopped (a server that went away at the third attempt answered two).
#[derive(Debug)]
pub struct Unfinished {
    pub error: CheckError,
    /// What stopped it: [`CheckError::class`].
    pub class: &'static str,
    /// The attempts made before it stopped, folded as an outcome that did
    /// not pass (its evidence names the error under `stopped`).
    pub partial: CheckOutcome,
}

/// [`run_check`], keeping the attempts made before an error stopped it.
pub async fn run_check_keeping(spec: &CheckSpec, target: &Target) -> Result<CheckOutcome, Unfinished> {
    let mut settings = json!({});
    let mut attempts = Vec::new();
    match run_attempts(spec, target, &mut settings, &mut attempts).await {
        Ok(()) => Ok(outcome::summarize(spec, target, settings, attempts)),
        Err(error) => {
            let mut partial = outcome::summarize(spec, target, settings, attempts);
            partial.passed = false;
            partial.evidence["passed"] = json!(false);
            partial.evidence["stopped"] = json!(client::error_chain(&error));
            let error = CheckError::of(&error);
            Err(Unfinished { class: error.class(), error, partial })
        }
    }
}

async fn run_attempts(
    spec: &CheckSpec,
    target: &Target,
    settings: &mut serde_json::Value,
    attempts: &mut Vec<Attempt>,
) -> Result<(), Stopped> {
    validate(spec)?;
    let client = ApiClient::new(target, spec.timeout_ms).map_err(Stopped::Client)?;
    let prompt = spec.prompt.clone().unwrap_or_else(|| prompts::default_prompt(spec.check_type).to_owned());
    let context = |source| Stopped::Call {
        check: spec.name.clone(),
        check_type: spec.check_type,
        url: target.base_url.clone(),
        source,
    };
    *settings = json!({
        "prompt": prompt, "requests": spec.requests, "max_tokens": spec.max_tokens,
        "thinking": spec.thinking, "timeout_ms": spec.timeout_ms, "seed": spec.seed,
    });

    match spec.check_type {
        CheckType::Smoke => {
            for index in 0..spec.requests {
                attempts.push(checks::smoke::attempt(spec, &client, &prompt, index).await.map_err(context)?);
            }
        }
        CheckType::JsonSchema => {
            let (schema, compiled) = compiled_schema(spec)?;
            settings["schema"] = schema.clone();
            for index in 0..spec.requests {
                let attempt = checks::json_schema::attempt(spec, &client, &prompt, &schema, &compiled, index);
                attempts.push(attempt.await.map_err(context)?);
            }
        }
        CheckType::ToolCall => {
            let tool = offered_tool(spec)?;
            let prefix = (spec.shared_prefix_tokens > 0)
                .then(|| prompts::shared_prefix_text(spec.shared_prefix_tokens));
            settings["tool"] = tool.function.clone();
            settings["tool_choice"] = checks::tool_call::tool_choice(spec);
            settings["shared_prefix_tokens"] = json!(spec.shared_prefix_tokens);
            settings["shared_prefix_text"] = json!(prefix.as_deref().map(|p| text::excerpt_with(p, 200, 0)));
            for index in 0..spec.requests {
                let attempt =
                    checks::tool_call::attempt(spec, &client, &prompt, prefix.as_deref(), &tool, index);
                attempts.push(attempt.await.map_err(context)?);
            }
        }
        CheckType::Responses => {
            for index in 0..spec.requests {
                attempts
                    .push(checks::responses::attempt(spec, &client, &prompt, index).await.map_err(context)?);
            }
        }
        CheckType::CanaryIsolation => {
            settings["concurrency"] = json!(spec.concurrency);
            *attempts = checks::canary_isolation::run(spec, &client, &prompt).await.map_err(context)?;
        }
    }
    Ok(())
}
