//! The real engine: llama.cpp's `llama-server` with SmolLM2-135M, built by
//! `scripts/llama-server.sh`. Skipped (with a note) unless both
//! `LLAMA_SERVER` and `SMOLLM2_GGUF` are set:
//!
//!     eval "$(scripts/llama-server.sh --print-env)"
//!     cargo test -p anvil-proc --test main llama_server:: -- --nocapture

use std::time::{Duration, Instant};

use crate::common::{Scratch, is_alive};
use anvil_proc::{
    LaunchSpec, ReadySpec, StopSignal, engine_identity, free_port, launch, metric_deltas, scrape_metrics,
};
use futures_util::StreamExt;
use serde_json::{Value, json};

fn real_engine() -> Option<(String, String)> {
    match (std::env::var("LLAMA_SERVER"), std::env::var("SMOLLM2_GGUF")) {
        (Ok(server), Ok(model)) => Some((server, model)),
        _ => {
            eprintln!(
                "skipped: set LLAMA_SERVER and SMOLLM2_GGUF \
                 (eval \"$(scripts/llama-server.sh --print-env)\")"
            );
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_server_ready_streams_a_chat_completion_and_stops_cleanly() {
    let Some((program, model)) = real_engine() else {
        return;
    };
    let scratch = Scratch::new();
    let port = free_port().expect("port");
    let identity = engine_identity(&program, &["--version"]).expect("identity");
    eprintln!("engine: {} blake3={}", identity.program_path, &identity.blake3[..16]);
    eprintln!("version: {:?}", identity.version_output);

    let spec = LaunchSpec {
        name: "llama-smollm2".to_string(),
        program,
        args: [
            "-m",
            &model,
            "--alias",
            "smollm2-135m",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "-c",
            "8192",
            "--parallel",
            "4",
            "--jinja",
            "-t",
            "2",
            "--metrics",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        env: Vec::new(),
        cwd: None,
        port,
        ready: ReadySpec {
            http_path: Some("/health".to_string()),
            expect_status: 200,
            log_pattern: None,
            timeout: Duration::from_secs(180),
            interval: Duration::from_millis(100),
            tls: None,
        },
        log_path: scratch.path("llama-server.log"),
        grace: Duration::from_secs(10),
        registry_dir: scratch.registry(),
    };
    let server = launch(spec).await.expect("llama-server becomes ready");
    eprintln!("startup: {:.2}s", server.startup().as_secs_f64());
    let before = scrape_metrics(&server.base_url()).await.expect("metrics");

    let result = streamed_chat(&server.base_url()).await;
    eprintln!(
        "request: ttft {:.3}s, e2e {:.3}s, {} prompt + {} completion tokens, {} content chunks, decode {:.1} tok/s",
        result.ttft.as_secs_f64(),
        result.e2e.as_secs_f64(),
        result.prompt_tokens,
        result.completion_tokens,
        result.content_chunks,
        (result.completion_tokens.saturating_sub(1)) as f64
            / (result.e2e - result.ttft).as_secs_f64().max(1e-9),
    );
    assert!(result.prompt_tokens > 0, "usage carries prompt tokens");
    assert!(result.completion_tokens > 0, "usage carries completion tokens");
    assert!(!result.text.is_empty(), "streamed some content");

    let after = scrape_metrics(&server.base_url()).await.expect("metrics");
    let deltas = metric_deltas(&before, &after);
    assert_eq!(
        deltas.get("llamacpp:tokens_predicted_total").copied(),
        Some(result.completion_tokens as f64),
        "server metrics agree with usage"
    );

    let pid = server.pid() as i32;
    let report = server.stop().await;
    eprintln!("stop: {:?} in {:.2}s", report.signal_used, report.duration.as_secs_f64());
    assert_eq!(report.signal_used, StopSignal::Term);
    assert!(report.survivors.is_empty());
    assert!(!is_alive(pid));
    assert!(scratch.registry_records().is_empty());
}

struct ChatResult {
    ttft: Duration,
    e2e: Duration,
    text: String,
    content_chunks: usize,
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// One streamed chat completion, timed on arrival of bytes. A unique
/// prefix avoids the server's prompt cache.
async fn streamed_chat(base_url: &str) -> ChatResult {
    let unique =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let body = json!({
        "model": "smollm2-135m",
        "messages": [{"role": "user", "content": format!("[{unique}] Name three colors.")}],
        "max_tokens": 32,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    anvil_net::install_crypto_provider();
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let started = Instant::now();
    let response =
        client.post(format!("{base_url}/v1/chat/completions")).json(&body).send().await.expect("POST");
    assert!(response.status().is_success(), "{}", response.status());
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut result = ChatResult {
        ttft: Duration::ZERO,
        e2e: Duration::ZERO,
        text: String::new(),
        content_chunks: 0,
        prompt_tokens: 0,
        completion_tokens: 0,
    };
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("chunk");
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find('\n') {
            let line = buffer[..end].trim().to_string();
            buffer.drain(..=end);
            let Some(data) = line.strip_prefix("data:").map(str::trim) else {
                continue;
            };
            if data == "[DONE]" {
                continue;
            }
            let event: Value = serde_json::from_str(data).expect("JSON event");
            if let Some(content) = event["choices"][0]["delta"]["content"].as_str()
                && !content.is_empty()
            {
                if result.content_chunks == 0 {
                    result.ttft = started.elapsed();
                }
                result.content_chunks += 1;
                result.text.push_str(content);
            }
            if let Some(usage) = event.get("usage").filter(|u| u.is_object()) {
                result.prompt_tokens = usage["prompt_tokens"].as_u64().unwrap_or(0);
                result.completion_tokens = usage["completion_tokens"].as_u64().unwrap_or(0);
            }
        }
    }
    result.e2e = started.elapsed();
    result
}
