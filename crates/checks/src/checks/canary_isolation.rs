//! canary-isolation: `concurrency` streaming chat requests at once, each
//! told to begin its reply with its own `ANVIL_REQ_<seed>_<index>` marker.
//! Each reply must begin with its marker and carry no other; a stream that
//! does not end with `[DONE]` fails closed. Rounds repeat `requests` times
//! with fresh indices, so a leak between batches shows too.

use futures_util::future::join_all;
use serde_json::json;

use super::error_message;
use crate::canary_marker::{judge, marker};
use crate::chat::{AssembledStream, CHAT_PATH, chat_body, describe_end};
use crate::client::{ApiClient, CallError};
use crate::outcome::Attempt;
use crate::spec::CheckSpec;
use crate::text::excerpt;

/// Every request of every round, in index order.
pub async fn run(spec: &CheckSpec, client: &ApiClient, prompt: &str) -> Result<Vec<Attempt>, CallError> {
    let per_round = spec.concurrency.max(1);
    let mut attempts = Vec::new();
    for round in 0..spec.requests.max(1) {
        let first = round * per_round;
        let streams = (first..first + per_round).map(|index| one_stream(spec, client, prompt, round, index));
        for attempt in join_all(streams).await {
            attempts.push(attempt?);
        }
    }
    Ok(attempts)
}

async fn one_stream(
    spec: &CheckSpec,
    client: &ApiClient,
    prompt: &str,
    round: u32,
    index: u32,
) -> Result<Attempt, CallError> {
    let own = marker(spec.seed, index);
    let instruction = format!("Begin your reply with {own}. {prompt}");
    let mut body = chat_body(spec, json!([{"role": "user", "content": instruction}]), index);
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let request = json!({"endpoint": CHAT_PATH, "stream": true, "round": round, "seed": body["seed"], "marker": own, "max_tokens": spec.max_tokens});
    let mut attempt = Attempt::new(index, request);

    let stream = match client.post_stream(CHAT_PATH, &body).await {
        Ok(stream) => stream,
        Err(CallError::Broken(why)) => return Ok(attempt.fail(why)),
        Err(unreachable) => return Err(unreachable),
    };
    attempt.http_status = Some(stream.status);
    attempt.elapsed_ms = stream.elapsed.as_secs_f64() * 1000.0;
    if stream.status != 200 {
        let body = stream.error_body.unwrap_or_default();
        attempt.reply = json!({"body": excerpt(&body)});
        return Ok(attempt.fail(format!("HTTP {}: {}", stream.status, error_message(&body))));
    }

    let assembled = AssembledStream::from_stream(&stream);
    let content = assembled.reply.content.as_deref().unwrap_or("");
    let verdict = judge(&own, content, assembled.complete(&stream.end));
    attempt.reply = assembled.reply.evidence();
    attempt.reply["stream"] = json!({
        "chunks": assembled.chunks,
        "done": assembled.done,
        "events_after_done": assembled.events_after_done,
        "end": describe_end(&stream.end),
        "problems": assembled.problems,
    });
    attempt.reply["request_canary"] = json!(verdict);

    Ok(if verdict.passed {
        attempt.pass(format!("each reply begins with its own marker ({own}) and carries no other"))
    } else if let Some(problem) = assembled.problems.first() {
        attempt.fail(format!("{own}: broken stream: {problem}"))
    } else if !verdict.capture_complete {
        let why = if assembled.done {
            format!("events after [DONE] ({})", describe_end(&stream.end))
        } else {
            format!("no [DONE] ({})", describe_end(&stream.end))
        };
        attempt.fail(format!("{own}: truncated capture fails closed: {why}"))
    } else if verdict.foreign_marker_count > 0 {
        attempt.fail(format!(
            "{own}: reply carries {} foreign marker(s): {}",
            verdict.foreign_marker_count,
            verdict.foreign_markers.join(", ")
        ))
    } else {
        attempt
            .fail(format!("{own}: reply does not begin with its marker: {}", crate::text::quote(content, 60)))
    })
}
