//! The HTTP side: one pooled client, request bodies, and streaming one
//! request into a [`StreamObservation`].

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use serde_json::{Map, Value, json};

use crate::observe::StreamObservation;
use crate::record::FailureClass;
use crate::spec::{Api, CellSpec, Target, ThinkingMode};
use crate::sse::SseParser;

/// One client for the whole cell, so connections are reused.
pub fn build_client(concurrency: u32) -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency.max(1) as usize)
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .no_proxy()
        .build()
        .map_err(|e| anyhow::anyhow!("building the HTTP client: {e}"))
}

/// The endpoint URL for `api` under a target's base URL.
pub fn endpoint(base_url: &str, api: Api) -> String {
    let base = base_url.trim_end_matches('/');
    let root = if base.ends_with("/v1") { base.to_string() } else { format!("{base}/v1") };
    let path = match api {
        Api::Chat => "chat/completions",
        Api::Completions => "completions",
        Api::Responses => "responses",
    };
    format!("{root}/{path}")
}

/// The JSON body of request `index`.
pub fn request_body(spec: &CellSpec, prompt: &str, index: u64, marker: &str, max_tokens: u32) -> Value {
    let mut body = match spec.api {
        Api::Chat => json!({
            "model": spec.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "stream": true,
            "stream_options": {"include_usage": true},
        }),
        Api::Completions => json!({
            "model": spec.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "stream": true,
            "stream_options": {"include_usage": true},
        }),
        Api::Responses => json!({
            "model": spec.model,
            "input": prompt,
            "max_output_tokens": max_tokens,
            "stream": true,
        }),
    };
    let Value::Object(fields) = &mut body else { unreachable!("built as an object above") };
    if let Some(t) = spec.temperature {
        fields.insert("temperature".into(), json!(t));
    }
    if let Some(p) = spec.top_p {
        fields.insert("top_p".into(), json!(p));
    }
    if let Some(s) = spec.sampling_seed {
        fields.insert("seed".into(), json!(s));
    }
    if spec.api == Api::Chat && spec.thinking != ThinkingMode::Default {
        let on = spec.thinking == ThinkingMode::On;
        fields.insert("chat_template_kwargs".into(), json!({"enable_thinking": on}));
    }
    if let Value::Object(extra) = &spec.extra_body {
        let replace = |s: &str| {
            s.replace("{marker}", marker).replace("{index}", &index.to_string()).replace("{seed}", &spec.seed.to_string())
        };
        merge(fields, extra, &replace);
    }
    body
}

/// Deep-merges `extra` into `into` (objects merge, everything else replaces),
/// substituting placeholders in string values.
fn merge(into: &mut Map<String, Value>, extra: &Map<String, Value>, replace: &impl Fn(&str) -> String) {
    for (key, value) in extra {
        match (into.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(more)) => merge(existing, more, replace),
            _ => {
                into.insert(key.clone(), substitute(value, replace));
            }
        }
    }
}

fn substitute(value: &Value, replace: &impl Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(replace(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, replace)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), substitute(v, replace))).collect()),
        other => other.clone(),
    }
}

/// Sends one streaming request and observes it until the stream ends, an
/// error occurs, or `timeout` elapses.
pub async fn execute(
    client: &reqwest::Client,
    target: &Target,
    url: &str,
    api: Api,
    body: Vec<u8>,
    timeout: Duration,
) -> (StreamObservation, Instant) {
    let mut attempt = 0;
    loop {
        let mut request = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body.clone());
        if let Some(key) = &target.api_key {
            request = request.bearer_auth(key);
        }
        let start = Instant::now();
        let mut obs = StreamObservation::new(api, start, unix_ns_now());
        let outcome = tokio::time::timeout(timeout, stream_into(request, &mut obs)).await;
        if outcome.is_err() {
            obs.fail(FailureClass::Timeout, format!("no complete response within {} ms", timeout.as_millis()));
        }
        // A pooled connection the server had already closed (llama-server
        // closes after each stream while advertising keep-alive) fails before
        // a single byte comes back: the request never reached the engine, so
        // it is sent once more on a fresh connection, with a fresh start time.
        if attempt == 0 && is_stale_connection(&obs) {
            attempt += 1;
            obs.stale_connection_retries = 0;
            continue;
        }
        obs.stale_connection_retries = attempt;
        return (obs, Instant::now());
    }
}

fn is_stale_connection(obs: &StreamObservation) -> bool {
    obs.http_status.is_none()
        && obs.failure.as_ref().is_some_and(|(class, detail)| *class == FailureClass::Disconnect && detail.contains("connection closed before message completed"))
}

async fn stream_into(request: reqwest::RequestBuilder, obs: &mut StreamObservation) {
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            let class = if e.is_connect() { FailureClass::Connect } else { FailureClass::Disconnect };
            obs.fail(class, error_chain(&e));
            return;
        }
    };
    let status = response.status();
    obs.http_status = Some(status.as_u16());
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        let shown: String = text.chars().take(300).collect();
        obs.fail(FailureClass::HttpStatus, format!("HTTP {status}: {shown}"));
        return;
    }
    let mut parser = SseParser::new();
    let mut stream = response.bytes_stream();
    let mut last_bytes = None;
    while let Some(item) = stream.next().await {
        let at = Instant::now();
        match item {
            Ok(bytes) => {
                last_bytes = Some(at);
                parser.feed(&bytes, |event| obs.on_event(event, at));
                if obs.failure.is_some() {
                    return;
                }
            }
            Err(e) => {
                obs.fail(FailureClass::Disconnect, format!("stream broke: {}", error_chain(&e)));
                return;
            }
        }
    }
    if !obs.done {
        obs.end = last_bytes;
        let detail = if parser.pending_bytes() > 0 {
            "stream ended in the middle of an event"
        } else {
            "stream ended without its end marker"
        };
        obs.fail(FailureClass::Disconnect, detail);
    }
}

/// The wall clock in ns since the Unix epoch (0 if the clock is before it).
fn unix_ns_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(endpoint("http://h:1/", Api::Chat), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint("http://h:1/v1", Api::Responses), "http://h:1/v1/responses");
    }

    #[test]
    fn extra_body_merges_and_substitutes() {
        let spec = CellSpec {
            model: "m".into(),
            seed: 9,
            extra_body: json!({"grammar": "root ::= \"{marker} \" x", "stream_options": {"continuous_usage_stats": true}, "n": "{index}/{seed}"}),
            thinking: ThinkingMode::Off,
            ..CellSpec::default()
        };
        let body = request_body(&spec, "p", 4, "ANVIL_REQ_9_00004", 10);
        assert_eq!(body["grammar"], "root ::= \"ANVIL_REQ_9_00004 \" x");
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["stream_options"]["continuous_usage_stats"], true);
        assert_eq!(body["n"], "4/9");
        assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
    }
}
