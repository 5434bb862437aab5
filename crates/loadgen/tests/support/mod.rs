//! A tiny raw-tokio HTTP/1.1 server that streams hand-written, vLLM-framed
//! SSE, with scripted faults per request index. It shares no code with the
//! load generator on purpose: it is the other side of the contract.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    None,
    Http500,
    /// Close the connection after a few content chunks.
    DisconnectMidStream,
    /// Send an event whose payload is not JSON.
    MalformedEvent,
    /// Finish normally but never send a usage chunk.
    MissingUsage,
    /// Begin the reply with another request's marker.
    ForeignCanary,
    /// Put an `{"error":…}` object in the stream.
    InStreamError,
    /// Stall before the first byte for this long.
    Stall(Duration),
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Reasoning chunks before the content.
    pub reasoning_chunks: u32,
    /// Content words after the marker (one chunk each).
    pub content_words: u32,
    pub chunk_delay: Duration,
    pub faults: HashMap<u64, Fault>,
    /// Server-side tokens per prompt word (for calibration tests).
    pub tokens_per_word: f64,
    /// Split every event's bytes into two writes with a pause between.
    pub split_writes: bool,
    /// Pause between reading the request and the first event.
    pub first_event_delay: Duration,
    /// Close the connection after every streamed response, without saying
    /// so in a header (what llama-server does).
    pub close_after_response: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            reasoning_chunks: 3,
            content_words: 5,
            chunk_delay: Duration::from_millis(1),
            faults: HashMap::new(),
            tokens_per_word: 1.5,
            split_writes: true,
            first_event_delay: Duration::ZERO,
            close_after_response: false,
        }
    }
}

pub struct RawServer {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicU64>,
    /// Connections accepted (a keep-alive client opens one per concurrent stream).
    pub connections: Arc<AtomicU64>,
    /// Server-side ground truth: request index → ms from the request being
    /// read to the first content event being written (also at `GET /truth`).
    pub truth: Truth,
}

pub type Truth = Arc<Mutex<HashMap<u64, f64>>>;

impl RawServer {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

pub async fn spawn(config: ServerConfig) -> RawServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let config = Arc::new(config);
    let requests = Arc::new(AtomicU64::new(0));
    let truth: Truth = Arc::default();
    let connections = Arc::new(AtomicU64::new(0));
    let (counter, log, accepted) = (requests.clone(), truth.clone(), connections.clone());
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            accepted.fetch_add(1, Ordering::Relaxed);
            let (config, counter, log) = (config.clone(), counter.clone(), log.clone());
            tokio::spawn(async move {
                let _ = serve_connection(socket, &config, &counter, &log).await;
            });
        }
    });
    RawServer { addr, requests, connections, truth }
}

/// Reads one request (headers + Content-Length body); `None` at EOF.
async fn read_request(
    socket: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<(String, Vec<u8>)>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let mut chunk = [0u8; 65536];
                let n = socket.read(&mut chunk).await?;
                if n == 0 {
                    return Ok(None);
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = buf[end + 4..end + 4 + length].to_vec();
            buf.drain(..end + 4 + length);
            return Ok(Some((head, body)));
        }
        let mut chunk = [0u8; 65536];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn chunked(payload: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", payload.len()).into_bytes();
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
    out
}

fn chat_chunk(field: &str, text: &str, model: &str) -> String {
    let text = serde_json::to_string(text).unwrap();
    format!(
        "data: {{\"id\":\"chatcmpl-raw\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"{model}\",\"choices\":[{{\"index\":0,\"delta\":{{\"{field}\":{text}}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
    )
}

fn prompt_text(request: &serde_json::Value) -> String {
    if let Some(messages) = request["messages"].as_array() {
        messages.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")
    } else if let Some(p) = request["prompt"].as_str() {
        p.to_string()
    } else {
        request["input"].as_str().unwrap_or_default().to_string()
    }
}

/// The request index and marker from `Begin your reply with ANVIL_REQ_s_i.`
fn marker_in(prompt: &str) -> Option<(String, u64)> {
    let at = prompt.rfind("ANVIL_REQ_")?;
    let marker: String =
        prompt[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let index = marker.rsplit('_').next()?.parse().ok()?;
    Some((marker, index))
}

async fn serve_connection(
    mut socket: TcpStream,
    config: &ServerConfig,
    counter: &AtomicU64,
    truth: &Truth,
) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut buf = Vec::new();
    while let Some((head, body)) = read_request(&mut socket, &mut buf).await? {
        let received = Instant::now();
        if head.starts_with("GET /truth") {
            let body = serde_json::to_string(&*truth.lock().unwrap()).unwrap();
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(resp.as_bytes()).await?;
            continue;
        }
        counter.fetch_add(1, Ordering::Relaxed);
        let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let prompt = prompt_text(&request);
        let (marker, index) = marker_in(&prompt).unwrap_or_else(|| ("".into(), u64::MAX));
        let fault = config.faults.get(&index).copied().unwrap_or(Fault::None);
        let model = request["model"].as_str().unwrap_or("m").to_string();
        let max_tokens =
            request["max_tokens"].as_u64().or(request["max_output_tokens"].as_u64()).unwrap_or(1000);
        let prompt_tokens =
            20 + (prompt.split_whitespace().count() as f64 * config.tokens_per_word).round() as u64;
        let responses_api = head.starts_with("POST /v1/responses");
        let completions_api = head.starts_with("POST /v1/completions");

        if let Fault::Stall(d) = fault {
            tokio::time::sleep(d).await;
        }
        if fault == Fault::Http500 {
            let body = "{\"error\":\"boom\"}";
            let resp = format!(
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(resp.as_bytes()).await?;
            continue;
        }
        socket
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n")
            .await?;

        // Build the event list first, then write it with the configured pacing.
        let mut events: Vec<String> = Vec::new();
        let mut completion_tokens = 0u64;
        let reply_marker = if fault == Fault::ForeignCanary { format!("{marker}9") } else { marker.clone() };
        let mut words: Vec<String> = vec![];
        if max_tokens > 1 {
            if !reply_marker.is_empty() {
                words.push(reply_marker);
            }
            words.extend((0..config.content_words).map(|i| format!(" w{i}")));
        } else {
            words.push("x".into());
        }
        if responses_api {
            for i in 0..config.reasoning_chunks {
                events.push(format!("event: response.reasoning_text.delta\ndata: {{\"type\":\"response.reasoning_text.delta\",\"delta\":\"r{i} \"}}\n\n"));
                completion_tokens += 1;
            }
            for w in &words {
                let text = serde_json::to_string(w).unwrap();
                events.push(format!("event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"delta\":{text}}}\n\n"));
                completion_tokens += 1;
            }
            events.push(format!("event: response.completed\ndata: {{\"type\":\"response.completed\",\"response\":{{\"status\":\"completed\",\"usage\":{{\"input_tokens\":{prompt_tokens},\"output_tokens\":{completion_tokens}}}}}}}\n\n"));
        } else {
            if !completions_api {
                events.push(
                    chat_chunk("role", "assistant", &model)
                        .replace("\"role\":\"assistant\"", "\"role\":\"assistant\",\"content\":\"\""),
                );
                for i in 0..config.reasoning_chunks {
                    events.push(chat_chunk("reasoning_content", &format!("r{i} "), &model));
                    completion_tokens += 1;
                }
            }
            for (i, w) in words.iter().enumerate() {
                if completions_api {
                    let text = serde_json::to_string(w).unwrap();
                    events.push(format!(
                        "data: {{\"choices\":[{{\"index\":0,\"text\":{text},\"finish_reason\":null}}]}}\n\n"
                    ));
                } else {
                    events.push(chat_chunk("content", w, &model));
                }
                completion_tokens += 1;
                if i == 1 && fault == Fault::MalformedEvent {
                    events.push("data: {\"choices\":[{\"delta\":{\"content\":\"oops\"\n\n".into());
                }
                if i == 1 && fault == Fault::InStreamError {
                    events.push("data: {\"error\":{\"message\":\"engine died\",\"code\":500}}\n\n".into());
                }
            }
            events.push("data: {\"id\":\"chatcmpl-raw\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".to_string());
            if fault != Fault::MissingUsage {
                events.push(format!("data: {{\"id\":\"chatcmpl-raw\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"total_tokens\":{},\"completion_tokens\":{completion_tokens}}}}}\n\n", prompt_tokens + completion_tokens));
            }
            events.push("data: [DONE]\n\n".into());
        }
        if !config.first_event_delay.is_zero() {
            tokio::time::sleep(config.first_event_delay).await;
        }
        let mut first_content_written = false;
        for (i, event) in events.iter().enumerate() {
            if fault == Fault::DisconnectMidStream && i == 4 {
                socket.write_all(&chunked(&event.as_bytes()[..event.len() / 2])).await?;
                socket.shutdown().await?;
                return Ok(());
            }
            let bytes = event.as_bytes();
            if config.split_writes && bytes.len() > 2 {
                let cut = (i * 7 + 1) % (bytes.len() - 1) + 1;
                socket.write_all(&chunked(&bytes[..cut])).await?;
                socket.flush().await?;
                tokio::time::sleep(Duration::from_micros(200)).await;
                socket.write_all(&chunked(&bytes[cut..])).await?;
            } else {
                socket.write_all(&chunked(bytes)).await?;
            }
            if !first_content_written
                && (event.contains("\"content\":\"A")
                    || event.contains("output_text.delta")
                    || event.contains("\"text\""))
            {
                first_content_written = true;
                truth.lock().unwrap().insert(index, received.elapsed().as_secs_f64() * 1000.0);
            }
            if !config.chunk_delay.is_zero() {
                tokio::time::sleep(config.chunk_delay).await;
            }
        }
        socket.write_all(b"0\r\n\r\n").await?;
        if config.close_after_response {
            return Ok(());
        }
    }
    Ok(())
}
