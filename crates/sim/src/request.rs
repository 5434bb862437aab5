//! Request bodies of the three generation endpoints, normalized into one
//! `Generation`: what to prompt the engine with and what kind of reply to
//! plan. Unknown request fields (temperature, top_p, ...) are accepted and
//! ignored, as real engines accept them.

use serde::Deserialize;
use serde_json::Value;

use crate::api_error::ApiError;
use crate::profile::SimProfile;
use crate::rng::derive_seed;
use crate::tokenizer::{
    BOS_TOKENS, MESSAGE_OVERHEAD_TOKENS, PromptTokenizer, PromptTokens, REPLY_PRIMER_TOKENS,
};

/// A parser from a request body to a `Generation`.
pub type SimProfileParser = fn(&[u8], &SimProfile) -> Result<Generation, ApiError>;

/// The model name listed by `/v1/models` when the profile sets none.
pub const DEFAULT_MODEL_NAME: &str = "anvil-sim";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Chat,
    Completions,
    Responses,
}

impl Endpoint {
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Chat => "/v1/chat/completions",
            Endpoint::Completions => "/v1/completions",
            Endpoint::Responses => "/v1/responses",
        }
    }
}

/// One generation request, whatever endpoint it came from.
#[derive(Debug, Clone)]
pub struct Generation {
    pub endpoint: Endpoint,
    /// Model name echoed in responses.
    pub model: String,
    pub stream: bool,
    pub include_usage: bool,
    /// Seed of every random choice for this request.
    pub seed: u64,
    pub prompt: PromptTokens,
    /// The last user message (where benchmarks put their instructions).
    pub instructions: String,
    pub max_tokens: Option<u32>,
    /// `ignore_eos`: generate until `max_tokens`, as vLLM and llama.cpp do.
    pub ignore_eos: bool,
    pub thinking: bool,
    /// `response_format.json_schema.schema` when structured output is asked for.
    pub response_schema: Option<Value>,
    /// The tool to call (`{"name", "parameters"}`) when tools are offered.
    pub tool: Option<Value>,
    /// `return_token_ids` (vLLM's): each streamed chat chunk carries the ids
    /// of its tokens.
    pub return_token_ids: bool,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

#[derive(Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Value,
}

#[derive(Deserialize)]
struct ChatBody {
    model: Option<String>,
    messages: Vec<ChatMessage>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    max_tokens: Option<u32>,
    max_completion_tokens: Option<u32>,
    ignore_eos: Option<bool>,
    seed: Option<i64>,
    response_format: Option<Value>,
    tools: Option<Vec<Value>>,
    tool_choice: Option<Value>,
    chat_template_kwargs: Option<Value>,
    return_token_ids: Option<bool>,
}

#[derive(Deserialize)]
struct CompletionBody {
    model: Option<String>,
    prompt: Value,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    max_tokens: Option<u32>,
    ignore_eos: Option<bool>,
    seed: Option<i64>,
}

#[derive(Deserialize)]
struct ResponsesBody {
    model: Option<String>,
    input: Value,
    instructions: Option<String>,
    stream: Option<bool>,
    max_output_tokens: Option<u32>,
    reasoning: Option<Value>,
    seed: Option<i64>,
}

fn parse_json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid request body: {e}")))
}

/// Text of a message `content`: a string, or the text parts of an array.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str).or(part.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The conversation as (role, text) pairs, shared by chat and responses.
struct Conversation {
    messages: Vec<(String, String)>,
}

impl Conversation {
    fn last_user_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|(role, _)| role == "user")
            .or(self.messages.last())
            .map(|(_, text)| text.clone())
            .unwrap_or_default()
    }

    /// Tokens under the chat-template model: role markers per message,
    /// the message text, then the reply primer.
    fn tokens(&self, profile: &SimProfile) -> PromptTokens {
        let mut tokenizer = PromptTokenizer::new(profile.prefix_cache_block_tokens);
        for (role, text) in &self.messages {
            tokenizer.push_special(role, MESSAGE_OVERHEAD_TOKENS);
            tokenizer.push_text(text);
        }
        tokenizer.push_special("assistant", REPLY_PRIMER_TOKENS);
        tokenizer.finish()
    }

    fn seed(&self, profile: &SimProfile, request_seed: Option<i64>) -> u64 {
        let profile_seed = profile.seed.to_le_bytes();
        let request_seed = request_seed.map(i64::to_le_bytes);
        let mut parts: Vec<&[u8]> = vec![&profile_seed, request_seed.as_ref().map_or(b"none", |s| s)];
        for (role, text) in &self.messages {
            parts.push(role.as_bytes());
            parts.push(text.as_bytes());
        }
        derive_seed(&parts)
    }
}

/// The model name to echo; 404 when the profile names a model and the
/// request asks for another.
fn resolve_model(profile: &SimProfile, requested: Option<String>) -> Result<String, ApiError> {
    match (&profile.model, requested) {
        (Some(served), Some(asked)) if *served != asked => {
            Err(ApiError::not_found(format!("The model `{asked}` does not exist.")))
        }
        (_, Some(asked)) => Ok(asked),
        (Some(served), None) => Ok(served.clone()),
        (None, None) => Ok(DEFAULT_MODEL_NAME.to_owned()),
    }
}

fn check_lengths(
    profile: &SimProfile,
    prompt: &PromptTokens,
    max_tokens: Option<u32>,
) -> Result<(), ApiError> {
    if max_tokens == Some(0) {
        return Err(ApiError::bad_param("max_tokens", "max_tokens must be at least 1, got 0."));
    }
    let requested = u64::from(prompt.count) + u64::from(max_tokens.unwrap_or(0));
    if requested > u64::from(profile.max_model_len) {
        return Err(ApiError::bad_request(format!(
            "This model's maximum context length is {} tokens. However, you requested {requested} tokens \
             ({} in the messages, {} in the completion).",
            profile.max_model_len,
            prompt.count,
            max_tokens.unwrap_or(0)
        )));
    }
    Ok(())
}

/// `chat_template_kwargs.enable_thinking` if given, else the profile default.
fn thinking_flag(kwargs: Option<&Value>, default: bool) -> bool {
    kwargs
        .and_then(|k| k.get("enable_thinking").or_else(|| k.get("thinking")))
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

/// The schema of `{"type":"json_schema","json_schema":{"schema":...}}`;
/// `json_object` asks for any object.
fn response_schema(format: Option<&Value>) -> Result<Option<Value>, ApiError> {
    let Some(format) = format else { return Ok(None) };
    match format.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            format.get("json_schema").and_then(|s| s.get("schema")).cloned().map(Some).ok_or_else(|| {
                ApiError::bad_param("response_format", "response_format.json_schema.schema is required")
            })
        }
        Some("json_object") => Ok(Some(serde_json::json!({"type": "object"}))),
        Some("text") | None => Ok(None),
        Some(other) => {
            Err(ApiError::bad_param("response_format", format!("unsupported response_format type `{other}`")))
        }
    }
}

/// The tool the reply calls, or `None` when there are no tools or
/// `tool_choice` is "none". Returns the tool's `function` object.
fn chosen_tool(tools: Option<&[Value]>, choice: Option<&Value>) -> Result<Option<Value>, ApiError> {
    let Some(tools) = tools.filter(|t| !t.is_empty()) else { return Ok(None) };
    let function_of = |tool: &Value| tool.get("function").cloned().unwrap_or_else(|| tool.clone());
    match choice {
        Some(Value::String(mode)) if mode == "none" => Ok(None),
        Some(Value::Object(named)) => {
            let wanted =
                named.get("function").and_then(|f| f.get("name")).and_then(Value::as_str).ok_or_else(
                    || ApiError::bad_param("tool_choice", "tool_choice.function.name is required"),
                )?;
            tools
                .iter()
                .map(function_of)
                .find(|f| f.get("name").and_then(Value::as_str) == Some(wanted))
                .map(Some)
                .ok_or_else(|| ApiError::bad_param("tool_choice", format!("tool `{wanted}` is not in tools")))
        }
        _ => {
            let first = function_of(&tools[0]);
            if first.get("name").and_then(Value::as_str).is_none() {
                return Err(ApiError::bad_param("tools", "each tool needs function.name"));
            }
            Ok(Some(first))
        }
    }
}

pub fn parse_chat(body: &[u8], profile: &SimProfile) -> Result<Generation, ApiError> {
    let body: ChatBody = parse_json(body)?;
    if body.messages.is_empty() {
        return Err(ApiError::bad_param("messages", "messages must not be empty"));
    }
    let conversation = Conversation {
        messages: body.messages.iter().map(|m| (m.role.clone(), content_text(&m.content))).collect(),
    };
    let prompt = conversation.tokens(profile);
    let max_tokens = body.max_completion_tokens.or(body.max_tokens);
    check_lengths(profile, &prompt, max_tokens)?;
    Ok(Generation {
        endpoint: Endpoint::Chat,
        model: resolve_model(profile, body.model)?,
        stream: body.stream.unwrap_or(false),
        include_usage: body.stream_options.and_then(|o| o.include_usage).unwrap_or(false),
        seed: conversation.seed(profile, body.seed),
        instructions: conversation.last_user_text(),
        prompt,
        max_tokens,
        ignore_eos: body.ignore_eos.unwrap_or(false),
        thinking: thinking_flag(body.chat_template_kwargs.as_ref(), profile.thinking),
        response_schema: response_schema(body.response_format.as_ref())?,
        tool: chosen_tool(body.tools.as_deref(), body.tool_choice.as_ref())?,
        return_token_ids: body.return_token_ids.unwrap_or(false),
    })
}

pub fn parse_completion(body: &[u8], profile: &SimProfile) -> Result<Generation, ApiError> {
    let body: CompletionBody = parse_json(body)?;
    let text = match &body.prompt {
        Value::String(text) => text.clone(),
        Value::Array(items) if items.iter().all(Value::is_string) && !items.is_empty() => {
            items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n")
        }
        _ => {
            return Err(ApiError::bad_param(
                "prompt",
                "prompt must be a string or a non-empty list of strings",
            ));
        }
    };
    let mut tokenizer = PromptTokenizer::new(profile.prefix_cache_block_tokens);
    tokenizer.push_special("bos", BOS_TOKENS);
    tokenizer.push_text(&text);
    let prompt = tokenizer.finish();
    check_lengths(profile, &prompt, body.max_tokens)?;
    let conversation = Conversation { messages: vec![("prompt".into(), text.clone())] };
    Ok(Generation {
        endpoint: Endpoint::Completions,
        model: resolve_model(profile, body.model)?,
        stream: body.stream.unwrap_or(false),
        include_usage: body.stream_options.and_then(|o| o.include_usage).unwrap_or(false),
        seed: conversation.seed(profile, body.seed),
        instructions: text,
        prompt,
        max_tokens: body.max_tokens,
        ignore_eos: body.ignore_eos.unwrap_or(false),
        thinking: false,
        response_schema: None,
        tool: None,
        return_token_ids: false,
    })
}

pub fn parse_responses(body: &[u8], profile: &SimProfile) -> Result<Generation, ApiError> {
    let body: ResponsesBody = parse_json(body)?;
    let mut messages = Vec::new();
    if let Some(instructions) = &body.instructions {
        messages.push(("system".to_owned(), instructions.clone()));
    }
    match &body.input {
        Value::String(text) => messages.push(("user".to_owned(), text.clone())),
        Value::Array(items) => {
            for item in items {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
                let content = item.get("content").map(content_text).unwrap_or_default();
                messages.push((role.to_owned(), content));
            }
        }
        _ => return Err(ApiError::bad_param("input", "input must be a string or a list of messages")),
    }
    if messages.is_empty() {
        return Err(ApiError::bad_param("input", "input must not be empty"));
    }
    let conversation = Conversation { messages };
    let prompt = conversation.tokens(profile);
    check_lengths(profile, &prompt, body.max_output_tokens)?;
    let effort = body.reasoning.as_ref().and_then(|r| r.get("effort")).and_then(Value::as_str);
    Ok(Generation {
        endpoint: Endpoint::Responses,
        model: resolve_model(profile, body.model)?,
        stream: body.stream.unwrap_or(false),
        include_usage: true,
        seed: conversation.seed(profile, body.seed),
        instructions: conversation.last_user_text(),
        prompt,
        max_tokens: body.max_output_tokens,
        ignore_eos: false,
        thinking: match effort {
            Some("none") => false,
            Some(_) => true,
            None => profile.thinking,
        },
        response_schema: None,
        tool: None,
        return_token_ids: false,
    })
}
