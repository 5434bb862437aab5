//! Client cost and accuracy, printed as tables:
//! (a) whole-process CPU (user+sys) per streamed chunk at C=64,
//! (b) TTFT error vs the server's own first-content write time at C=1/64/256.
//!
//! The server is this binary re-run as a child process (the raw SSE server
//! from the tests), so getrusage(RUSAGE_SELF) measures the client alone.
//! Both processes stamp with CLOCK_MONOTONIC-based `Instant`s but only
//! compare durations: client ttft (before send → first content bytes) minus
//! server ttft (request read → first content written) = request transfer +
//! response transfer + client wake-up, which is the client's error.
//!
//! Run: cargo bench -p anvil-loadgen --bench client_cpu

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use anvil_loadgen::{CellContext, CellSpec, Progress, Target, nearest_rank, run_cell};

const SERVER_ENV: &str = "ANVIL_LOADGEN_BENCH_SERVER";

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn run_server(content_words: u32, delay_us: u64, chunk_delay_us: u64) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let config = support::ServerConfig {
            reasoning_chunks: 0,
            content_words,
            chunk_delay: Duration::from_micros(chunk_delay_us),
            split_writes: false,
            first_event_delay: Duration::from_micros(delay_us),
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

/// `delay_us` before the first event, then `chunk_delay_us` between events (0 = flood).
fn spawn_server(content_words: u32, delay_us: u64, chunk_delay_us: u64) -> Server {
    let exe = std::env::current_exe().expect("own path");
    let mut child = Command::new(exe)
        .env(SERVER_ENV, format!("{content_words},{delay_us},{chunk_delay_us}"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn server child");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("server address");
    Server { child, url: format!("http://{}", line.trim()) }
}

fn spec(concurrency: u32, requests: u32) -> CellSpec {
    CellSpec {
        name: "bench".into(),
        model: "bench".into(),
        context_tokens: 64,
        concurrency,
        requests,
        warmup_requests: concurrency.min(64),
        max_tokens: 4096,
        seed: 1,
        request_timeout_ms: 120_000,
        ..CellSpec::default()
    }
}

async fn fetch_truth(url: &str) -> std::collections::HashMap<String, f64> {
    let body = reqwest::get(format!("{url}/truth")).await.expect("truth").text().await.expect("truth body");
    serde_json::from_str(&body).expect("truth JSON")
}

fn main() {
    if let Ok(args) = std::env::var(SERVER_ENV) {
        let numbers: Vec<u64> = args.split(',').map(|v| v.parse().expect("number")).collect();
        run_server(numbers[0] as u32, numbers[1], numbers[2]);
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let ctx = CellContext::default();
    let quiet = |_: &Progress| {};

    println!("(a) client CPU per streamed chunk (whole process user+sys / events received)");
    println!("{:>5} {:>9} {:>11} {:>10} {:>12} {:>10}", "C", "requests", "events", "cpu s", "us/event", "events/s");
    for (c, requests, words) in [(64u32, 640u32, 500u32), (64, 256, 1500)] {
        let server = spawn_server(words, 0, 0);
        let target = [Target { base_url: server.url.clone(), api_key: None, label: "raw".into() }];
        let before = cpu_seconds();
        let report = rt.block_on(run_cell(&spec(c, requests), &target, &ctx, &quiet)).expect("cell");
        let cpu = cpu_seconds() - before;
        // role, finish, usage and [DONE] events are parsed too.
        let events: u64 = report.records.iter().map(|r| u64::from(r.content_chunks + r.reasoning_chunks) + 4).sum::<u64>()
            + u64::from(c.min(64)) * (u64::from(words) + 5);
        let wall = report.artifact["wall_clock_ms"].as_f64().unwrap_or(0.0) / 1000.0;
        println!(
            "{:>5} {:>9} {:>11} {:>10.3} {:>12.3} {:>10.0}",
            c,
            requests,
            events,
            cpu,
            cpu * 1e6 / events as f64,
            events as f64 / wall.max(1e-9)
        );
        assert_eq!(report.summary.failed, 0, "first failure: {}", report.artifact["failures"][0]);
    }

    println!();
    println!("(b) TTFT error = client ttft - server ttft (request read -> first content written), ms");
    println!("    server paced like an engine: 2 ms to first event, then one event per ~5 ms");
    println!("{:>5} {:>9} {:>10} {:>10} {:>10}", "C", "samples", "p50", "p99", "max");
    for (c, requests) in [(1u32, 200u32), (64, 640), (256, 1024)] {
        let server = spawn_server(32, 2000, 5000);
        let target = [Target { base_url: server.url.clone(), api_key: None, label: "raw".into() }];
        let report = rt.block_on(run_cell(&spec(c, requests), &target, &ctx, &quiet)).expect("cell");
        let truth = rt.block_on(fetch_truth(&server.url));
        let mut errors: Vec<f64> = report
            .records
            .iter()
            .filter_map(|r| Some(r.ttft_ms? - truth.get(&r.request_index.to_string())?))
            .collect();
        errors.sort_by(f64::total_cmp);
        if errors.is_empty() {
            println!("{c:>5} no samples");
            continue;
        }
        println!(
            "{:>5} {:>9} {:>10.3} {:>10.3} {:>10.3}",
            c,
            errors.len(),
            nearest_rank(&errors, 50),
            nearest_rank(&errors, 99),
            errors[errors.len() - 1]
        );
    }
}
