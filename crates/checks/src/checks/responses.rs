//! responses: the Responses API subset. Each attempt is a pair:
//! - non-streaming `POST /v1/responses` returns an `output` message with a
//!   non-empty `output_text` part and a `usage`;
//! - the same request streamed has `response.output_text.delta` events,
//!   ends with `response.completed` and a cleanly closed body, and its
//!   deltas add up to the completed response's text.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Exchange, error_message, prompt_summary, send_whole};
use crate::chat::describe_end;
use crate::client::{ApiClient, CallError, StreamEnd};
use crate::outcome::Attempt;
use crate::spec::CheckSpec;
use crate::text::{excerpt, quote};

pub const RESPONSES_PATH: &str = "/v1/responses";
const DELTA_EVENT: &str = "response.output_text.delta";
const COMPLETED_EVENT: &str = "response.completed";

fn request_body(spec: &CheckSpec, prompt: &str, stream: bool) -> Value {
    let mut body =
        json!({"model": spec.model, "input": prompt, "max_output_tokens": spec.max_tokens, "stream": stream});
    if let Some(thinking) = spec.thinking {
        body["reasoning"] = json!({"effort": if thinking { "medium" } else { "none" }});
    }
    body
}

pub async fn attempt(
    spec: &CheckSpec,
    client: &ApiClient,
    prompt: &str,
    index: u32,
) -> Result<Attempt, CallError> {
    let request = json!({"endpoint": RESPONSES_PATH, "stream": "once without, once with", "max_output_tokens": spec.max_tokens, "prompt": prompt_summary(prompt)});
    let attempt = Attempt::new(index, request);
    let (attempt, whole) = match whole_part(spec, client, prompt, attempt).await? {
        Ok(pair) => pair,
        Err(failed) => return Ok(failed),
    };
    let streamed = streamed_part(spec, client, prompt).await?;
    let mut attempt = attempt;
    attempt.reply = json!({"non_streaming": whole.evidence, "streaming": streamed.evidence});
    Ok(match streamed.failure {
        Some(why) => attempt.fail(format!("streaming: {why}")),
        None => attempt.pass(format!(
            "non-streaming: {} chars of output_text with usage; streaming: {} text deltas, ended with {COMPLETED_EVENT}",
            whole.text_chars, streamed.deltas
        )),
    })
}

struct WholePart {
    evidence: Value,
    text_chars: usize,
}

/// The non-streaming request; `Ok(Err(attempt))` when it already failed the attempt.
async fn whole_part(
    spec: &CheckSpec,
    client: &ApiClient,
    prompt: &str,
    attempt: Attempt,
) -> Result<Result<(Attempt, WholePart), Attempt>, CallError> {
    let body = request_body(spec, prompt, false);
    let (mut attempt, text) = match send_whole(client, RESPONSES_PATH, &body, attempt).await? {
        Exchange::Ok(attempt, text) => (attempt, text),
        Exchange::Failed(attempt) => {
            let why = format!("non-streaming: {}", attempt.why);
            return Ok(Err(attempt.fail(why)));
        }
    };
    let response: Value = match serde_json::from_str(&text) {
        Ok(response) => response,
        Err(e) => {
            attempt.reply = json!({"non_streaming": {"body": excerpt(&text)}});
            return Ok(Err(attempt.fail(format!("non-streaming: reply is not JSON ({e})"))));
        }
    };
    let output_text = output_text(&response);
    let usage = response.get("usage").filter(|u| u.is_object()).cloned();
    let evidence = json!({
        "status": response.get("status"),
        "output_types": response.get("output").and_then(Value::as_array).map(|items| items.iter().map(|i| i.get("type").cloned().unwrap_or(Value::Null)).collect::<Vec<_>>()),
        "output_text": output_text.as_deref().map(excerpt),
        "usage": usage,
    });
    attempt.reply = json!({"non_streaming": evidence});
    let text_chars = output_text.as_deref().map_or(0, |t| t.trim().chars().count());
    if text_chars == 0 {
        return Ok(Err(attempt.fail("non-streaming: no non-empty output_text part in output[]")));
    }
    if usage.as_ref().and_then(|u| u.get("output_tokens")).and_then(Value::as_u64).is_none() {
        return Ok(Err(attempt.fail("non-streaming: the response has no usage with output_tokens")));
    }
    Ok(Ok((attempt, WholePart { evidence, text_chars })))
}

/// All `output_text` parts of the `message` items in `output`, joined.
fn output_text(response: &Value) -> Option<String> {
    let items = response.get("output")?.as_array()?;
    let parts: Vec<&str> = items
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|item| item.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    (!parts.is_empty()).then(|| parts.concat())
}

struct StreamedPart {
    evidence: Value,
    deltas: usize,
    failure: Option<String>,
}

async fn streamed_part(
    spec: &CheckSpec,
    client: &ApiClient,
    prompt: &str,
) -> Result<StreamedPart, CallError> {
    let body = request_body(spec, prompt, true);
    let stream = match client.post_stream(RESPONSES_PATH, &body).await {
        Ok(stream) => stream,
        Err(CallError::Broken(why)) => {
            return Ok(StreamedPart { evidence: json!({"error": why}), deltas: 0, failure: Some(why) });
        }
        Err(unreachable) => return Err(unreachable),
    };
    if stream.status != 200 {
        let body = stream.error_body.unwrap_or_default();
        let why = format!("HTTP {}: {}", stream.status, error_message(&body));
        return Ok(StreamedPart {
            evidence: json!({"http_status": stream.status, "body": excerpt(&body)}),
            deltas: 0,
            failure: Some(why),
        });
    }

    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut text = String::new();
    let mut problems = Vec::new();
    let mut last_type = None;
    let mut completed: Option<Value> = None;
    for event in &stream.events {
        let data: Value = match serde_json::from_str(&event.data) {
            Ok(data) => data,
            Err(e) => {
                problems.push(format!("an event is not JSON ({e}): {}", quote(&event.data, 80)));
                continue;
            }
        };
        // The JSON `type` is authoritative; the `event:` line is optional framing.
        let kind =
            data.get("type").and_then(Value::as_str).or(event.event.as_deref()).unwrap_or("").to_owned();
        *counts.entry(kind.clone()).or_default() += 1;
        if kind == DELTA_EVENT {
            text.push_str(data.get("delta").and_then(Value::as_str).unwrap_or(""));
        }
        if kind == COMPLETED_EVENT {
            completed = data.get("response").cloned();
        }
        last_type = Some(kind);
    }
    let deltas = counts.get(DELTA_EVENT).copied().unwrap_or(0);
    let completed_text = completed.as_ref().and_then(output_text);
    let evidence = json!({
        "http_status": stream.status,
        "elapsed_ms": stream.elapsed.as_secs_f64() * 1000.0,
        "event_counts": counts,
        "last_event": last_type,
        "end": describe_end(&stream.end),
        "delta_text": excerpt(&text),
        "completed_usage": completed.as_ref().and_then(|r| r.get("usage")),
        "problems": problems,
    });
    let failure = if let Some(problem) = problems.first() {
        Some(problem.clone())
    } else if stream.end != StreamEnd::Closed {
        Some(format!("the stream did not end cleanly ({})", describe_end(&stream.end)))
    } else if last_type.as_deref() != Some(COMPLETED_EVENT) {
        Some(format!(
            "the last event is `{}`, not `{COMPLETED_EVENT}`",
            last_type.as_deref().unwrap_or("(none)")
        ))
    } else if text.trim().is_empty() {
        Some(format!("no non-empty `{DELTA_EVENT}` event"))
    } else if completed_text.as_deref() != Some(text.as_str()) {
        Some(format!(
            "the deltas ({}) differ from the completed response's output_text ({})",
            quote(&text, 60),
            completed_text.as_deref().map_or_else(|| "none".to_owned(), |t| quote(t, 60))
        ))
    } else {
        None
    };
    Ok(StreamedPart { evidence, deltas, failure })
}
