//! A bare Rust client, the usual way to write one (tokio timers, reqwest,
//! serde_json per SSE event, a task per request), running the same
//! schedule as an anvil cell: the scale bench's reference column. It
//! shares no code with anvil-loadgen.
//!
//! Open loop: request k is due at `start + k / rate` (constant); the loop
//! sleeps to it and starts the request's task; closed loop: `concurrency` tasks each send their
//! next request when the previous one ends. Per request it keeps the send
//! time (wall clock, just before `send`), the lag behind its due time, and
//! TTFT (send to the first event with non-empty content).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use serde_json::{Value, json};

/// The open loop's in-flight cap (the scale bench's anvil rows use the same).
pub const IN_FLIGHT_CAP: usize = 1024;

/// How the bare client's requests are paced.
#[derive(Clone, Copy)]
pub enum Pace {
    Constant { rate_per_s: f64 },
    Closed { concurrency: u32 },
}

/// One measured request.
pub struct Sample {
    pub id: String,
    pub start_unix_ns: u64,
    /// Actual send minus due time, ms (closed loop: due when the stream's
    /// previous request ended, as anvil's send lag counts it).
    pub lag_ms: f64,
    pub ttft_ms: Option<f64>,
    pub content_chunks: u64,
    pub failed: bool,
    /// When its stream's last read ended.
    pub ended: Instant,
}

fn unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn body() -> Vec<u8> {
    let body = json!({
        "model": "s",
        "stream": true,
        "max_tokens": 4,
        "messages": [{"role": "user", "content": "hello"}],
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

/// Sends request `id` and reads its stream to the end.
async fn one(client: &reqwest::Client, url: &str, body: &[u8], id: String, due: Option<Instant>) -> Sample {
    let sent = Instant::now();
    let start_unix_ns = unix_ns();
    let lag_ms = due.map_or(0.0, |due| sent.saturating_duration_since(due).as_secs_f64() * 1e3);
    let mut sample = Sample {
        id: id.clone(),
        start_unix_ns,
        lag_ms,
        ttft_ms: None,
        content_chunks: 0,
        failed: true,
        ended: sent,
    };
    let request = client
        .post(url)
        .header("content-type", "application/json")
        .header("x-request-id", &id)
        .body(body.to_vec());
    let Ok(response) = request.send().await else {
        sample.ended = Instant::now();
        return sample;
    };
    let mut stream = response.bytes_stream();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(Ok(bytes)) = stream.next().await {
        pending.extend_from_slice(&bytes);
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = pending.drain(..end + 2).collect();
            let Some(data) = event.strip_prefix(b"data: ") else { continue };
            let Ok(value) = serde_json::from_slice::<Value>(data.trim_ascii()) else { continue };
            let content = value["choices"][0]["delta"]["content"].as_str().unwrap_or("");
            if !content.is_empty() {
                sample.content_chunks += 1;
                sample.ttft_ms.get_or_insert(sent.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    sample.ended = Instant::now();
    sample.failed = sample.ttft_ms.is_none();
    sample
}

/// Runs `warmup` requests (`warmup` at once, to open the connections),
/// then `requests` measured ones paced by `pace`; returns the measured.
pub async fn run(url: &str, pace: Pace, warmup: u32, requests: u32) -> Vec<Sample> {
    // reqwest is built without a TLS provider of its own; plain HTTP still needs one set.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder().tcp_nodelay(true).build().expect("a reqwest client");
    let url = format!("{url}/v1/chat/completions");
    let body: Arc<[u8]> = body().into();
    let warm: Vec<_> = (0..warmup)
        .map(|k| {
            let (client, url, body) = (client.clone(), url.clone(), body.clone());
            tokio::spawn(async move { one(&client, &url, &body, format!("warm-{k}"), None).await })
        })
        .collect();
    for task in warm {
        let _ = task.await;
    }
    let samples = Arc::new(Mutex::new(Vec::with_capacity(requests as usize)));
    let mut tasks = tokio::task::JoinSet::new();
    match pace {
        Pace::Constant { rate_per_s } => {
            // As such clients do: sleep to each due time, then start its task;
            // in flight at most `IN_FLIGHT_CAP`, as the anvil rows (a held
            // request's wait is its lag).
            let cap = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT_CAP));
            let start = Instant::now() + Duration::from_millis(10);
            for k in 0..requests {
                let due = start + Duration::from_secs_f64(f64::from(k) / rate_per_s);
                tokio::time::sleep_until(due.into()).await;
                let permit = cap.clone().acquire_owned().await.expect("the cap is never closed");
                let (client, url, body, samples) =
                    (client.clone(), url.clone(), body.clone(), samples.clone());
                tasks.spawn(async move {
                    let sample = one(&client, &url, &body, format!("bare-{k}"), Some(due)).await;
                    drop(permit);
                    samples.lock().unwrap().push(sample);
                });
                while tasks.try_join_next().is_some() {}
            }
        }
        Pace::Closed { concurrency } => {
            let next = Arc::new(std::sync::atomic::AtomicU32::new(0));
            for _ in 0..concurrency {
                let (client, url, body, samples, next) =
                    (client.clone(), url.clone(), body.clone(), samples.clone(), next.clone());
                tasks.spawn(async move {
                    // Each request is due when the stream's previous one ended.
                    let mut due = Instant::now();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if k >= requests {
                            break;
                        }
                        let sample = one(&client, &url, &body, format!("bare-{k}"), Some(due)).await;
                        due = sample.ended;
                        samples.lock().unwrap().push(sample);
                    }
                });
            }
        }
    }
    while tasks.join_next().await.is_some() {}
    Arc::try_unwrap(samples).map(|m| m.into_inner().unwrap()).unwrap_or_default()
}
