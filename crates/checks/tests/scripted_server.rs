//! Replies the sim never gives, from a small scripted HTTP/1.1 server on
//! loopback: each test decides the exact bytes the server sends, so each
//! check's judgement is tested on the case it exists for.

use std::sync::Arc;

use anvil_checks::{CheckOutcome, CheckSpec, CheckType, Target, run_check};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// Builds the whole HTTP response for (path, request body).
type Script = Arc<dyn Fn(&str, &Value) -> String + Send + Sync>;

/// Serve `script` on a loopback port until the test ends; returns the base URL.
async fn serve(script: Script) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let script = script.clone();
            tokio::spawn(async move {
                let Some((path, body)) = read_request(&mut socket).await else { return };
                let _ = socket.write_all(script(&path, &body).as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://{address}")
}

/// Read one request: its path and JSON body (by Content-Length).
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, Value)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let read = socket.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let path = head.split_whitespace().nth(1)?.to_owned();
    let length: usize = head
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
        })?
        .parse()
        .ok()?;
    while buffer.len() < head_end + length {
        let read = socket.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buffer.extend_from_slice(&chunk[..read]);
    }
    Some((path, serde_json::from_slice(&buffer[head_end..head_end + length]).ok()?))
}

fn json_response(body: Value) -> String {
    let text = body.to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    )
}

/// An event stream delimited by closing the connection (so a stream cut
/// early looks, on the wire, exactly like one that ended).
fn sse_response(events: &[String]) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}",
        events.concat()
    )
}

fn chat_message(message: Value, finish_reason: &str) -> String {
    json_response(json!({
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }))
}

fn chat_chunk(content: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]})
    )
}

fn responses_whole(text: &str) -> String {
    json_response(json!({
        "object": "response", "status": "completed",
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}],
        "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8},
    }))
}

fn responses_event(kind: &str, mut body: Value) -> String {
    body["type"] = json!(kind);
    format!("event: {kind}\ndata: {body}\n\n")
}

fn completed(text: &str) -> String {
    responses_event(
        "response.completed",
        json!({"response": {"status": "completed", "output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}]}}),
    )
}

async fn check(check_type: CheckType, script: Script, adjust: impl FnOnce(&mut CheckSpec)) -> CheckOutcome {
    let base_url = serve(script).await;
    let mut spec = CheckSpec::new("scripted", check_type, "m");
    spec.requests = 1;
    spec.concurrency = 1;
    spec.timeout_ms = 20_000;
    adjust(&mut spec);
    run_check(&spec, &Target::new(base_url)).await.expect("check runs")
}

fn assert_fails_with(outcome: &CheckOutcome, part: &str) {
    assert!(!outcome.passed, "expected a failure: {:#}", outcome.evidence);
    assert!(outcome.detail.contains(part), "detail {:?} lacks {part:?}", outcome.detail);
}

#[tokio::test]
async fn the_scripted_server_can_pass_each_check() {
    // Guards the other tests: their scripts differ from these only in the fault.
    let smoke =
        check(CheckType::Smoke, Arc::new(|_, _| chat_message(json!({"content": "Paris."}), "stop")), |_| {})
            .await;
    assert!(smoke.passed, "{}", smoke.detail);
    let responses = check(
        CheckType::Responses,
        Arc::new(|_, body| {
            if body["stream"] == true {
                sse_response(&[
                    responses_event("response.output_text.delta", json!({"delta": "Hi "})),
                    responses_event("response.output_text.delta", json!({"delta": "there"})),
                    completed("Hi there"),
                ])
            } else {
                responses_whole("Hi there")
            }
        }),
        |_| {},
    )
    .await;
    assert!(responses.passed, "{}", responses.detail);
    let canary = check(
        CheckType::CanaryIsolation,
        Arc::new(|_, _| sse_response(&[chat_chunk("ANVIL_REQ_0_00000 hello"), "data: [DONE]\n\n".into()])),
        |_| {},
    )
    .await;
    assert!(canary.passed, "{}", canary.detail);
}

#[tokio::test]
async fn smoke_fails_on_empty_content() {
    let outcome =
        check(CheckType::Smoke, Arc::new(|_, _| chat_message(json!({"content": "  "}), "stop")), |_| {})
            .await;
    assert_fails_with(&outcome, "content is empty");
}

#[tokio::test]
async fn json_schema_fails_on_a_schema_violation_and_on_leading_text() {
    let violating = check(
        CheckType::JsonSchema,
        Arc::new(|_, _| {
            chat_message(json!({"content": "{\"city\": \"Paris\", \"population\": -1}"}), "stop")
        }),
        |_| {},
    )
    .await;
    assert_fails_with(&violating, "violates the schema");
    let violations = &violating.evidence["attempts"][0]["reply"]["schema_violations"];
    assert!(violations.to_string().contains("country"), "{violations}");
    assert!(violations.to_string().contains("/population"), "{violations}");

    let chatty = check(
        CheckType::JsonSchema,
        Arc::new(|_, _| chat_message(json!({"content": "Here: {\"a\": 1}"}), "stop")),
        |_| {},
    )
    .await;
    assert_fails_with(&chatty, "does not start with a JSON value");
}

#[tokio::test]
async fn json_schema_sends_a_strict_response_format() {
    let outcome = check(
        CheckType::JsonSchema,
        Arc::new(|_, body| {
            let format = &body["response_format"];
            let ok = format["type"] == "json_schema"
                && format["json_schema"]["strict"] == true
                && format["json_schema"]["schema"]["type"] == "object";
            let content =
                if ok { r#"{"city":"a","country":"b","population":1}"# } else { "bad request shape" };
            chat_message(json!({"content": content}), "stop")
        }),
        |_| {},
    )
    .await;
    assert!(outcome.passed, "{}", outcome.detail);
}

fn tool_reply(name: &str, arguments: &str) -> String {
    chat_message(
        json!({"content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}]}),
        "tool_calls",
    )
}

#[tokio::test]
async fn tool_call_failures() {
    let wrong_name =
        check(CheckType::ToolCall, Arc::new(|_, _| tool_reply("get_time", r#"{"city":"Paris"}"#)), |_| {})
            .await;
    assert_fails_with(&wrong_name, "calls `get_time`, not `get_weather`");
    let not_json = check(
        CheckType::ToolCall,
        Arc::new(|_, _| tool_reply("get_weather", r#"{"city":"Paris"}{"city":"Rome"}"#)),
        |_| {},
    )
    .await;
    assert_fails_with(&not_json, "not one JSON value");
    let invalid = check(
        CheckType::ToolCall,
        Arc::new(|_, _| tool_reply("get_weather", r#"{"unit":"kelvin"}"#)),
        |_| {},
    )
    .await;
    assert_fails_with(&invalid, "violate the parameters schema");
    let answered = check(
        CheckType::ToolCall,
        Arc::new(|_, _| chat_message(json!({"content": "It is sunny."}), "stop")),
        |_| {},
    )
    .await;
    assert_fails_with(&answered, "finish_reason is `stop`, not `tool_calls`; content `It is sunny.`");
}

#[tokio::test]
async fn tool_call_sends_the_same_long_system_prefix_every_attempt() {
    let outcome = check(
        CheckType::ToolCall,
        Arc::new(|_, body| {
            let system = body["messages"][0]["content"].as_str().unwrap_or("");
            let words = system.split_whitespace().count();
            let name = if body["messages"][0]["role"] == "system" && words >= 1000 {
                "get_weather"
            } else {
                "no_prefix"
            };
            tool_reply(name, r#"{"city":"Paris"}"#)
        }),
        |spec| {
            spec.shared_prefix_tokens = 1000;
            spec.requests = 2;
        },
    )
    .await;
    assert!(outcome.passed, "{}", outcome.detail);
}

fn responses_script(stream: Vec<String>) -> Script {
    Arc::new(
        move |_, body| {
            if body["stream"] == true { sse_response(&stream) } else { responses_whole("Hi there") }
        },
    )
}

#[tokio::test]
async fn responses_fails_when_the_stream_stops_before_completed() {
    let stream = vec![responses_event("response.output_text.delta", json!({"delta": "Hi "}))];
    let outcome = check(CheckType::Responses, responses_script(stream), |_| {}).await;
    assert_fails_with(
        &outcome,
        "streaming: the last event is `response.output_text.delta`, not `response.completed`",
    );
}

#[tokio::test]
async fn responses_fails_when_deltas_disagree_with_the_completed_text() {
    let stream =
        vec![responses_event("response.output_text.delta", json!({"delta": "Hi"})), completed("Hi there")];
    let outcome = check(CheckType::Responses, responses_script(stream), |_| {}).await;
    assert_fails_with(&outcome, "differ from the completed response");
}

#[tokio::test]
async fn responses_fails_on_a_stream_cut_mid_event() {
    let mut stream = vec![
        responses_event("response.output_text.delta", json!({"delta": "Hi there"})),
        completed("Hi there"),
    ];
    stream.push("event: response.output_text.delta\ndata: {\"ty".into());
    let outcome = check(CheckType::Responses, responses_script(stream), |_| {}).await;
    assert_fails_with(&outcome, "did not end cleanly (cut mid-event");
}

#[tokio::test]
async fn responses_fails_without_output_text() {
    let outcome = check(
        CheckType::Responses,
        Arc::new(|_, _| {
            json_response(
                json!({"output": [{"type": "message", "content": []}], "usage": {"output_tokens": 0}}),
            )
        }),
        |_| {},
    )
    .await;
    assert_fails_with(&outcome, "non-streaming: no non-empty output_text");
}

#[tokio::test]
async fn canary_fails_closed_without_done() {
    // Connection-close framing: the cut is invisible to HTTP, only [DONE] tells.
    let outcome = check(
        CheckType::CanaryIsolation,
        Arc::new(|_, _| sse_response(&[chat_chunk("ANVIL_REQ_0_00000 hello")])),
        |_| {},
    )
    .await;
    assert_fails_with(&outcome, "truncated capture fails closed: no [DONE]");
}

#[tokio::test]
async fn canary_fails_on_events_after_done() {
    let events = [chat_chunk("ANVIL_REQ_0_00000 hi"), "data: [DONE]\n\n".into(), chat_chunk(" more")];
    let outcome =
        check(CheckType::CanaryIsolation, Arc::new(move |_, _| sse_response(&events)), |_| {}).await;
    assert_fails_with(&outcome, "events after [DONE]");
}

#[tokio::test]
async fn canary_fails_when_the_marker_is_not_first() {
    let events = [chat_chunk("Sure! ANVIL_REQ_0_00000 hi"), "data: [DONE]\n\n".into()];
    let outcome =
        check(CheckType::CanaryIsolation, Arc::new(move |_, _| sse_response(&events)), |_| {}).await;
    assert_fails_with(&outcome, "does not begin with its marker");
}

#[tokio::test]
async fn canary_sends_each_request_its_own_marker() {
    // The server echoes the marker it was asked for: every request must get a distinct one.
    let outcome = check(
        CheckType::CanaryIsolation,
        Arc::new(|_, body| {
            let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
            let marker = prompt
                .split_whitespace()
                .find(|w| w.starts_with("ANVIL_REQ_"))
                .unwrap_or("none")
                .trim_end_matches('.');
            sse_response(&[chat_chunk(&format!("{marker} ok")), "data: [DONE]\n\n".into()])
        }),
        |spec| {
            spec.seed = 42;
            spec.concurrency = 5;
            spec.requests = 2;
        },
    )
    .await;
    assert!(outcome.passed, "{}", outcome.detail);
    assert_eq!(outcome.attempts, 10);
    assert_eq!(outcome.evidence["attempts"][9]["reply"]["request_canary"]["marker"], "ANVIL_REQ_42_00009");
}
