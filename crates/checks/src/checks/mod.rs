//! One file per check type. Each runs its attempts and judges each one;
//! this file holds what they share: sending one whole request and turning
//! a failed exchange into a failed attempt.

pub mod canary_isolation;
pub mod json_schema;
pub mod responses;
pub mod smoke;
pub mod tool_call;

use serde_json::Value;

use crate::chat::{CHAT_PATH, ChatReply};
use crate::client::{ApiClient, CallError, WholeReply};
use crate::outcome::Attempt;
use crate::text::{excerpt, quote};

/// How one whole-reply exchange went.
pub enum Exchange {
    /// HTTP 200 with a body to judge.
    Ok(Attempt, String),
    /// The attempt already failed (error status, cut body, timeout); judged.
    Failed(Attempt),
}

/// POST `body` to `path`, record status, time and (on failure) the raw body
/// in `attempt`. `Err` only when the server cannot be reached at all.
pub async fn send_whole(
    client: &ApiClient,
    path: &str,
    body: &Value,
    mut attempt: Attempt,
) -> Result<Exchange, CallError> {
    match client.post_whole(path, body).await {
        Ok(WholeReply { status, body, elapsed }) => {
            attempt.http_status = Some(status);
            attempt.elapsed_ms = elapsed.as_secs_f64() * 1000.0;
            if status == 200 {
                Ok(Exchange::Ok(attempt, body))
            } else {
                attempt.reply = serde_json::json!({"body": excerpt(&body)});
                Ok(Exchange::Failed(attempt.fail(format!("HTTP {status}: {}", error_message(&body)))))
            }
        }
        Err(CallError::Broken(why)) => Ok(Exchange::Failed(attempt.fail(why))),
        Err(unreachable @ CallError::Unreachable { .. }) => Err(unreachable),
    }
}

/// A whole chat-completions exchange: the attempt with the parsed reply
/// recorded as evidence, or the attempt already failed (error status, cut
/// body, a body that is not a chat completion).
pub async fn send_chat(
    client: &ApiClient,
    body: &Value,
    attempt: Attempt,
) -> Result<Result<(Attempt, ChatReply), Attempt>, CallError> {
    let (mut attempt, text) = match send_whole(client, CHAT_PATH, body, attempt).await? {
        Exchange::Ok(attempt, text) => (attempt, text),
        Exchange::Failed(attempt) => return Ok(Err(attempt)),
    };
    match ChatReply::from_body(&text) {
        Ok(reply) => {
            attempt.reply = reply.evidence();
            Ok(Ok((attempt, reply)))
        }
        Err(why) => {
            attempt.reply = serde_json::json!({"body": excerpt(&text)});
            Ok(Err(attempt.fail(why.to_string())))
        }
    }
}

/// The `error.message` of an OpenAI-style error body, else the body quoted.
pub fn error_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.get("message").or(Some(e))).cloned())
        .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned))
        .unwrap_or_else(|| quote(body, 200))
}

/// A prompt summary for the request evidence: its length and a short head.
pub fn prompt_summary(prompt: &str) -> Value {
    serde_json::json!({"chars": prompt.chars().count(), "text": crate::text::excerpt_with(prompt, 300, 100)})
}
