//! tool-call: the reply calls the offered tool: `finish_reason` is
//! `tool_calls`, the first call names the tool, and its `arguments` are
//! JSON valid for the tool's parameters. With a shared prefix, every
//! attempt's prompt starts with the same long system text, so later
//! attempts take the server's prefix-cache path.

use serde_json::{Value, json};

use super::{prompt_summary, send_chat};
use crate::chat::{CHAT_PATH, ChatReply, chat_body};
use crate::client::{ApiClient, CallError};
use crate::outcome::Attempt;
use crate::schema::CompiledSchema;
use crate::spec::CheckSpec;
use crate::text::quote;

const MAX_VIOLATIONS: usize = 5;

/// The tool as offered, with its name and compiled parameters schema.
pub struct OfferedTool {
    pub function: Value,
    pub name: String,
    pub parameters: CompiledSchema,
}

/// Why a tool cannot be offered.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("the tool needs a non-empty `name`")]
    NoName,
    #[error("the tool's parameters are not a valid JSON schema: {0}")]
    BadParameters(jsonschema::ValidationError<'static>),
}

impl OfferedTool {
    pub fn new(function: Value) -> Result<Self, ToolError> {
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or(ToolError::NoName)?
            .to_owned();
        // No parameters schema: any arguments object is acceptable.
        let schema = function.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"}));
        let parameters = CompiledSchema::new(&schema).map_err(ToolError::BadParameters)?;
        Ok(Self { function, name, parameters })
    }
}

/// `tool_choice` as sent: `"auto"`, `"required"`, `"none"`, or a tool name to force.
pub fn tool_choice(spec: &CheckSpec) -> Value {
    match spec.tool_choice.as_deref() {
        None | Some("auto") => json!("auto"),
        Some(mode @ ("required" | "none")) => json!(mode),
        Some(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

pub async fn attempt(
    spec: &CheckSpec,
    client: &ApiClient,
    prompt: &str,
    shared_prefix: Option<&str>,
    tool: &OfferedTool,
    index: u32,
) -> Result<Attempt, CallError> {
    let mut messages = Vec::new();
    if let Some(prefix) = shared_prefix {
        messages.push(json!({"role": "system", "content": prefix}));
    }
    messages.push(json!({"role": "user", "content": prompt}));
    let mut body = chat_body(spec, Value::Array(messages), index);
    body["tools"] = json!([{"type": "function", "function": tool.function}]);
    body["tool_choice"] = tool_choice(spec);
    let request = json!({
        "endpoint": CHAT_PATH, "stream": false, "seed": body["seed"], "max_tokens": spec.max_tokens,
        "tool": tool.name, "tool_choice": body["tool_choice"],
        "shared_prefix_chars": shared_prefix.map(|p| p.chars().count()),
        "prompt": prompt_summary(prompt),
    });
    let (mut attempt, reply) = match send_chat(client, &body, Attempt::new(index, request)).await? {
        Ok(exchange) => exchange,
        Err(failed) => return Ok(failed),
    };
    attempt.reply["cached_tokens"] = json!(reply.cached_tokens());
    Ok(judge(attempt, &reply, tool))
}

fn judge(attempt: Attempt, reply: &ChatReply, tool: &OfferedTool) -> Attempt {
    let reason = reply.finish_reason.as_deref().unwrap_or("none");
    if reason != "tool_calls" {
        let said =
            reply.content.as_deref().map(|c| format!("; content {}", quote(c, 80))).unwrap_or_default();
        return attempt.fail(format!("finish_reason is `{reason}`, not `tool_calls`{said}"));
    }
    let Some(call) = reply.tool_calls.first() else {
        return attempt.fail("finish_reason is `tool_calls` but message.tool_calls is empty");
    };
    let function = call.get("function");
    let name = function.and_then(|f| f.get("name")).and_then(Value::as_str).unwrap_or("");
    if name != tool.name {
        return attempt.fail(format!("tool_calls[0] calls `{name}`, not `{}`", tool.name));
    }
    let Some(arguments) = function.and_then(|f| f.get("arguments")).and_then(Value::as_str) else {
        return attempt.fail("tool_calls[0].function.arguments is not a string");
    };
    let parsed: Value = match serde_json::from_str(arguments) {
        Ok(parsed) => parsed,
        Err(e) => {
            return attempt.fail(format!(
                "tool_calls[0] arguments are not one JSON value ({e}): {}",
                quote(arguments, 120)
            ));
        }
    };
    let violations = tool.parameters.violations(&parsed, MAX_VIOLATIONS);
    if !violations.is_empty() {
        return attempt.fail(format!(
            "tool_calls[0] arguments violate the parameters schema: {}",
            violations.join("; ")
        ));
    }
    attempt.pass(format!("one call of `{}` with arguments valid for its parameters", tool.name))
}
