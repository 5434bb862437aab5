//! Client CPU per streamed chunk, printed as a table: anvil's client next to
//! a plain tokio + reqwest + serde_json client (the usual way to write one),
//! on the same server, rows alternating so both see the same machine load.
//!
//! CPU is whole-process user+sys (getrusage) over the cell, divided by the
//! output chunks received (non-empty reasoning or content deltas). The
//! server is this binary re-run as a child process (the raw SSE server from
//! the tests), so its CPU is not counted.
//! - flood: the server writes every event as fast as the socket takes it;
//!   the client is the bottleneck, several events arrive per read.
//! - paced: one event per stream per ~1 ms (an engine's decode step), so
//!   nearly every chunk is its own packet and its own read.
//!
//! TTFT accuracy is measured against the simulated engine's ground truth in
//! the `fidelity` bench.
//!
//! Run: cargo bench -p anvil-loadgen --bench client_cpu
//! (`CLIENT_CPU_ROUNDS=N` rounds per scenario, default 2; `CLIENT_CPU_ONLY=flood|paced`
//! runs one scenario, anvil's client only, e.g. under `perf record`.)

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anvil_loadgen::sse::SseParser;
use anvil_loadgen::{CellContext, CellSpec, Progress, Target, marker, run_cell};
use futures_util::StreamExt;
use serde_json::{Value, json};

const SERVER_ENV: &str = "ANVIL_LOADGEN_BENCH_SERVER";
const CONCURRENCY: u32 = 64;

/// (user, sys) CPU seconds of this whole process so far.
fn cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(usage.ru_utime), tv(usage.ru_stime))
}

fn run_server(content_words: u32, chunk_delay_us: u64) {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let config = support::ServerConfig {
            reasoning_chunks: 0,
            content_words,
            chunk_delay: Duration::from_micros(chunk_delay_us),
            split_writes: false,
            ..support::ServerConfig::default()
        };
        let server = support::spawn(config).await;
        println!("{}", server.addr);
        std::future::pending::<()>().await;
    });
}

struct Server {
    child: std::process::Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `chunk_delay_us` between events (0 = flood).
fn spawn_server(content_words: u32, chunk_delay_us: u64) -> Server {
    let exe = std::env::current_exe().expect("own path");
    let mut child = Command::new(exe)
        .env(SERVER_ENV, format!("{content_words},{chunk_delay_us}"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn server child");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("server address");
    Server { child, url: format!("http://{}", line.trim()) }
}

/// anvil's client through the public API: no calibration, no warmup, so
/// both clients do the same work.
async fn anvil_cell(url: &str, requests: u32) -> (u64, u32) {
    let spec = CellSpec {
        name: "bench".into(),
        model: "bench".into(),
        context_tokens: 0,
        concurrency: CONCURRENCY,
        requests,
        warmup_requests: 0,
        max_tokens: 4096,
        seed: 1,
        request_timeout_ms: 120_000,
        ..CellSpec::default()
    };
    let target =
        [Target { base_url: url.to_string(), api_key: None, label: "raw".into(), tls: Default::default() }];
    let report = run_cell(&spec, &target, &CellContext::default(), &|_: &Progress| {}).await.expect("cell");
    let chunks = report.records.iter().map(|r| u64::from(r.content_chunks + r.reasoning_chunks)).sum();
    (chunks, report.artifact["failed"].as_u64().unwrap_or(0) as u32)
}

/// The plain way: reqwest's byte stream, the same SSE parser, and every
/// event deserialized with serde_json.
async fn reqwest_cell(url: &str, requests: u32) -> (u64, u32) {
    anvil_net::install_crypto_provider();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(CONCURRENCY as usize)
        .tcp_nodelay(true)
        .no_proxy()
        .build()
        .expect("client");
    let endpoint = format!("{url}/v1/chat/completions");
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..CONCURRENCY {
        let (client, endpoint, next) = (client.clone(), endpoint.clone(), next.clone());
        workers.spawn(async move {
            let (mut chunks, mut failed) = (0u64, 0u32);
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= u64::from(requests) {
                    return (chunks, failed);
                }
                let body = json!({
                    "model": "bench",
                    "messages": [{"role": "user", "content": format!("Begin your reply with {}.", marker(1, k))}],
                    "max_tokens": 4096,
                    "stream": true,
                    "stream_options": {"include_usage": true},
                });
                let Ok(response) = client.post(&endpoint).json(&body).send().await else {
                    failed += 1;
                    continue;
                };
                let mut stream = response.bytes_stream();
                let mut parser = SseParser::new();
                let (mut done, mut first, mut last) = (false, None, None);
                while let Some(Ok(bytes)) = stream.next().await {
                    let at = Instant::now();
                    parser.feed(&bytes, |event| {
                        if event.data == b"[DONE]" {
                            done = true;
                            return;
                        }
                        let Ok(v) = serde_json::from_slice::<Value>(event.data) else { return };
                        let delta = &v["choices"][0]["delta"];
                        let text = |key: &str| delta[key].as_str().is_some_and(|t| !t.is_empty());
                        if text("content") || text("reasoning_content") {
                            chunks += 1;
                            first.get_or_insert(at);
                            last = Some(at);
                        }
                    });
                }
                failed += u32::from(!done || first.is_none() || last.is_none());
            }
        });
    }
    let (mut chunks, mut failed) = (0, 0);
    while let Some(done) = workers.join_next().await {
        let (c, f) = done.expect("worker");
        chunks += c;
        failed += f;
    }
    (chunks, failed)
}

fn main() {
    if let Ok(args) = std::env::var(SERVER_ENV) {
        let numbers: Vec<u64> = args.split(',').map(|v| v.parse().expect("number")).collect();
        run_server(numbers[0] as u32, numbers[1]);
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let rounds: usize = std::env::var("CLIENT_CPU_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let only = std::env::var("CLIENT_CPU_ONLY").ok();

    println!(
        "client CPU per output chunk, C={CONCURRENCY} (this process's user+sys over the cell / chunks received)"
    );
    println!(
        "us/chunk = user + sys, both shown per chunk; anvil/reqwest = the ratio of us/chunk within a round"
    );
    println!(
        "{:>8} {:>8} {:>9} {:>9} {:>8} {:>10} {:>8} {:>8} {:>10}  anvil/reqwest",
        "scenario", "client", "requests", "chunks", "cpu s", "us/chunk", "user", "sys", "chunks/s"
    );
    // (name, words per reply, µs between events, requests)
    for (name, words, delay_us, requests) in
        [("flood", 500u32, 0u64, 640u32), ("flood", 1500, 0, 256), ("paced", 256, 1000, 256)]
    {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let server = spawn_server(words, delay_us);
        for _ in 0..rounds {
            let mut anvil_us = 0.0;
            for client in ["anvil", "reqwest"] {
                if only.is_some() && client != "anvil" {
                    continue;
                }
                let before = cpu_seconds();
                let started = Instant::now();
                let (chunks, failed) = match client {
                    "anvil" => rt.block_on(anvil_cell(&server.url, requests)),
                    _ => rt.block_on(reqwest_cell(&server.url, requests)),
                };
                let after = cpu_seconds();
                let wall = started.elapsed().as_secs_f64();
                let (user, sys) = (after.0 - before.0, after.1 - before.1);
                let cpu = user + sys;
                assert_eq!(failed, 0, "{client}: {failed} requests failed");
                let per_chunk = |seconds: f64| seconds * 1e6 / chunks.max(1) as f64;
                let us = per_chunk(cpu);
                let ratio = if client == "anvil" {
                    anvil_us = us;
                    String::new()
                } else {
                    format!("{:.2}", anvil_us / us)
                };
                println!(
                    "{:>8} {:>8} {:>9} {:>9} {:>8.3} {:>10.3} {:>8.3} {:>8.3} {:>10.0}  {}",
                    name,
                    client,
                    requests,
                    chunks,
                    cpu,
                    us,
                    per_chunk(user),
                    per_chunk(sys),
                    chunks as f64 / wall,
                    ratio
                );
            }
        }
    }
}
