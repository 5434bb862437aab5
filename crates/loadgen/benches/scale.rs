//! The open loop at scale: how many requests a second one load-generator
//! process keeps on one core, against a fast independent server on another.
//!
//! The server is this bench binary re-run as a child (`SCALE_SERVER=1`),
//! pinned with `taskset` to the last core: raw TCP, a thread per
//! connection, sharing no code with the load generator (like
//! `benches/ground_truth.rs`, made fast: no sleep before the first content
//! by default). Per request it logs the kernel's receive time of the
//! request (`SO_TIMESTAMPNS`), `CLOCK_REALTIME` right before the write of
//! the first content chunk, and the request's `X-Request-Id`. It streams
//! chat-completions SSE: head and role chunk at once, then 2–4 content
//! chunks (by request id) `SCALE_GAP_US` apart (default 100 µs), finish,
//! usage, `[DONE]`, keep-alive.
//!
//! Each cell runs in a child process pinned to the first core (its
//! runtime, sender and record threads all share it), so its CPU time
//! (getrusage, whole cell: warmup and connection set-up included) and its
//! peak RSS (VmHWM, after it wrote its artifact) are its own. One table:
//! requested vs achieved rate (measured requests over the span of their
//! actual sends), send lag p50/p99, TTFT error p99 (anvil's TTFT minus the
//! server's own write − receive, as ground_truth.rs computes it), CPU per
//! request and per content chunk, peak RSS, failures.
//!
//! Closed-loop rows (`closed:C`) hold C streams open at once instead: C
//! connections made before the clock, `SCALE_CLOSED_PER_STREAM` requests per
//! stream (default 10, at least 5,000 in all); their "req/s" column is C and
//! "achieved" the rate the C streams reached. Their server answers like a
//! busy engine, not at once: first content `SCALE_CLOSED_FIRST_US` (default
//! 200,000) after the request, chunks `SCALE_CLOSED_GAP_US` (20,000) apart;
//! with 0 and 0 a closed row measures only how fast the client can go.
//!
//! A row's third field is `--loadgen-workers` (`constant:20000:2`): the
//! client is then pinned to cpus 0..N-1, so with N = 2 on a 2-core machine
//! it shares the server's core (the table says so).
//!
//! `bare-constant:R` and `bare-closed:C` run the same schedule with a bare
//! Rust client (benches/common/bare_client.rs: tokio timers, reqwest,
//! serde_json per event, a task per request) in the same pinned child,
//! measured the same way: the reference column.
//!
//! `cargo bench -p anvil-loadgen --bench scale`. `SCALE_ROWS=constant:1000,
//! poisson:10000,closed:1024,constant:20000:2` picks the rows (default: see
//! `default_rows`); `SCALE_SECONDS` the seconds of arrivals per open-loop
//! cell (default 3); `SCALE_FIRST_US`, `SCALE_GAP_US` the open-loop rows'
//! server delays (default 0 and 100).

#[path = "common/bare_client.rs"]
mod bare_client;
#[path = "common/stamped_recv.rs"]
mod stamped_recv;
#[path = "common/vmhwm.rs"]
mod vmhwm;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anvil_loadgen::{Arrival, CellContext, CellSpec, Progress, Target, nearest_rank};
use serde_json::{Value, json};
use stamped_recv::recv_stamped;
use vmhwm::vmhwm_kib;

const SERVER_ENV: &str = "SCALE_SERVER";
const JOB_ENV: &str = "SCALE_JOB";

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// The server (child process). Nothing here comes from anvil-loadgen.
// ---------------------------------------------------------------------------

fn server_main() {
    let first = Duration::from_micros(env_or("SCALE_SERVER_FIRST_US", 0u64));
    let gap = Duration::from_micros(env_or("SCALE_SERVER_GAP_US", 100u64));
    raise_descriptor_limit();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    println!("LISTEN {}", listener.local_addr().expect("addr").port());
    let log = Arc::new(Mutex::new(std::io::BufWriter::new(std::io::stdout())));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let log = log.clone();
        // Out of threads: the connection is dropped, and its request fails on the client.
        let _ = std::thread::Builder::new().stack_size(128 * 1024).spawn(move || {
            let _ = serve(stream, first, gap, &log);
        });
    }
}

/// A descriptor per connection: 4,096 streams need more than the usual soft
/// limit of 1,024, so the server takes its hard limit.
fn raise_descriptor_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

type LogOut = Mutex<std::io::BufWriter<std::io::Stdout>>;

fn chunk(out: &mut Vec<u8>, payload: &str) {
    out.extend_from_slice(format!("{:x}\r\n", payload.len()).as_bytes());
    out.extend_from_slice(payload.as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn content(text: &str) -> String {
    format!(
        "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"s\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
    )
}

fn header_value<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn serve(mut stream: TcpStream, first: Duration, gap: Duration, log: &LogOut) -> std::io::Result<()> {
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
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut scratch = vec![0u8; 16 * 1024];
    loop {
        let mut received = None;
        let (head_end, length) = loop {
            if let Some(end) = memchr::memmem::find(&buf, b"\r\n\r\n") {
                let head = std::str::from_utf8(&buf[..end]).unwrap_or("");
                let length = header_value(head, "content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
                if buf.len() >= end + 4 + length {
                    break (end, length);
                }
            }
            let (n, stamp) = recv_stamped(fd, &mut scratch)?;
            if n == 0 {
                return Ok(());
            }
            received.get_or_insert(stamp.unwrap_or_else(realtime_ns));
            buf.extend_from_slice(&scratch[..n]);
        };
        let received = received.unwrap_or_else(realtime_ns);
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        buf.drain(..head_end + 4 + length);
        let id = header_value(&head, "x-request-id").unwrap_or("-").to_string();
        // 2–4 content chunks, by the request's index.
        let index: u64 = id.rsplit('-').next().and_then(|i| i.parse().ok()).unwrap_or(0);
        let words = 2 + index % 3;
        let mut out = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nx-request-id: {id}\r\n\r\n"
        )
        .into_bytes();
        chunk(
            &mut out,
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"s\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        );
        stream.write_all(&out)?;
        if !first.is_zero() {
            std::thread::sleep(first);
        }
        for w in 0..words {
            out.clear();
            chunk(&mut out, &content(&format!(" w{w}")));
            if w == 0 {
                let written = realtime_ns();
                stream.write_all(&out)?;
                let _ = writeln!(log.lock().unwrap(), "R {id} {received} {written}");
            } else {
                std::thread::sleep(gap);
                stream.write_all(&out)?;
            }
        }
        out.clear();
        chunk(
            &mut out,
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        );
        chunk(
            &mut out,
            &format!(
                "data: {{\"id\":\"c\",\"choices\":[],\"usage\":{{\"prompt_tokens\":8,\"completion_tokens\":{words},\"total_tokens\":{}}}}}\n\n",
                8 + words
            ),
        );
        chunk(&mut out, "data: [DONE]\n\n");
        out.extend_from_slice(b"0\r\n\r\n");
        stream.write_all(&out)?;
        // Flushed between requests, not per line: the log is read after the cell.
        if let Ok(mut log) = log.try_lock() {
            let _ = log.flush();
        }
    }
}

// ---------------------------------------------------------------------------
// One cell (child process, pinned to the first core).
// ---------------------------------------------------------------------------

/// This process's user + system CPU time so far, µs (exited threads included).
fn cpu_us() -> u64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let us = |t: libc::timeval| (t.tv_sec * 1_000_000 + t.tv_usec) as u64;
    us(u.ru_utime) + us(u.ru_stime)
}

fn child(job: &str) {
    let mut parts = job.splitn(5, ',');
    let kind = parts.next().expect("kind").to_string();
    let rate: f64 = parts.next().and_then(|r| r.parse().ok()).expect("rate");
    let requests: u32 = parts.next().and_then(|r| r.parse().ok()).expect("requests");
    let workers: u32 = parts.next().and_then(|r| r.parse().ok()).expect("workers");
    let url = parts.next().expect("url").to_string();
    let dir = std::env::temp_dir().join(format!("anvil-scale-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    if let Some(pace) = kind.strip_prefix("bare-") {
        bare_child(pace, rate, requests, &url, &dir);
        return;
    }
    // A closed row's "rate" is its concurrency.
    let (arrival, concurrency) = match kind.as_str() {
        "constant" => (Arrival::Constant { rate_per_s: rate }, bare_client::IN_FLIGHT_CAP as u32),
        "closed" => (Arrival::ClosedLoop, rate as u32),
        _ => (Arrival::Poisson { rate_per_s: rate }, bare_client::IN_FLIGHT_CAP as u32),
    };
    let spec = CellSpec {
        name: format!("scale-{kind}-{rate}"),
        model: "s".into(),
        context_tokens: 0,
        // Open loop: bounds a cell that falls behind (its lag is recorded either way).
        concurrency,
        arrival,
        requests,
        warmup_requests: 64,
        max_tokens: 4,
        canaries: false,
        seed: 17,
        request_timeout_ms: 60_000,
        ..CellSpec::default()
    };
    let target: Target = serde_json::from_value(json!({"base_url": url, "label": "s"})).expect("a target");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let quiet = |_: &Progress| {};
    let ctx = CellContext { loadgen_workers: workers, ..CellContext::default() };
    let cpu0 = cpu_us();
    let cell =
        rt.block_on(anvil_loadgen::run_cell_streamed(&spec, &[target], &ctx, &quiet, &dir)).expect("cell");
    cell.write_artifact_file(&cell.artifact, &dir.join("benchmark.json")).expect("artifact");
    let cpu = cpu_us() - cpu0;
    let hwm = vmhwm_kib();
    let records = cell.records().expect("records");
    let achieved = achieved_rate(records.iter().map(|r| r.request_start_unix_ns));
    let tokens: u64 = records.iter().filter_map(|r| r.output_tokens).sum();
    let first_failure = records.iter().find_map(|r| r.failure.as_ref()).map(|f| f.detail.clone());
    let samples = write_samples(
        &dir,
        records.iter().filter_map(|r| Some((r.request_id.as_deref()?, r.request_start_unix_ns, r.ttft_ms?))),
    );
    let m = |key: &str| cell.artifact.metric(key).clone();
    let result = json!({
        "requests": cell.artifact.requests,
        "failed": cell.artifact.failed,
        "recorded": records.len(),
        "achieved": achieved,
        "lag_p50": m("send_lag_p50_ms"),
        "lag_p99": m("send_lag_p99_ms"),
        "lag_max": m("send_lag_max_ms"),
        "cpu_us": cpu,
        "tokens": tokens,
        "vmhwm_kib": hwm,
        "first_failure": first_failure,
        "samples": samples,
        "dir": dir,
    });
    println!("RESULT {result}");
}

/// A bare-client row in the child: the same schedule, the same result line.
fn bare_child(pace: &str, rate: f64, requests: u32, url: &str, dir: &std::path::Path) {
    // Its warmup opens the connections the measured requests will reuse, as
    // anvil opens its connections before the clock: a closed row's C at once.
    let (pace, warmup) = match pace {
        "closed" => (bare_client::Pace::Closed { concurrency: rate as u32 }, (rate as u32).max(64)),
        _ => (bare_client::Pace::Constant { rate_per_s: rate }, 64),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let cpu0 = cpu_us();
    let samples = rt.block_on(bare_client::run(url, pace, warmup, requests));
    let cpu = cpu_us() - cpu0;
    let hwm = vmhwm_kib();
    let mut lags: Vec<f64> = samples.iter().map(|s| s.lag_ms).collect();
    lags.sort_by(f64::total_cmp);
    let lag = |p: u32| if lags.is_empty() { f64::NAN } else { nearest_rank(&lags, p) };
    let file =
        write_samples(dir, samples.iter().filter_map(|s| Some((s.id.as_str(), s.start_unix_ns, s.ttft_ms?))));
    let result = json!({
        "requests": requests,
        "failed": samples.iter().filter(|s| s.failed).count(),
        "recorded": samples.len(),
        "achieved": achieved_rate(samples.iter().map(|s| s.start_unix_ns)),
        "lag_p50": lag(50),
        "lag_p99": lag(99),
        "lag_max": lags.last().copied().unwrap_or(f64::NAN),
        "cpu_us": cpu,
        "tokens": samples.iter().map(|s| s.content_chunks).sum::<u64>(),
        "vmhwm_kib": hwm,
        "samples": file,
        "dir": dir,
    });
    println!("RESULT {result}");
}

/// Requests a second over the span of their actual sends (unix ns).
fn achieved_rate(starts: impl Iterator<Item = u64>) -> f64 {
    let (mut n, mut first, mut last) = (0u64, u64::MAX, 0u64);
    for t in starts {
        (n, first, last) = (n + 1, first.min(t), last.max(t));
    }
    let span_s = last.saturating_sub(first) as f64 / 1e9;
    if span_s > 0.0 { (n as f64 - 1.0) / span_s } else { 0.0 }
}

/// `id start_ns ttft_ms` lines, for the parent to match against the
/// server's log; the file's path.
fn write_samples<'a>(
    dir: &std::path::Path,
    samples: impl Iterator<Item = (&'a str, u64, f64)>,
) -> std::path::PathBuf {
    let path = dir.join("samples");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("samples"));
    for (id, start_ns, ttft) in samples {
        writeln!(out, "{id} {start_ns} {ttft}").expect("sample");
    }
    out.flush().expect("samples written");
    path
}

// ---------------------------------------------------------------------------
// The bench (parent).
// ---------------------------------------------------------------------------

/// request id → (kernel receive of the request, first-content write), unix ns.
type Log = Arc<Mutex<HashMap<String, (u64, u64)>>>;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn pin_current_thread(core: usize) {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET and sched_setaffinity
    // read and write only that set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The server's delays for a row: closed rows answer like a busy engine.
fn server_delays(kind: &str) -> (u64, u64) {
    match kind.ends_with("closed") {
        true => (env_or("SCALE_CLOSED_FIRST_US", 200_000), env_or("SCALE_CLOSED_GAP_US", 20_000)),
        false => (env_or("SCALE_FIRST_US", 0), env_or("SCALE_GAP_US", 100)),
    }
}

/// The server child, killed when the row ends (or its child panics).
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_server(core: usize, (first_us, gap_us): (u64, u64)) -> (Server, String, Log) {
    let exe = std::env::current_exe().expect("own path");
    let mut child = Command::new("taskset")
        .args(["-c", &core.to_string()])
        .arg(&exe)
        .env(SERVER_ENV, "1")
        .env("SCALE_SERVER_FIRST_US", first_us.to_string())
        .env("SCALE_SERVER_GAP_US", gap_us.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("server child");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("server's first line");
    let port = line.trim().strip_prefix("LISTEN ").expect("LISTEN line").to_string();
    let log: Log = Arc::default();
    let sink = log.clone();
    std::thread::spawn(move || {
        // The log reader is the truth side's: on the server's core.
        pin_current_thread(core);
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            let f: Vec<&str> = line.split(' ').collect();
            if let [_, id, recv, write] = f[..] {
                let parse = |s: &str| s.parse::<u64>().unwrap_or(0);
                sink.lock().unwrap().insert(id.to_string(), (parse(recv), parse(write)));
            }
        }
    });
    (Server(child), format!("http://127.0.0.1:{port}"), log)
}

struct Row {
    v: Value,
    err_p99: f64,
    matched: usize,
}

fn run_row(kind: &str, rate: f64, workers: u32, url: &str, log: &Log) -> Row {
    let seconds: f64 = env_or("SCALE_SECONDS", 3.0);
    let requests = if kind.ends_with("closed") {
        (rate as u64 * env_or("SCALE_CLOSED_PER_STREAM", 10u64)).max(5_000)
    } else {
        ((rate * seconds) as u64).clamp(500, 2_000_000)
    };
    let exe = std::env::current_exe().expect("own path");
    // N workers: cpus 0..N-1 (the first is the client's alone only when N = 1 or cores > N).
    let cpus = if workers > 1 { format!("0-{}", workers - 1) } else { "0".to_string() };
    let out = Command::new("taskset")
        .args(["-c", &cpus])
        .arg(exe)
        .env(JOB_ENV, format!("{kind},{rate},{requests},{workers},{url}"))
        .output()
        .expect("bench child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| l.strip_prefix("RESULT ")).unwrap_or_else(|| {
        panic!("child {kind} {rate}/s failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr))
    });
    let v: Value = serde_json::from_str(line).expect("child result");
    // The server flushes its log between requests; give the pipe a moment.
    std::thread::sleep(Duration::from_millis(300));
    let samples = std::fs::read_to_string(v["samples"].as_str().unwrap_or_default()).unwrap_or_default();
    let log = std::mem::take(&mut *log.lock().unwrap());
    let mut errors: Vec<f64> = samples
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let (id, _start, ttft) = (f.next()?, f.next()?, f.next()?.parse::<f64>().ok()?);
            let &(recv, write) = log.get(id)?;
            Some(ttft - (write as f64 - recv as f64) / 1e6)
        })
        .collect();
    errors.sort_by(f64::total_cmp);
    let _ = std::fs::remove_dir_all(v["dir"].as_str().unwrap_or_default());
    let err_p99 = if errors.is_empty() { f64::NAN } else { nearest_rank(&errors, 99) };
    Row { matched: errors.len(), err_p99, v }
}

fn main() {
    if std::env::var_os(SERVER_ENV).is_some() {
        server_main();
        return;
    }
    if let Ok(job) = std::env::var(JOB_ENV) {
        child(&job);
        return;
    }
    let total_cores = cores();
    let (client_core, server_core) = (0, total_cores.saturating_sub(1));
    pin_current_thread(client_core);
    let rows: Vec<(String, f64, u32)> = std::env::var("SCALE_ROWS")
        .ok()
        .map(|v| {
            v.split(',')
                .filter_map(|r| {
                    let mut f = r.trim().split(':');
                    let (kind, rate) = (f.next()?, f.next()?.parse().ok()?);
                    Some((kind.to_string(), rate, f.next().map_or(Some(1), |w| w.parse().ok())?))
                })
                .collect()
        })
        .unwrap_or_else(default_rows);
    println!(
        "anvil-loadgen scale bench: client on cpu {client_core}, server on cpu {server_core} (thread per connection; open-loop rows: first content +{} us, 2-4 chunks {} us apart); {} s of arrivals per cell; load at start: {}",
        server_delays("constant").0,
        server_delays("constant").1,
        env_or("SCALE_SECONDS", 3.0f64),
        load_average()
    );
    println!(
        "{:>13} {:>7} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8} {:>8} {:>7} {:>7}  load",
        "arrival",
        "workers",
        "req/s",
        "achieved",
        "requests",
        "recorded",
        "lag p50",
        "lag p99",
        "lag max",
        "ttfterr99",
        "cpu/req",
        "cpu/chk",
        "RSS MiB",
        "failed",
        "matched"
    );
    for (kind, rate, workers) in rows {
        // A fresh server per row: a row that fell behind leaves no threads behind.
        let (server, url, log) = spawn_server(server_core, server_delays(&kind));
        let r = run_row(&kind, rate, workers, &url, &log);
        drop(server);
        let f = |k: &str| r.v[k].as_f64().unwrap_or(f64::NAN);
        let requests = f("requests");
        println!(
            "{:>13} {:>7} {:>8.0} {:>9.0} {:>8} {:>8} {:>8.3} {:>8.3} {:>8.3} {:>9.3} {:>8.1} {:>8.1} {:>8.1} {:>7} {:>7}  {}",
            kind,
            workers,
            rate,
            f("achieved"),
            requests,
            f("recorded"),
            f("lag_p50"),
            f("lag_p99"),
            f("lag_max"),
            r.err_p99,
            f("cpu_us") / requests,
            f("cpu_us") / f("tokens"),
            f("vmhwm_kib") / 1024.0,
            f("failed"),
            r.matched,
            load_average()
        );
        if let Some(detail) = r.v["first_failure"].as_str() {
            println!("          first failure: {detail}");
        }
        let _ = std::io::stdout().flush();
    }
    println!(
        "(ms; cpu/req and cpu/chk in us of the client process's user+sys time over measured requests and their content chunks; closed rows' server: first content +{} us, chunks {} us apart; with workers > 1 the client runs on cpus 0..N-1, and on {} cores that includes the server's)",
        server_delays("closed").0,
        server_delays("closed").1,
        total_cores
    );
}

/// The default table: one core's open loop at 1k–20k (constant 10k and
/// Poisson 10k three times), the bare client beside it, many streams, and
/// two workers.
fn default_rows() -> Vec<(String, f64, u32)> {
    let row = |kind: &str, rate: f64, workers: u32| (kind.to_string(), rate, workers);
    vec![
        row("constant", 1000.0, 1),
        row("constant", 5000.0, 1),
        row("constant", 10000.0, 1),
        row("bare-constant", 10000.0, 1),
        row("constant", 10000.0, 1),
        row("constant", 10000.0, 1),
        row("poisson", 10000.0, 1),
        row("poisson", 10000.0, 1),
        row("poisson", 10000.0, 1),
        row("constant", 20000.0, 1),
        row("constant", 20000.0, 2),
        row("closed", 64.0, 1),
        row("closed", 1024.0, 1),
        row("bare-closed", 1024.0, 1),
        row("closed", 4096.0, 1),
        row("closed", 4096.0, 2),
    ]
}
