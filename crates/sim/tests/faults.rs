//! Every injected fault, each at rate 1 (always) and checked on the wire.

use crate::common;
use crate::common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn http_error_faults_answer_with_openai_errors() {
    for (key, status) in
        [("faults.http-500-rate", 500), ("faults.http-503-rate", 503), ("faults.http-429-rate", 429)]
    {
        let sim = start(&[(key, "1")]).await;
        let (got, body) = post_json(&sim, "/v1/chat/completions", &chat_stream("hello")).await;
        assert_eq!(got, status, "{key}");
        assert_eq!(body["error"]["code"], status);
        // The record says why.
        let (_, truth) = get_text(&sim, "/debug/ground-truth").await;
        let truth: Value = serde_json::from_str(&truth).unwrap();
        assert_eq!(truth[0]["outcome"], "http-error");
        assert_eq!(truth[0]["http_status"], status);
    }
}

#[tokio::test]
async fn fault_rates_are_probabilities_drawn_per_request() {
    let sim = start(&[("faults.http-500-rate", "0.5")]).await;
    let mut failed = 0;
    for i in 0..40 {
        let (status, _) = post_text(&sim, "/v1/chat/completions", &chat(&format!("request {i}"))).await;
        failed += usize::from(status == 500);
    }
    assert!((8..=32).contains(&failed), "{failed} of 40 failed at rate 0.5");
    // Deterministic: the same request meets the same fate.
    let fate = |i: u32| {
        let body = chat(&format!("request {i}"));
        let sim = &sim;
        async move { post_text(sim, "/v1/chat/completions", &body).await.0 }
    };
    for i in 0..5 {
        assert_eq!(fate(i).await, fate(i).await);
    }
}

#[tokio::test]
async fn disconnect_drops_the_connection_without_done() {
    let sim = start(&[("faults.disconnect-rate", "1")]).await;
    let response = post(&sim, "/v1/chat/completions", &chat_stream("Write about 40 words.")).await;
    assert_eq!(response.status(), 200);
    let mut received = Vec::new();
    let mut stream = response;
    let error = loop {
        match stream.chunk().await {
            Ok(Some(bytes)) => received.extend_from_slice(&bytes),
            Ok(None) => panic!("stream ended cleanly; expected a dropped connection"),
            Err(error) => break error,
        }
    };
    let text = String::from_utf8(received).unwrap();
    assert!(text.starts_with("data: "), "some chunks came first");
    assert!(!text.contains("[DONE]"));
    drop(error);
    let (_, truth) = get_text(&sim, "/debug/ground-truth").await;
    assert!(truth.contains("\"outcome\":\"disconnected\""), "{truth}");
}

#[tokio::test]
async fn stall_pauses_mid_stream() {
    let sim = start(&[("faults.stall-rate", "1"), ("faults.stall-ms", "300")]).await;
    let (_, text) = post_text(&sim, "/v1/chat/completions", &chat_stream("Write about 20 words.")).await;
    json_chunks(&text);
    let (_, truth) = get_text(&sim, "/debug/ground-truth").await;
    let truth: Value = serde_json::from_str(&truth).unwrap();
    let stamps: Vec<u64> =
        truth[0]["chunks"].as_array().unwrap().iter().map(|c| c["mono_ns"].as_u64().unwrap()).collect();
    let largest_gap = stamps.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    // The server's own clock: the pause is at least stall-ms (never shorter).
    assert!(largest_gap >= 300_000_000, "largest gap {largest_gap} ns");
    assert_eq!(truth[0]["faults"], json!(["stall"]));
}

#[tokio::test]
async fn malformed_sse_emits_one_broken_event() {
    let sim = start(&[("faults.malformed-sse-rate", "1")]).await;
    let (_, text) = post_text(&sim, "/v1/chat/completions", &chat_stream("Write about 20 words.")).await;
    let events = split_sse(&text);
    let broken = events
        .iter()
        .filter(|e| e.data != "[DONE]" && serde_json::from_str::<Value>(&e.data).is_err())
        .count();
    assert_eq!(broken, 1);
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[tokio::test]
async fn missing_usage_leaves_usage_out() {
    let sim = start(&[("faults.missing-usage-rate", "1")]).await;
    let (_, text) = post_text(&sim, "/v1/chat/completions", &chat_stream("hello")).await;
    assert!(json_chunks(&text).iter().all(|c| c.get("usage").is_none()));
    let (_, whole) = post_json(&sim, "/v1/chat/completions", &chat("hello")).await;
    assert!(whole.get("usage").is_none());
}

#[tokio::test]
async fn canary_leak_carries_another_marker() {
    let sim = start(&[("faults.canary-leak-rate", "1")]).await;
    let prompt = "Begin your reply with ANVIL_REQ_9_00001. Write about 30 words.";
    let (_, text) = post_text(&sim, "/v1/chat/completions", &chat_stream(prompt)).await;
    let content = delta_text(&json_chunks(&text), "content");
    assert!(content.starts_with("ANVIL_REQ_9_00001"));
    assert_eq!(content.matches("ANVIL_REQ_").count(), 2, "{content}");
}

#[tokio::test]
async fn json_duplicate_after_think_corrupts_structured_output() {
    let sim = start(&[("faults.json-duplicate-after-think-rate", "1")]).await;
    let mut body = chat("Give JSON.");
    body["response_format"] = json!({"type": "json_schema", "json_schema": {"schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}});
    let (_, whole) = post_json(&sim, "/v1/chat/completions", &body).await;
    let content = whole["choices"][0]["message"]["content"].as_str().unwrap();
    let (first, second) = content.split_once("</think>").expect("literal </think> in the content");
    assert_eq!(first, second);
    assert!(serde_json::from_str::<Value>(first).is_ok());
    assert!(serde_json::from_str::<Value>(content).is_err());
}

#[tokio::test]
async fn exit_after_requests_stops_an_in_process_server() {
    let sim = start(&[("faults.exit-after-requests", "2")]).await;
    for _ in 0..2 {
        let (status, _) = post_text(&sim, "/v1/chat/completions", &chat("hello")).await;
        assert_eq!(status, 200);
    }
    // The listener closes shortly after; poll (no timing assertion).
    let url = format!("{}/health", sim.base_url());
    let mut refused = false;
    for _ in 0..200 {
        if common::client().get(&url).send().await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(refused, "server still accepting after exit-after-requests");
}
