//! Chat-completions request bodies and reading their replies, whole or
//! streamed, into the few fields the checks judge.

use serde_json::{Map, Value, json};

use crate::client::{StreamEnd, StreamedReply};
use crate::spec::CheckSpec;
use crate::text::{excerpt, quote};

pub const CHAT_PATH: &str = "/v1/chat/completions";

/// A chat request body for `messages`, with the spec's model, length,
/// thinking switch and a per-attempt seed.
pub fn chat_body(spec: &CheckSpec, messages: Value, attempt: u32) -> Value {
    let mut body = json!({
        "model": spec.model,
        "messages": messages,
        "max_tokens": spec.max_tokens,
        "seed": spec.seed.wrapping_add(u64::from(attempt)),
    });
    if let Some(thinking) = spec.thinking {
        // SGLang and vLLM both pass these to the chat template.
        body["chat_template_kwargs"] = json!({"enable_thinking": thinking});
    }
    body
}

/// Why a whole reply is not a chat completion; `quoted` is the start of
/// the body, quoted for the evidence.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotAChatReply {
    #[error("reply is not JSON ({reason}): {quoted}")]
    NotJson { reason: String, quoted: String },
    #[error("reply has no choices[0]: {quoted}")]
    NoChoice { quoted: String },
    #[error("choices[0] has no message")]
    NoMessage,
}

/// What a chat reply said, whichever way it arrived.
#[derive(Debug, Default)]
pub struct ChatReply {
    pub content: Option<String>,
    pub reasoning: Option<String>,
    pub finish_reason: Option<String>,
    pub tool_calls: Vec<Value>,
    pub usage: Option<Value>,
}

impl ChatReply {
    /// Read a non-streaming `chat.completion` body.
    pub fn from_body(body: &str) -> Result<Self, NotAChatReply> {
        let value: Value = serde_json::from_str(body)
            .map_err(|e| NotAChatReply::NotJson { reason: e.to_string(), quoted: quote(body, 120) })?;
        let choice = value
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| NotAChatReply::NoChoice { quoted: quote(body, 120) })?;
        let message = choice.get("message").ok_or(NotAChatReply::NoMessage)?;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        Ok(Self {
            content: text(message.get("content")),
            reasoning: text(message.get("reasoning_content").or_else(|| message.get("reasoning"))),
            finish_reason: text(choice.get("finish_reason")),
            tool_calls: message.get("tool_calls").and_then(Value::as_array).cloned().unwrap_or_default(),
            usage: value.get("usage").filter(|u| u.is_object()).cloned(),
        })
    }

    /// `usage.completion_tokens` and `usage.prompt_tokens`, if both are numbers.
    pub fn token_counts(&self) -> Option<(u64, u64)> {
        let usage = self.usage.as_ref()?;
        Some((usage.get("prompt_tokens")?.as_u64()?, usage.get("completion_tokens")?.as_u64()?))
    }

    /// `usage.prompt_tokens_details.cached_tokens` (prefix-cache hits), if reported.
    pub fn cached_tokens(&self) -> Option<u64> {
        self.usage.as_ref()?.get("prompt_tokens_details")?.get("cached_tokens")?.as_u64()
    }

    /// The reply as evidence (long text cut).
    pub fn evidence(&self) -> Value {
        json!({
            "content": self.content.as_deref().map(excerpt),
            "reasoning_chars": self.reasoning.as_deref().map(|r| r.chars().count()),
            "finish_reason": self.finish_reason,
            "tool_calls": self.tool_calls,
            "usage": self.usage,
        })
    }
}

/// A streamed chat reply put back together, with what went wrong on the wire.
#[derive(Debug, Default)]
pub struct AssembledStream {
    pub reply: ChatReply,
    /// `data: [DONE]` arrived.
    pub done: bool,
    /// Events after `[DONE]` (none are allowed).
    pub events_after_done: usize,
    /// Events whose data was not JSON, or that carried an `error`.
    pub problems: Vec<String>,
    pub chunks: usize,
}

impl AssembledStream {
    pub fn from_stream(stream: &StreamedReply) -> Self {
        let mut out = Self::default();
        let mut content = String::new();
        let mut reasoning = String::new();
        for event in &stream.events {
            if out.done {
                out.events_after_done += 1;
                continue;
            }
            if event.data.trim() == "[DONE]" {
                out.done = true;
                continue;
            }
            out.chunks += 1;
            let chunk: Value = match serde_json::from_str(&event.data) {
                Ok(chunk) => chunk,
                Err(e) => {
                    out.problems.push(format!(
                        "event {} is not JSON ({e}): {}",
                        out.chunks,
                        quote(&event.data, 80)
                    ));
                    continue;
                }
            };
            if let Some(error) = chunk.get("error") {
                out.problems.push(format!("server sent an error event: {}", quote(&error.to_string(), 120)));
                continue;
            }
            if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
                out.reply.usage = Some(usage.clone());
            }
            let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else { continue };
            let delta = choice.get("delta").and_then(Value::as_object).cloned().unwrap_or_else(Map::new);
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                content.push_str(text);
            }
            if let Some(text) =
                delta.get("reasoning_content").or_else(|| delta.get("reasoning")).and_then(Value::as_str)
            {
                reasoning.push_str(text);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                out.reply.finish_reason = Some(reason.to_owned());
            }
        }
        out.reply.content = Some(content);
        out.reply.reasoning = (!reasoning.is_empty()).then_some(reasoning);
        out
    }

    /// Whether the whole stream was captured: `[DONE]`, nothing after it,
    /// no broken events, and the body closed cleanly.
    pub fn complete(&self, end: &StreamEnd) -> bool {
        self.done && self.events_after_done == 0 && self.problems.is_empty() && *end == StreamEnd::Closed
    }
}

/// `StreamEnd` as evidence text.
pub fn describe_end(end: &StreamEnd) -> String {
    match end {
        StreamEnd::Closed => "closed".to_owned(),
        StreamEnd::CutMidEvent(rest) => format!("cut mid-event after {}", quote(rest, 80)),
        StreamEnd::TransportError(error) => format!("connection broke: {error}"),
        StreamEnd::TimedOut => "timed out".to_owned(),
    }
}
