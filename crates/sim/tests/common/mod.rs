//! Helpers shared by the sim's integration tests: start a sim on loopback,
//! talk to it with a plain HTTP client, split raw SSE bodies.
#![allow(dead_code)]

use anvil_sim::{SimHandle, SimProfile};
use serde_json::{Value, json};

/// A profile fast enough for tests: ~1 ms steps, near-instant prefill.
pub fn fast_profile() -> SimProfile {
    let mut profile = SimProfile::default();
    for (key, value) in
        [("decode-step-ms", "1"), ("decode-step-ms-per-seq", "0.01"), ("prefill-tok-s", "10000000")]
    {
        profile.set(key, value).expect("fast profile keys are valid");
    }
    profile
}

/// Start a sim with the fast profile plus `settings`.
pub async fn start(settings: &[(&str, &str)]) -> SimHandle {
    let mut profile = fast_profile();
    for (key, value) in settings {
        profile.set(key, value).expect("test settings are valid");
    }
    start_profile(profile).await
}

pub async fn start_profile(profile: SimProfile) -> SimHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    anvil_sim::spawn(profile, listener).await.expect("sim starts")
}

/// A reqwest client; reqwest's TLS needs the crypto provider anvil-net installs.
pub fn client() -> reqwest::Client {
    anvil_net::install_crypto_provider();
    reqwest::Client::new()
}

pub async fn post(sim: &SimHandle, path: &str, body: &Value) -> reqwest::Response {
    client().post(format!("{}{path}", sim.base_url())).json(body).send().await.expect("request sent")
}

/// POST and return (status, body text); panics on transport errors.
pub async fn post_text(sim: &SimHandle, path: &str, body: &Value) -> (u16, String) {
    let response = post(sim, path, body).await;
    let status = response.status().as_u16();
    (status, response.text().await.expect("body read"))
}

pub async fn post_json(sim: &SimHandle, path: &str, body: &Value) -> (u16, Value) {
    let (status, text) = post_text(sim, path, body).await;
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")))
}

pub async fn get_text(sim: &SimHandle, path: &str) -> (u16, String) {
    let response = client().get(format!("{}{path}", sim.base_url())).send().await.expect("request sent");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body read"))
}

/// A streamed chat request with usage, for `prompt` as the only user message.
pub fn chat_stream(prompt: &str) -> Value {
    json!({
        "model": "anvil-sim",
        "messages": [{"role": "user", "content": prompt}],
        "stream": true,
        "stream_options": {"include_usage": true},
    })
}

pub fn chat(prompt: &str) -> Value {
    json!({"model": "anvil-sim", "messages": [{"role": "user", "content": prompt}]})
}

/// One SSE event: optional `event:` name and its `data:` payload.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// Split an SSE body strictly: events end with "\n\n", every line is
/// `event: ` or `data: `, and nothing follows the last separator.
pub fn split_sse(body: &str) -> Vec<SseEvent> {
    assert!(
        body.ends_with("\n\n"),
        "SSE body must end with a blank line: {:?}",
        &body[body.len().saturating_sub(80)..]
    );
    body[..body.len() - 2]
        .split("\n\n")
        .map(|block| {
            let mut event = SseEvent { event: None, data: String::new() };
            for line in block.split('\n') {
                if let Some(name) = line.strip_prefix("event: ") {
                    event.event = Some(name.to_owned());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    event.data = data.to_owned();
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            event
        })
        .collect()
}

/// The JSON chunks of an OpenAI-style stream, checking `data: [DONE]` last.
pub fn json_chunks(body: &str) -> Vec<Value> {
    let events = split_sse(body);
    let (last, chunks) = events.split_last().expect("at least one event");
    assert_eq!(last.data, "[DONE]", "stream must end with [DONE]");
    chunks
        .iter()
        .map(|e| {
            serde_json::from_str(&e.data)
                .unwrap_or_else(|err| panic!("chunk is not JSON ({err}): {}", e.data))
        })
        .collect()
}

/// Concatenated `delta.<field>` text of chat chunks.
pub fn delta_text(chunks: &[Value], field: &str) -> String {
    chunks
        .iter()
        .filter_map(|c| c["choices"].get(0)?["delta"].get(field)?.as_str().map(str::to_owned))
        .collect()
}

pub fn usage_of(chunks: &[Value]) -> Value {
    chunks.last().expect("chunks")["usage"].clone()
}

/// Client-side timing of one streamed chat request.
#[derive(Debug, Clone, Copy)]
pub struct StreamTiming {
    /// Request start → first non-empty content delta.
    pub ttft: std::time::Duration,
    pub e2e: std::time::Duration,
    pub completion_tokens: u64,
}

impl StreamTiming {
    /// (completion_tokens − 1) / (e2e − ttft), as the capacity protocol defines it.
    pub fn decode_tok_s(&self) -> f64 {
        (self.completion_tokens.saturating_sub(1)) as f64 / (self.e2e - self.ttft).as_secs_f64()
    }
}

/// Send a streamed chat request and time it as bytes arrive.
pub async fn time_stream(client: &reqwest::Client, base_url: &str, body: &Value) -> StreamTiming {
    let start = std::time::Instant::now();
    let mut response =
        client.post(format!("{base_url}/v1/chat/completions")).json(body).send().await.expect("request sent");
    let mut text = String::new();
    let mut ttft = None;
    while let Some(bytes) = response.chunk().await.expect("stream chunk") {
        text.push_str(std::str::from_utf8(&bytes).expect("utf-8"));
        if ttft.is_none() && text.contains("\"delta\":{\"content\":\"") && has_nonempty_content(&text) {
            ttft = Some(start.elapsed());
        }
    }
    let e2e = start.elapsed();
    let chunks = json_chunks(&text);
    StreamTiming {
        ttft: ttft.expect("some content arrived"),
        e2e,
        completion_tokens: usage_of(&chunks)["completion_tokens"].as_u64().expect("usage"),
    }
}

fn has_nonempty_content(text: &str) -> bool {
    text.match_indices("\"delta\":{\"content\":\"")
        .any(|(at, pattern)| !text[at + pattern.len()..].starts_with('"'))
}

/// Run `concurrency` identical-shape requests at once (distinct prompts, so
/// the prefix cache does not help) and return their timings.
pub async fn burst(
    base_url: &str,
    concurrency: usize,
    prompt_words: usize,
    output_words: usize,
) -> Vec<StreamTiming> {
    let client = client();
    let tasks: Vec<_> = (0..concurrency)
        .map(|i| {
            let filler: String = (0..prompt_words).map(|w| format!("w{i}x{w} ")).collect();
            let body = chat_stream(&format!("{filler}\nWrite about {output_words} words."));
            let client = client.clone();
            let base_url = base_url.to_owned();
            tokio::spawn(async move { time_stream(&client, &base_url, &body).await })
        })
        .collect();
    let mut timings = Vec::new();
    for task in tasks {
        timings.push(task.await.expect("request task"));
    }
    timings
}

pub fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let values: Vec<f64> = values.collect();
    values.iter().sum::<f64>() / values.len() as f64
}
