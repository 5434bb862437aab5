//! smoke: a short non-streaming chat completion answers 200 with a
//! non-empty `choices[0].message.content` and a `usage` with token counts.

use serde_json::{Value, json};

use super::{prompt_summary, send_chat};
use crate::chat::{CHAT_PATH, ChatReply, chat_body};
use crate::client::{ApiClient, CallError};
use crate::outcome::Attempt;
use crate::spec::CheckSpec;

pub async fn attempt(
    spec: &CheckSpec,
    client: &ApiClient,
    prompt: &str,
    index: u32,
) -> Result<Attempt, CallError> {
    let body = chat_body(spec, json!([{"role": "user", "content": prompt}]), index);
    let request = json!({"endpoint": CHAT_PATH, "stream": false, "seed": body["seed"], "max_tokens": spec.max_tokens, "prompt": prompt_summary(prompt)});
    let (attempt, reply) = match send_chat(client, &body, Attempt::new(index, request)).await? {
        Ok(exchange) => exchange,
        Err(failed) => return Ok(failed),
    };
    Ok(judge(attempt, &reply))
}

fn judge(attempt: Attempt, reply: &ChatReply) -> Attempt {
    let content = reply.content.as_deref().map(str::trim).unwrap_or("");
    if content.is_empty() {
        let reason = reply.finish_reason.as_deref().unwrap_or("none");
        return attempt.fail(format!("choices[0].message.content is empty (finish_reason {reason})"));
    }
    match reply.token_counts() {
        None if reply.usage.is_none() => attempt.fail("the reply has no usage"),
        None => attempt.fail(format!(
            "usage lacks prompt_tokens/completion_tokens: {}",
            reply.usage.as_ref().unwrap_or(&Value::Null)
        )),
        Some((prompt, completion)) => attempt.pass(format!(
            "HTTP 200, {} chars of content, usage {prompt} prompt + {completion} completion tokens",
            content.chars().count()
        )),
    }
}
