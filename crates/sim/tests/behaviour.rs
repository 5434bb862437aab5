//! What the sim answers: instructions obeyed, token accounting, structured
//! output, tool calls, determinism, prefix cache and speculative decoding.

use crate::common::*;
use serde_json::{Value, json};

const CANARY_PROMPT: &str =
    "Context words here. Begin your reply with ANVIL_REQ_17_00042 and write about 30 words.";

#[tokio::test]
async fn usage_is_stable_and_follows_the_documented_tokenizer() {
    let sim = start(&[("prefix-cache", "false")]).await;
    let prompt = "alpha beta gammadelta"; // 2 + 1 + 3 tokens
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (_, text) = post_text(&sim, "/v1/chat/completions", &chat_stream(prompt)).await;
        seen.push(usage_of(&json_chunks(&text))["prompt_tokens"].as_u64().unwrap());
    }
    // 4 per message + text + 3 reply primer.
    assert_eq!(seen, vec![4 + 6 + 3; 3]);
    assert_eq!(anvil_sim::count_tokens(prompt), 6);
}

#[tokio::test]
async fn canary_marker_starts_the_reply_exactly_once() {
    let sim = start(&[]).await;
    let mut body = chat_stream("ignored earlier instruction ANVIL_REQ_1_00001");
    body["messages"] = json!([
        {"role": "user", "content": "old turn ANVIL_REQ_1_00001"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": CANARY_PROMPT},
    ]);
    let (_, text) = post_text(&sim, "/v1/chat/completions", &body).await;
    let content = delta_text(&json_chunks(&text), "content");
    assert!(content.starts_with("ANVIL_REQ_17_00042 "), "{content}");
    assert_eq!(content.matches("ANVIL_REQ_").count(), 1);
    let words = content.split_whitespace().count();
    assert!((28..=34).contains(&words), "about 30 words, got {words}");
}

#[tokio::test]
async fn max_tokens_ends_with_length() {
    let sim = start(&[]).await;
    for limit_key in ["max_tokens", "max_completion_tokens"] {
        let mut body = chat_stream("Write about 200 words.");
        body[limit_key] = json!(7);
        let (_, text) = post_text(&sim, "/v1/chat/completions", &body).await;
        let chunks = json_chunks(&text);
        assert_eq!(usage_of(&chunks)["completion_tokens"], 7);
        let finish = &chunks[chunks.len() - 2]["choices"][0]["finish_reason"];
        assert_eq!(finish, "length");
    }
}

#[tokio::test]
async fn thinking_on_and_off() {
    let sim = start(&[("reasoning-tokens", "12")]).await;
    let mut on = chat_stream("Write about 5 words.");
    on["chat_template_kwargs"] = json!({"enable_thinking": true});
    let (_, text) = post_text(&sim, "/v1/chat/completions", &on).await;
    let chunks = json_chunks(&text);
    let reasoning = delta_text(&chunks, "reasoning_content");
    let content = delta_text(&chunks, "content");
    assert_eq!(reasoning.split_whitespace().count(), 12);
    assert_eq!(content.split_whitespace().count(), 5);
    assert_eq!(usage_of(&chunks)["completion_tokens"], 17);
    // Reasoning comes strictly before content.
    let first_content = chunks
        .iter()
        .position(|c| c["choices"][0]["delta"]["content"].as_str().is_some_and(|s| !s.is_empty()))
        .unwrap();
    let last_reasoning =
        chunks.iter().rposition(|c| c["choices"][0]["delta"].get("reasoning_content").is_some()).unwrap();
    assert!(last_reasoning < first_content);

    // Profile default on, request turns it off.
    let sim = start(&[("thinking", "true")]).await;
    let mut off = chat_stream("Write about 5 words.");
    off["chat_template_kwargs"] = json!({"enable_thinking": false});
    let (_, text) = post_text(&sim, "/v1/chat/completions", &off).await;
    assert_eq!(delta_text(&json_chunks(&text), "reasoning_content"), "");
    let (_, text) = post_text(&sim, "/v1/chat/completions", &chat_stream("Write about 5 words.")).await;
    assert!(!delta_text(&json_chunks(&text), "reasoning_content").is_empty());
}

/// Checks the subset of JSON Schema the sim promises to honour.
fn fits(value: &Value, schema: &Value) -> bool {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return options.contains(value);
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let Some(object) = value.as_object() else { return false };
            let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
            let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            required.iter().all(|name| name.as_str().is_some_and(|n| object.contains_key(n)))
                && object.iter().all(|(k, v)| properties.get(k).is_none_or(|s| fits(v, s)))
        }
        Some("array") => {
            value.as_array().is_some_and(|items| items.iter().all(|i| fits(i, &schema["items"])))
        }
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        _ => true,
    }
}

fn person_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "height": {"type": "number"},
            "admin": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "role": {"enum": ["reader", "writer"]},
            "address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        },
        "required": ["name", "age", "role", "address"]
    })
}

#[tokio::test]
async fn structured_output_fits_the_schema() {
    let sim = start(&[]).await;
    for thinking in [false, true] {
        let mut body = chat_stream("Give me a person as JSON.");
        body["response_format"] =
            json!({"type": "json_schema", "json_schema": {"name": "person", "schema": person_schema()}});
        body["chat_template_kwargs"] = json!({"enable_thinking": thinking});
        let (_, text) = post_text(&sim, "/v1/chat/completions", &body).await;
        let content = delta_text(&json_chunks(&text), "content");
        let value: Value =
            serde_json::from_str(&content).unwrap_or_else(|e| panic!("not one JSON value ({e}): {content}"));
        assert!(fits(&value, &person_schema()), "{value}");
    }
}

#[tokio::test]
async fn tool_call_arguments_fit_the_parameters() {
    let sim = start(&[]).await;
    let tools = json!([
        {"type": "function", "function": {"name": "lookup_user", "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}},
        {"type": "function", "function": {"name": "create_person", "parameters": person_schema()}},
    ]);
    let mut body = chat_stream("Create a person.");
    body["tools"] = tools.clone();
    body["tool_choice"] = json!({"type": "function", "function": {"name": "create_person"}});
    let (_, text) = post_text(&sim, "/v1/chat/completions", &body).await;
    let chunks = json_chunks(&text);
    let calls: Vec<&Value> =
        chunks.iter().filter_map(|c| c["choices"].get(0)?["delta"].get("tool_calls")).collect();
    assert!(!calls.is_empty());
    assert_eq!(calls[0][0]["function"]["name"], "create_person");
    assert_eq!(calls[0][0]["type"], "function");
    assert!(calls[0][0]["id"].as_str().unwrap().starts_with("chatcmpl-tool-"));
    let arguments: String = calls.iter().filter_map(|c| c[0]["function"]["arguments"].as_str()).collect();
    let value: Value = serde_json::from_str(&arguments).unwrap();
    assert!(fits(&value, &person_schema()), "{value}");
    assert_eq!(chunks[chunks.len() - 2]["choices"][0]["finish_reason"], "tool_calls");

    // Non-streaming, default choice: the first tool.
    let mut body = chat("Look up a user.");
    body["tools"] = tools.clone();
    let (_, response) = post_json(&sim, "/v1/chat/completions", &body).await;
    let call = &response["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "lookup_user");
    let arguments: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert!(arguments["id"].is_i64());
    assert_eq!(response["choices"][0]["finish_reason"], "tool_calls");

    // tool_choice "none": a normal reply.
    let mut body = chat("Write about 4 words.");
    body["tools"] = tools;
    body["tool_choice"] = json!("none");
    let (_, response) = post_json(&sim, "/v1/chat/completions", &body).await;
    assert_eq!(response["choices"][0]["finish_reason"], "stop");
    assert_eq!(response["choices"][0]["message"]["tool_calls"], json!([]));
}

#[tokio::test]
async fn same_seed_same_reply_other_seed_other_reply() {
    let sim = start(&[]).await;
    let reply = |seed: u64| {
        let mut body = chat("Write about 40 words.");
        body["seed"] = json!(seed);
        let sim = &sim;
        async move {
            post_json(sim, "/v1/chat/completions", &body).await.1["choices"][0]["message"]["content"].clone()
        }
    };
    assert_eq!(reply(1).await, reply(1).await);
    assert_ne!(reply(1).await, reply(2).await);

    // A fresh server with the same profile seed answers the same.
    let other = start(&[]).await;
    let mut body = chat("Write about 40 words.");
    body["seed"] = json!(1);
    let (_, again) = post_json(&other, "/v1/chat/completions", &body).await;
    assert_eq!(again["choices"][0]["message"]["content"], reply(1).await);
}

#[tokio::test]
async fn repeated_prefix_is_served_from_the_prefix_cache() {
    let sim = start(&[]).await;
    let shared = "shared system context ".repeat(100);
    let ask = |tail: &str| {
        let body = json!({
            "messages": [{"role": "system", "content": shared}, {"role": "user", "content": tail}],
            "stream": true, "stream_options": {"include_usage": true},
        });
        let sim = &sim;
        async move { usage_of(&json_chunks(&post_text(sim, "/v1/chat/completions", &body).await.1)) }
    };
    let first = ask("first question").await;
    assert_eq!(first["prompt_tokens_details"]["cached_tokens"], 0);
    let second = ask("second question").await;
    let cached = second["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap();
    assert!(cached >= 500 && cached < second["prompt_tokens"].as_u64().unwrap(), "{second}");
    assert_eq!(cached % 16, 0, "whole blocks only");

    let off = start(&[("prefix-cache", "false")]).await;
    let body = json!({"messages": [{"role": "user", "content": shared}], "stream": true, "stream_options": {"include_usage": true}});
    post_text(&off, "/v1/chat/completions", &body).await;
    let (_, text) = post_text(&off, "/v1/chat/completions", &body).await;
    assert_eq!(usage_of(&json_chunks(&text))["prompt_tokens_details"]["cached_tokens"], 0);
}

#[tokio::test]
async fn speculative_decoding_puts_several_tokens_in_one_chunk() {
    let sim = start(&[("spec-draft-tokens", "4"), ("spec-acceptance", "0.8")]).await;
    let (_, text) = post_text(&sim, "/v1/chat/completions", &chat_stream("Write about 200 words.")).await;
    let chunks = json_chunks(&text);
    let content_chunks = chunks
        .iter()
        .filter(|c| c["choices"].get(0).is_some_and(|ch| ch["delta"].get("content").is_some()))
        .count();
    let tokens = usage_of(&chunks)["completion_tokens"].as_u64().unwrap() as usize;
    assert_eq!(delta_text(&chunks, "content").split_whitespace().count(), 200);
    assert!(content_chunks * 2 < tokens, "{content_chunks} chunks for {tokens} tokens");

    let (_, metrics) = get_text(&sim, "/metrics").await;
    let value = |name: &str| -> u64 {
        let line = metrics.lines().find(|l| l.starts_with(name)).unwrap();
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (drafts, accepted) = (
        value("vllm:spec_decode_num_draft_tokens_total"),
        value("vllm:spec_decode_num_accepted_tokens_total"),
    );
    assert!(accepted > 0 && accepted < drafts, "{accepted} of {drafts}");
}

#[tokio::test]
async fn ground_truth_records_every_chunk_by_request_and_canary() {
    let file = std::env::temp_dir().join(format!("anvil-sim-gt-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let path = file.to_str().unwrap().to_owned();
    let sim = start(&[("ground-truth-file", path.as_str())]).await;
    let (_, text) = post_text(
        &sim,
        "/v1/chat/completions",
        &chat_stream("Begin your reply with ANVIL_REQ_4_00002. Write about 9 words."),
    )
    .await;
    let events = split_sse(&text).len();

    let (_, truth) = get_text(&sim, "/debug/ground-truth?clear=1").await;
    let truth: Value = serde_json::from_str(&truth).unwrap();
    let record = &truth[0];
    assert_eq!(record["canary"], "ANVIL_REQ_4_00002");
    assert!(record["request_id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(record["outcome"], "completed");
    assert_eq!(record["completion_tokens"], 5 + 9);
    let chunks = record["chunks"].as_array().unwrap();
    // One record per token event (the role chunk rides with the first) and
    // one for the closing usage + [DONE] events.
    assert_eq!(chunks.len(), events - 2);
    let tokens: u64 = chunks.iter().map(|c| c["tokens"].as_u64().unwrap()).sum();
    assert_eq!(tokens, 14);
    let mono: Vec<u64> = chunks.iter().map(|c| c["mono_ns"].as_u64().unwrap()).collect();
    assert!(mono.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(record["first_byte"]["mono_ns"].as_u64(), mono.first().copied());
    assert_eq!(record["last_byte"]["mono_ns"].as_u64(), mono.last().copied());

    let (_, emptied) = get_text(&sim, "/debug/ground-truth").await;
    assert_eq!(emptied, "[]");
    let lines = std::fs::read_to_string(&file).unwrap();
    let line: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(line["canary"], "ANVIL_REQ_4_00002");
    let _ = std::fs::remove_file(&file);
}
