//! TTFT error of the load generator against an independent ground-truth
//! server with its own first-byte log.
//!
//! The server is this bench binary re-run as a child process
//! (`GROUND_TRUTH_SERVER=1`), pinned with `taskset` to the last core while
//! the client (this process, all its threads) is pinned to the first. It is
//! a raw-TCP, thread-per-connection HTTP/1.1 server that shares no code with
//! the load generator and, for every request, logs on its stdout:
//!
//! - `recv`: the kernel's receive time of the request's first bytes
//!   (`SO_TIMESTAMPNS` on the accepted socket, read with `recvmsg`;
//!   `CLOCK_REALTIME` ns). A request is written by the client in one
//!   `write` and is one loopback segment, so its first read's stamp is its
//!   first byte's;
//! - `write`: `clock_gettime(CLOCK_REALTIME)` right before the `write` of
//!   the first content chunk;
//! - its own request id (echoed in the `x-request-id` header) and the
//!   request's canary marker, which the bench matches to anvil's records.
//!
//! It streams an OpenAI-chat-style SSE reply: headers and the role chunk at
//! once, `GROUND_TRUTH_FIRST_MS` later the first content chunk (the
//! marker), then `GROUND_TRUTH_CHUNKS` content chunks `GROUND_TRUTH_GAP_MS`
//! apart, finish, usage and `data: [DONE]`, chunked, keep-alive.
//!
//! Per matched request, all on the wall clock (unix ns):
//! - server ttft = write − recv (what the server spent, its own queueing
//!   included);
//! - client ttft = anvil's `ttft_ms` (request start → kernel arrival of the
//!   first content; with connections opened ahead, request start is just
//!   before the write on an open connection);
//! - ttft error = client ttft − server ttft = send + arrival, where
//!   send = recv − client request start (client start → its write → the
//!   server's kernel receive) and arrival = client first-content arrival
//!   (`request_start_unix_ns + ttft_ms`) − server write (server write → the
//!   client's kernel receive stamp).
//!
//! Closed loop, warmup 0, connect ahead (the defaults), C = 1, 64, 256;
//! rounds side by side (`GROUND_TRUTH_ROUNDS`, default 3), medians of the
//! per-round statistics with their spread.
//!
//! `cargo bench -p anvil-loadgen --bench ground_truth`. `GROUND_TRUTH_PIN`:
//! `split` (default), `same` (both sides on the first core) or `none`; `GROUND_TRUTH_C=64,256` picks the rows;
//! `GROUND_TRUTH_WORST=N` prints each row's N worst requests;
//! `GROUND_TRUTH_HELPERS=batch` runs anvil's helper threads as SCHED_BATCH
//! (an experiment, see [`batch_helpers`]).

#[path = "common/stamped_recv.rs"]
mod stamped_recv;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anvil_loadgen::{CellContext, CellSpec, Progress, Target, marker, nearest_rank, run_cell};
use stamped_recv::recv_stamped;

const SERVER_ENV: &str = "GROUND_TRUTH_SERVER";

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

// ---------------------------------------------------------------------------
// The server (child process). Nothing here comes from anvil-loadgen.
// ---------------------------------------------------------------------------

struct ServerConfig {
    first_delay: Duration,
    chunks: u32,
    gap: Duration,
}

fn server_main() {
    let config = Arc::new(ServerConfig {
        first_delay: Duration::from_micros((env_or("GROUND_TRUTH_FIRST_MS", 1.0f64) * 1000.0) as u64),
        chunks: env_or("GROUND_TRUTH_CHUNKS", 16u32),
        gap: Duration::from_micros((env_or("GROUND_TRUTH_GAP_MS", 5.0f64) * 1000.0) as u64),
    });
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    println!("LISTEN {}", listener.local_addr().expect("addr").port());
    let ids = Arc::new(AtomicU64::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let (config, ids) = (config.clone(), ids.clone());
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let _ = serve(stream, &config, &ids);
            })
            .expect("connection thread");
    }
}

/// This process's context switches (voluntary, involuntary) and CPU
/// (user, sys µs), exited threads included.
fn rusage_line() -> String {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let us = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    format!("{} {} {} {}", u.ru_nvcsw, u.ru_nivcsw, us(u.ru_utime), us(u.ru_stime))
}

fn chunk(payload: &str) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", payload.len()).into_bytes();
    out.extend_from_slice(payload.as_bytes());
    out.extend_from_slice(b"\r\n");
    out
}

fn content_event(text: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-gt\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gt\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
    )
}

fn serve(mut stream: TcpStream, config: &ServerConfig, ids: &AtomicU64) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let fd = stream.as_raw_fd();
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads one c_int from a live local.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as _,
        )
    };
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut scratch = vec![0u8; 64 * 1024];
    loop {
        // Read one request: its first read's kernel stamp is its receipt.
        let mut received = None;
        let (head_end, length) = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
                    .unwrap_or(0usize);
                if buf.len() >= end + 4 + length {
                    break (end, length);
                }
            }
            let (n, stamp) = recv_stamped(fd, &mut scratch)?;
            if n == 0 {
                return Ok(());
            }
            if received.is_none() {
                received = Some(stamp.unwrap_or_else(realtime_ns));
            }
            buf.extend_from_slice(&scratch[..n]);
        };
        let received = received.unwrap_or_else(realtime_ns);
        if buf.starts_with(b"GET /rusage") {
            buf.drain(..head_end + 4 + length);
            let body = rusage_line();
            let reply = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len());
            stream.write_all(reply.as_bytes())?;
            continue;
        }
        let body = String::from_utf8_lossy(&buf[head_end + 4..head_end + 4 + length]).to_string();
        buf.drain(..head_end + 4 + length);
        let id = ids.fetch_add(1, Ordering::Relaxed);
        let marker: String = body
            .find("ANVIL_REQ_")
            .map(|at| body[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
            .unwrap_or_default();
        let max_tokens = body
            .find("\"max_tokens\":")
            .and_then(|at| {
                body[at + 13..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
            })
            .unwrap_or(1000u64);
        let prompt_tokens = 20 + body.split_whitespace().count() as u64;

        let mut head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nx-request-id: {id}\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        .into_bytes();
        head.extend(chunk(
            "data: {\"id\":\"chatcmpl-gt\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gt\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
        ));
        stream.write_all(&head)?;
        let words: Vec<String> = if max_tokens <= 1 {
            vec!["x".into()]
        } else {
            std::iter::once(marker.clone()).chain((1..config.chunks).map(|i| format!(" w{i}"))).collect()
        };
        if !config.first_delay.is_zero() {
            std::thread::sleep(config.first_delay);
        }
        for (i, word) in words.iter().enumerate() {
            let bytes = chunk(&content_event(word));
            if i == 0 {
                let written = realtime_ns();
                stream.write_all(&bytes)?;
                // Logged after the write, long before the client finishes.
                println!("R {id} {} {received} {written}", if marker.is_empty() { "-" } else { &marker });
            } else {
                std::thread::sleep(config.gap);
                stream.write_all(&bytes)?;
            }
        }
        let completion = words.len() as u64;
        let mut tail = chunk(
            "data: {\"id\":\"chatcmpl-gt\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gt\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n",
        );
        tail.extend(chunk(&format!(
            "data: {{\"id\":\"chatcmpl-gt\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":{completion},\"total_tokens\":{}}}}}\n\n",
            prompt_tokens + completion
        )));
        tail.extend(chunk("data: [DONE]\n\n"));
        tail.extend_from_slice(b"0\r\n\r\n");
        stream.write_all(&tail)?;
    }
}

// ---------------------------------------------------------------------------
// The bench (parent process): anvil's client against the server's log.
// ---------------------------------------------------------------------------

/// marker → (server id, kernel receive of the request, first-content write).
type Log = Arc<Mutex<HashMap<String, (u64, u64, u64)>>>;

struct Server {
    child: Child,
    url: String,
    log: Log,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Cores this bench may use, read once before it pins itself to one.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// `GROUND_TRUTH_PIN`: `split` (default: server on the last core, client
/// on the first), `same` (both on the first core), `none`.
fn pin_mode() -> String {
    let mode = std::env::var("GROUND_TRUTH_PIN").unwrap_or_else(|_| "split".into());
    let usable = cores() >= 2
        && Command::new("taskset").arg("-V").stdout(Stdio::null()).status().is_ok_and(|s| s.success());
    if mode == "none" || !usable { "none".into() } else { mode }
}

fn spawn_server() -> Server {
    let exe = std::env::current_exe().expect("own path");
    let mode = pin_mode();
    let mut cmd = if mode != "none" {
        let core = if mode == "same" { 0 } else { cores() - 1 };
        let mut c = Command::new("taskset");
        c.args(["-c", &core.to_string()]).arg(&exe);
        c
    } else {
        Command::new(&exe)
    };
    let mut child = cmd.env(SERVER_ENV, "1").stdout(Stdio::piped()).spawn().expect("server child");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("server's first line");
    let port = line.trim().strip_prefix("LISTEN ").expect("LISTEN line").to_string();
    let log: Log = Arc::default();
    let sink = log.clone();
    let reader_core = (mode != "none").then(|| if mode == "same" { 0 } else { cores() - 1 });
    std::thread::spawn(move || {
        // The log reader belongs to the truth side: on the server's core,
        // so its wake-ups never preempt the client.
        if let Some(core) = reader_core {
            pin_current_thread(core);
        }
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            let f: Vec<&str> = line.split(' ').collect();
            if let [_, id, marker, recv, write] = f[..] {
                let parse = |s: &str| s.parse::<u64>().unwrap_or(0);
                sink.lock().unwrap().insert(marker.to_string(), (parse(id), parse(recv), parse(write)));
            }
        }
    });
    Server { child, url: format!("http://127.0.0.1:{port}"), log }
}

/// Pins the calling thread (and the threads it starts later) to `core`.
fn pin_current_thread(core: usize) {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET and sched_setaffinity
    // read and write only that set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// `GROUND_TRUTH_HELPERS=batch` (an experiment, not anvil's behaviour):
/// anvil's record-log thread and the caller's thread (this bench's main
/// thread, which receives progress) run as SCHED_BATCH, whose wake-ups do
/// not preempt the running client thread.
fn batch_helpers() -> bool {
    std::env::var("GROUND_TRUTH_HELPERS").is_ok_and(|v| v == "batch")
}

fn set_batch(tid: i32) {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler reads one sched_param from a live local.
    unsafe { libc::sched_setscheduler(tid, libc::SCHED_BATCH, &param) };
}

/// Sets SCHED_BATCH on this process's threads named `anvil-loadgen-r*`.
fn batch_record_threads() {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return };
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.starts_with("anvil-loadgen-r")
            && let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok())
        {
            set_batch(tid);
        }
    }
}

fn spec(seed: u64, concurrency: u32, requests: u32) -> CellSpec {
    CellSpec {
        name: "ground-truth".into(),
        model: "gt".into(),
        context_tokens: 64,
        concurrency,
        requests,
        warmup_requests: 0,
        max_tokens: 4096,
        seed,
        request_timeout_ms: 120_000,
        ..CellSpec::default()
    }
}

/// Per matched request: (error, send, arrival) in ms, plus details for the worst.
struct Sample {
    error: f64,
    send: f64,
    arrival: f64,
    client_ttft: f64,
    server_ttft: f64,
    index: u64,
    server_id: u64,
    connection: u64,
    read_delay_ms: f64,
    start_ns: u64,
    /// The first chunk gaps the client recorded, µs (0: read together).
    first_gaps: Vec<u32>,
}

struct Stats {
    samples: usize,
    /// Requests whose first content shared its read with the next content
    /// event (first chunk gap 0): stamped with the later event's arrival.
    coalesced: usize,
    /// The client's first-content read delay (kernel arrival → read), p99 and max.
    read_delay: [f64; 2],
    /// The client thread's run-queue wait during the cell, ms.
    run_queue_ms: f64,
    error: [f64; 3],
    send: [f64; 3],
    arrival: [f64; 3],
}

fn summary(mut values: Vec<f64>) -> [f64; 3] {
    values.sort_by(f64::total_cmp);
    [nearest_rank(&values, 50), nearest_rank(&values, 99), values[values.len() - 1]]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Time anvil's client thread (`anvil-loadgen-<cell name>`) has spent
/// runnable but waiting for its core, ns (`/proc/self/task/*/schedstat`).
fn client_run_delay_ns() -> Option<u64> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() == "anvil-loadgen-g" {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            return stat.split(' ').nth(1)?.parse().ok();
        }
    }
    None
}

/// (voluntary, involuntary context switches, user + sys CPU ms) of a
/// process so far: the server's from its `GET /rusage`, this one's from
/// getrusage.
fn usage(server: Option<&Server>) -> [f64; 3] {
    let line = match server {
        Some(server) => {
            let fetched = (|| -> std::io::Result<String> {
                let mut s = TcpStream::connect(server.url.trim_start_matches("http://"))?;
                s.write_all(b"GET /rusage HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")?;
                s.shutdown(std::net::Shutdown::Write)?;
                let mut reply = String::new();
                std::io::Read::read_to_string(&mut s, &mut reply)?;
                Ok(reply.rsplit("\r\n\r\n").next().unwrap_or_default().to_string())
            })();
            fetched.unwrap_or_default()
        }
        None => rusage_line(),
    };
    let f: Vec<f64> = line.split(' ').filter_map(|v| v.parse().ok()).collect();
    if f.len() < 4 {
        return [0.0; 3];
    }
    [f[0], f[1], (f[2] + f[3]) / 1000.0]
}

fn row(rt: &tokio::runtime::Runtime, server: &Server, c: u32, requests: u32, round: u32) -> Option<Stats> {
    let seed = 1000 * u64::from(round + 1) + u64::from(c);
    server.log.lock().unwrap().clear();
    let spec = spec(seed, c, requests);
    let target = [Target {
        base_url: server.url.clone(),
        api_key: None,
        label: "truth".into(),
        tls: Default::default(),
    }];
    let batched = std::sync::atomic::AtomicBool::new(false);
    // The client thread's run-queue wait (schedstat), first and latest reading.
    let waited: Mutex<Option<(u64, u64)>> = Mutex::new(None);
    let progress = |p: &Progress| {
        if batch_helpers() && !batched.swap(true, Ordering::Relaxed) {
            batch_record_threads();
        }
        if (p.done % 16 == 1 || p.done + 1 >= p.total)
            && let Some(now) = client_run_delay_ns()
        {
            let mut w = waited.lock().unwrap();
            *w = Some((w.map_or(now, |(first, _)| first), now));
        }
    };
    let report = rt.block_on(run_cell(&spec, &target, &CellContext::default(), &progress)).expect("cell");
    let run_queue_ms = waited.lock().unwrap().map_or(0.0, |(first, last)| (last - first) as f64 / 1e6);
    assert_eq!(report.artifact["failed"], 0, "first failure: {}", report.artifact["failures"][0]);
    // Every record is logged right after its first content write, long
    // before its reply ends; wait a moment for the pipe anyway.
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.log.lock().unwrap().len() < report.records.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let log = server.log.lock().unwrap().clone();
    let samples: Vec<Sample> = report
        .records
        .iter()
        .filter_map(|r| {
            let client_ttft = r.ttft_ms?;
            let &(server_id, recv, write) = log.get(&marker(seed, r.request_index))?;
            let server_ttft = (write as f64 - recv as f64) / 1e6;
            let send = (recv as f64 - r.request_start_unix_ns as f64) / 1e6;
            let arrival = (r.request_start_unix_ns as f64 + client_ttft * 1e6 - write as f64) / 1e6;
            Some(Sample {
                error: client_ttft - server_ttft,
                send,
                arrival,
                client_ttft,
                server_ttft,
                index: r.request_index,
                server_id,
                connection: r.connection_id,
                read_delay_ms: f64::from(r.first_content_read_delay_us.unwrap_or(0)) / 1e3,
                start_ns: r.request_start_unix_ns,
                first_gaps: r.chunk_gaps_us.iter().take(4).copied().collect(),
            })
        })
        .collect();
    if samples.is_empty() {
        println!("{c:>5} round {round}: no matched samples");
        return None;
    }
    let worst: usize = env_or("GROUND_TRUTH_WORST", 0);
    if worst > 0 {
        let first_start = samples.iter().map(|s| s.start_ns).min().unwrap_or(0);
        let mut mono = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime only writes into the timespec we pass.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut mono) };
        let offset = realtime_ns() as i64 - (mono.tv_sec * 1_000_000_000 + mono.tv_nsec);
        println!("      first request start: unix {first_start} ns (realtime - monotonic {offset} ns)");
        let mut by_error: Vec<&Sample> = samples.iter().collect();
        by_error.sort_by(|a, b| b.error.total_cmp(&a.error));
        for s in by_error.iter().take(worst) {
            println!(
                "      worst: req {:>5} srv {:>6} conn {:>4} start +{:>9.3} ms  err {:>7.3} send {:>7.3} arr {:>7.3}  client {:>7.3} server {:>7.3}  read delay {:>7.3}  first gaps us {:?}",
                s.index,
                s.server_id,
                s.connection,
                (s.start_ns - first_start) as f64 / 1e6,
                s.error,
                s.send,
                s.arrival,
                s.client_ttft,
                s.server_ttft,
                s.read_delay_ms,
                s.first_gaps
            );
        }
    }
    let read_delay = summary(samples.iter().map(|s| s.read_delay_ms).collect());
    Some(Stats {
        samples: samples.len(),
        coalesced: samples.iter().filter(|s| s.first_gaps.first() == Some(&0)).count(),
        read_delay: [read_delay[1], read_delay[2]],
        run_queue_ms,
        error: summary(samples.iter().map(|s| s.error).collect()),
        send: summary(samples.iter().map(|s| s.send).collect()),
        arrival: summary(samples.iter().map(|s| s.arrival).collect()),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// (C, measured requests, target p99 of the TTFT error in ms).
const ROWS: [(u32, u32, f64); 3] = [(1, 200, 0.15), (64, 640, 0.5), (256, 1024, 1.0)];

fn header() {
    println!(
        "{:>5} {:>5} {:>7} | {:>7} {:>7} {:>7} | {:>7} {:>7} {:>7} | {:>7} {:>7} {:>7} | {:>6}  load / server, client: csw vol,invol,cpu ms",
        "C",
        "round",
        "samples",
        "err p50",
        "p99",
        "max",
        "send50",
        "p99",
        "max",
        "arr50",
        "p99",
        "max",
        "target"
    );
}

fn print_stats(c: u32, label: &str, samples: usize, s: &Stats, target: f64, tail: &str) {
    println!(
        "{:>5} {:>5} {:>7} | {:>7.3} {:>7.3} {:>7.3} | {:>7.3} {:>7.3} {:>7.3} | {:>7.3} {:>7.3} {:>7.3} | {:>6} | {:>5} {:>7.3} {:>7.3} {:>7.1}  {tail}",
        c,
        label,
        samples,
        s.error[0],
        s.error[1],
        s.error[2],
        s.send[0],
        s.send[1],
        s.send[2],
        s.arrival[0],
        s.arrival[1],
        s.arrival[2],
        target,
        s.coalesced,
        s.read_delay[0],
        s.read_delay[1],
        s.run_queue_ms
    );
}

fn bench_main() {
    let mode = pin_mode(); // also reads the core count before pinning
    if mode != "none" {
        pin_current_thread(0);
    }
    if batch_helpers() {
        set_batch(0);
    }
    let server = spawn_server();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    println!("TTFT error against an independent ground-truth server's own log (unix ns), ms");
    println!(
        "  server: child process, thread per connection, {}; first content {} ms after the request, {} chunks {} ms apart",
        match mode.as_str() {
            "none" => "unpinned".to_string(),
            "same" => "pinned to cpu 0 with the client".to_string(),
            _ => format!("pinned to cpu {}, client to cpu 0", cores() - 1),
        },
        env_or("GROUND_TRUTH_FIRST_MS", 1.0f64),
        env_or("GROUND_TRUTH_CHUNKS", 16u32),
        env_or("GROUND_TRUTH_GAP_MS", 5.0f64)
    );
    println!("  err = client ttft - server ttft (first-content write - kernel receive of the request)");
    println!(
        "  send = server kernel receive - client request start; arr = client kernel arrival - server write"
    );
    println!(
        "  coal = requests whose first content shared a read with the next content event (first chunk gap 0:"
    );
    println!(
        "    stamped with the later event's arrival); rd = client's first-content read delay (arrival -> read)"
    );
    println!("  closed loop, warmup 0, connect ahead; load average at start: {}", load_average());
    let only: Option<Vec<u32>> = std::env::var("GROUND_TRUTH_C")
        .ok()
        .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect());
    let rows: Vec<(u32, u32, f64)> =
        ROWS.into_iter().filter(|(c, ..)| only.as_ref().is_none_or(|o| o.contains(c))).collect();
    let rounds: u32 = env_or("GROUND_TRUTH_ROUNDS", 3);
    header();
    let mut all: HashMap<u32, Vec<Stats>> = HashMap::new();
    for round in 0..rounds {
        for &(c, requests, target) in &rows {
            let (server0, client0) = (usage(Some(&server)), usage(None));
            let Some(stats) = row(&rt, &server, c, requests, round) else { continue };
            let (server1, client1) = (usage(Some(&server)), usage(None));
            let d = |a: [f64; 3], b: [f64; 3]| format!("{},{},{:.0}", b[0] - a[0], b[1] - a[1], b[2] - a[2]);
            let tail = format!("{} / {} / {}", load_average(), d(server0, server1), d(client0, client1));
            print_stats(c, &round.to_string(), stats.samples, &stats, target, &tail);
            all.entry(c).or_default().push(stats);
        }
    }
    println!();
    println!("medians over {rounds} rounds (p99 spread min-max across rounds)");
    header();
    for &(c, _, target) in &rows {
        let Some(runs) = all.get(&c) else { continue };
        let med = |pick: &dyn Fn(&Stats) -> f64| median(runs.iter().map(pick).collect());
        let stats = Stats {
            samples: runs[0].samples,
            coalesced: median(runs.iter().map(|s| s.coalesced as f64).collect()) as usize,
            read_delay: [med(&|s| s.read_delay[0]), med(&|s| s.read_delay[1])],
            run_queue_ms: med(&|s| s.run_queue_ms),
            error: [med(&|s| s.error[0]), med(&|s| s.error[1]), med(&|s| s.error[2])],
            send: [med(&|s| s.send[0]), med(&|s| s.send[1]), med(&|s| s.send[2])],
            arrival: [med(&|s| s.arrival[0]), med(&|s| s.arrival[1]), med(&|s| s.arrival[2])],
        };
        let spread = |pick: &dyn Fn(&Stats) -> f64| {
            let v: Vec<f64> = runs.iter().map(pick).collect();
            (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(0.0, f64::max))
        };
        let (lo, hi) = spread(&|s| s.error[1]);
        let (slo, shi) = spread(&|s| s.send[1]);
        let (alo, ahi) = spread(&|s| s.arrival[1]);
        let met = if stats.error[1] <= target { "met" } else { "MISSED" };
        let tail = format!("{met}; p99 err {lo:.3}-{hi:.3}, send {slo:.3}-{shi:.3}, arr {alo:.3}-{ahi:.3}");
        print_stats(c, "med", stats.samples, &stats, target, &tail);
    }
}

fn main() {
    if std::env::var_os(SERVER_ENV).is_some() {
        server_main();
        return;
    }
    bench_main();
}
