//! Byte-level framing of every endpoint, checked over real HTTP.

use crate::common;
use crate::common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn chat_stream_is_framed_like_vllm() {
    let sim = start(&[]).await;
    let response = post(&sim, "/v1/chat/completions", &chat_stream("Write about 20 words.")).await;
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "text/event-stream; charset=utf-8");
    assert_eq!(headers["x-anvil-simulated"], "true");
    let body = response.text().await.unwrap();

    // Raw bytes: every event is `data: {...}\n\n`, the last is [DONE].
    assert!(body.starts_with("data: {\"id\":\"chatcmpl-"), "{body}");
    assert!(body.ends_with("\n\ndata: [DONE]\n\n"));
    assert!(!body.contains("\r"));
    let chunks = json_chunks(&body);

    let first = &chunks[0];
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
    assert_eq!(first["choices"][0]["logprobs"], Value::Null);
    assert_eq!(first["choices"][0]["finish_reason"], Value::Null);
    let id = first["id"].as_str().unwrap();
    for chunk in &chunks {
        assert_eq!(chunk["id"], id);
        assert_eq!(chunk["model"], "anvil-sim");
        assert_eq!(chunk["system_fingerprint"], "anvil-sim");
        assert!(chunk["created"].is_u64());
    }

    // Content deltas, the finish reason on the last token's chunk only.
    let (usage_chunk, token_chunks) = chunks[1..].split_last().unwrap();
    let (last, middle) = token_chunks.split_last().unwrap();
    for chunk in middle {
        assert_eq!(chunk["choices"][0]["finish_reason"], Value::Null);
        assert!(chunk["choices"][0]["delta"]["content"].is_string());
    }
    assert_eq!(last["choices"][0]["finish_reason"], "stop");

    // Usage chunk shape.
    assert_eq!(usage_chunk["choices"], json!([]));
    let usage = &usage_chunk["usage"];
    let (prompt, completion) =
        (usage["prompt_tokens"].as_u64().unwrap(), usage["completion_tokens"].as_u64().unwrap());
    assert_eq!(usage["total_tokens"].as_u64().unwrap(), prompt + completion);
    assert!(usage["prompt_tokens_details"]["cached_tokens"].is_u64());
    assert_eq!(completion as usize, token_chunks.len(), "one token per step without spec decode");
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn chat_stream_without_include_usage_has_no_usage_chunk() {
    let sim = start(&[]).await;
    let mut body = chat_stream("hello");
    body["stream_options"] = json!({"include_usage": false});
    let (_, text) = post_text(&sim, "/v1/chat/completions", &body).await;
    let chunks = json_chunks(&text);
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    assert!(chunks.iter().all(|c| c["choices"].as_array().unwrap().len() == 1));
}

#[tokio::test]
async fn non_streaming_chat_completion() {
    let sim = start(&[]).await;
    let (status, response) = post_json(&sim, "/v1/chat/completions", &chat("Write about 10 words.")).await;
    assert_eq!(status, 200);
    assert_eq!(response["object"], "chat.completion");
    let choice = &response["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"].as_str().unwrap().split_whitespace().count(), 10);
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(response["usage"]["completion_tokens"], 10);
}

#[tokio::test]
async fn completions_stream_and_whole() {
    let sim = start(&[]).await;
    let body =
        json!({"prompt": "Write about 8 words.", "stream": true, "stream_options": {"include_usage": true}});
    let (_, text) = post_text(&sim, "/v1/completions", &body).await;
    let chunks = json_chunks(&text);
    assert!(chunks.iter().all(|c| c["object"] == "text_completion"));
    let streamed: String =
        chunks.iter().filter_map(|c| c["choices"].get(0)?["text"].as_str().map(str::to_owned)).collect();
    assert_eq!(streamed.split_whitespace().count(), 8);
    let usage = usage_of(&chunks);
    assert_eq!(usage["completion_tokens"], 8);

    let (_, whole) = post_json(&sim, "/v1/completions", &json!({"prompt": "Write about 8 words."})).await;
    assert_eq!(whole["choices"][0]["text"], streamed.as_str());
    assert_eq!(whole["usage"]["prompt_tokens"], usage["prompt_tokens"]);
}

#[tokio::test]
async fn responses_api_subset() {
    let sim = start(&[]).await;
    let body = json!({"model": "anvil-sim", "input": "Write about 6 words.", "stream": true});
    let (_, text) = post_text(&sim, "/v1/responses", &body).await;
    let events = split_sse(&text);
    assert_eq!(events.first().unwrap().event.as_deref(), Some("response.created"));
    assert_eq!(events.last().unwrap().event.as_deref(), Some("response.completed"));
    let mut streamed = String::new();
    for (i, event) in events.iter().enumerate() {
        let data: Value = serde_json::from_str(&event.data).unwrap();
        assert_eq!(data["type"].as_str(), event.event.as_deref());
        assert_eq!(data["sequence_number"], i);
        if data["type"] == "response.output_text.delta" {
            streamed.push_str(data["delta"].as_str().unwrap());
        }
    }
    let completed: Value = serde_json::from_str(&events.last().unwrap().data).unwrap();
    let response = &completed["response"];
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"][0]["content"][0]["text"], streamed.as_str());
    assert_eq!(response["usage"]["output_tokens"], 6);

    let (_, whole) = post_json(&sim, "/v1/responses", &json!({"input": "Write about 6 words."})).await;
    assert_eq!(whole["object"], "response");
    assert_eq!(whole["output"][0]["content"][0]["text"], streamed.as_str());
}

#[tokio::test]
async fn models_health_metrics_and_errors() {
    let sim = start(&[("model", "served-model")]).await;
    let (status, models) = get_text(&sim, "/v1/models").await;
    assert_eq!(status, 200);
    let models: Value = serde_json::from_str(&models).unwrap();
    assert_eq!(models["data"][0]["id"], "served-model");
    assert_eq!(models["data"][0]["owned_by"], "anvil-sim");
    assert_eq!(get_text(&sim, "/health").await.0, 200);

    let (status, error) = post_json(&sim, "/v1/chat/completions", &chat("hi")).await;
    assert_eq!(status, 404, "{error}");
    assert_eq!(error["error"]["code"], 404);
    for key in ["message", "type", "param", "code"] {
        assert!(error["error"].get(key).is_some(), "missing {key}");
    }

    let response = common::client()
        .post(format!("{}/v1/chat/completions", sim.base_url()))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let (status, _) = post_json(&sim, "/v1/chat/completions", &json!({"model": "served-model"})).await;
    assert_eq!(status, 400);
    let (status, _) =
        post_json(&sim, "/v1/chat/completions", &json!({"model": "served-model", "messages": []})).await;
    assert_eq!(status, 400);
    let (status, error) = get_text(&sim, "/v2/unknown").await;
    assert_eq!(status, 404);
    assert!(error.contains("\"error\""));

    let mut ok = chat("Write about 5 words.");
    ok["model"] = json!("served-model");
    assert_eq!(post_json(&sim, "/v1/chat/completions", &ok).await.0, 200);
    let (status, metrics) = get_text(&sim, "/metrics").await;
    assert_eq!(status, 200);
    for name in [
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_queries_total",
        "vllm:spec_decode_num_draft_tokens_total",
        "vllm:spec_decode_num_accepted_tokens_total",
    ] {
        assert!(metrics.contains(&format!("# TYPE {name} ")), "missing {name}");
    }
    assert!(metrics.contains("vllm:generation_tokens_total{model_name=\"served-model\"} 5\n"), "{metrics}");
    assert!(
        metrics
            .contains("vllm:request_success_total{model_name=\"served-model\",finished_reason=\"stop\"} 1\n")
    );
}
