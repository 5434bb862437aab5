//! Timing fidelity and cost of the load generator against the simulated
//! engine running as a separate process (`anvil-sim`), printed as tables:
//!
//! (1) TTFT error at C=1/64/256: for every request, the client's
//!     first-content arrival minus the sim's first-content write, both on
//!     this machine's wall clock (unix ns). Requests are matched to the
//!     sim's ground truth by canary marker.
//! (2) Client CPU per streamed chunk at C=64 with 1 ms engine steps: user+sys
//!     of this process (getrusage) over the cell / chunks received. The sim
//!     runs in its own process, so its CPU is not counted.
//! (3) Open-loop Poisson sweep: send lag (actual − intended send) per rate;
//!     the client "keeps its schedule" while send_lag p99 < 1 ms. Each rate
//!     runs with each pacer (tokio timer, pacer thread, sender thread),
//!     alternately (`ANVIL_LOADGEN_PACER`), so all see the same load.
//!
//! Build the sim first: `cargo build --release -p anvil-sim`, then
//! `cargo bench -p anvil-loadgen --bench fidelity`. `ANVIL_SIM_BIN` overrides
//! the sim's path; `FIDELITY_ONLY=ttft|cpu|sweep` runs one table;
//! `FIDELITY_RATES=500,1000` sets the sweep's rates.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use anvil_loadgen::{
    Arrival, CellContext, CellReport, CellSpec, Progress, Target, marker, nearest_rank, run_cell,
};
use serde::Deserialize;

/// The sim as a child process; killed on drop.
struct Sim {
    child: Child,
    url: String,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sim_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("ANVIL_SIM_BIN") {
        return PathBuf::from(path);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("release/anvil-sim")
}

/// Starts the sim with `settings` (`key=value` profile keys).
fn spawn_sim(settings: &[String]) -> Sim {
    let bin = sim_binary();
    let mut cmd = Command::new(&bin);
    cmd.args(["--port", "0"]);
    for s in settings {
        cmd.args(["--set", s]);
    }
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap_or_else(|e| {
        panic!("cannot start {} ({e}); run `cargo build --release -p anvil-sim` first", bin.display())
    });
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("sim's first line");
    let url = line.trim().rsplit(' ').next().expect("address").to_string();
    // Keep draining so the sim can never block on a full pipe.
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stdout.read_to_end(&mut sink);
    });
    Sim { child, url }
}

fn sim_settings(decode_step_ms: f64, output_tokens: u32) -> Vec<String> {
    vec![
        format!("decode-step-ms={decode_step_ms}"),
        // A fixed step: the sim's pace does not depend on the batch size.
        "decode-step-ms-per-seq=0".into(),
        format!("output-tokens={output_tokens}"),
        "max-running-seqs=100000".into(),
        "prefill-tok-s=10000000".into(),
    ]
}

/// (user, sys) CPU seconds of this whole process so far.
fn cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(usage.ru_utime), tv(usage.ru_stime))
}

fn spec(seed: u64, concurrency: u32, requests: u32, warmup: u32) -> CellSpec {
    CellSpec {
        name: "fidelity".into(),
        model: "bench".into(),
        context_tokens: 64,
        concurrency,
        requests,
        warmup_requests: warmup,
        max_tokens: 4096,
        seed,
        request_timeout_ms: 120_000,
        ..CellSpec::default()
    }
}

#[derive(Deserialize)]
struct TruthChunk {
    unix_ns: u64,
    tokens: u32,
}

#[derive(Deserialize)]
struct TruthStamp {
    unix_ns: u64,
}

#[derive(Deserialize)]
struct TruthRecord {
    canary: Option<String>,
    received: TruthStamp,
    chunks: Vec<TruthChunk>,
}

/// canary marker → (the sim's receipt of the request, its write of the
/// first token-bearing chunk), both from the sim's own log.
async fn first_content_writes(url: &str) -> HashMap<String, (u64, u64)> {
    anvil_net::install_crypto_provider();
    let body = reqwest::get(format!("{url}/debug/ground-truth?clear=1"))
        .await
        .expect("ground truth")
        .bytes()
        .await
        .expect("body");
    let records: Vec<TruthRecord> = serde_json::from_slice(&body).expect("ground truth JSON");
    records
        .into_iter()
        .filter_map(|r| {
            Some((r.canary?, (r.received.unix_ns, r.chunks.iter().find(|c| c.tokens > 0)?.unix_ns)))
        })
        .collect()
}

fn run(rt: &tokio::runtime::Runtime, spec: &CellSpec, url: &str) -> CellReport {
    let target =
        [Target { base_url: url.to_string(), api_key: None, label: "sim".into(), tls: Default::default() }];
    let quiet = |_: &Progress| {};
    let report = rt.block_on(run_cell(spec, &target, &CellContext::default(), &quiet)).expect("cell");
    assert_eq!(report.artifact["failed"], 0, "first failure: {}", report.artifact["failures"][0]);
    report
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn wanted(table: &str) -> bool {
    std::env::var("FIDELITY_ONLY").map_or(true, |only| only == table)
}

/// TTFT rows: (C, measured requests, target p99 of the TTFT error in ms).
const TTFT_ROWS: [(u32, u32, &str); 3] = [(1, 200, "0.15"), (64, 640, "0.5"), (256, 1024, "1.0")];

fn ttft_table(rt: &tokio::runtime::Runtime) {
    println!(
        "(1) TTFT error against the sim's own log (its wall clock), ms; closed loop, no warmup requests"
    );
    println!("    sim: decode-step-ms 5 (fixed), 64 output tokens, ~64-token prompts");
    println!("    ttft err = client ttft - sim ttft (sim: first-content write - request received):");
    println!("      what the client adds to what the server spent (connects, stalls, late sends)");
    println!("    arrival err = client first-content arrival - sim first-content write (kernel clock)");
    println!("    read p99 = the same with each read stamped when the client read it (a user-space client)");
    println!(
        "{:>5} {:>10} {:>7} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9}  load",
        "C",
        "connect",
        "samples",
        "ttft p50",
        "ttft p99",
        "ttft max",
        "target",
        "arr p50",
        "arr p99",
        "read p99"
    );
    let sim = spawn_sim(&sim_settings(5.0, 64));
    let rounds: u32 = std::env::var("FIDELITY_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    for _ in 0..rounds {
        for (c, requests, target) in TTFT_ROWS {
            for connect in CONNECT_MODES {
                ttft_row(rt, &sim.url, c, requests, target, connect);
            }
        }
    }
}

fn ttft_row(rt: &tokio::runtime::Runtime, url: &str, c: u32, requests: u32, target: &str, connect: &str) {
    let seed = 100 + u64::from(c);
    rt.block_on(first_content_writes(url)); // clear
    let report = run(rt, &ttft_spec(spec(seed, c, requests, 0), connect), url);
    let truth = rt.block_on(first_content_writes(url));
    // (ttft error, arrival error, read-clock arrival error) per matched request.
    let rows: Vec<(f64, f64, f64)> = report_records(&report)
        .iter()
        .filter_map(|r| {
            let ttft = r.ttft_ms?;
            let (received, written) = *truth.get(&marker(seed, r.request_index))?;
            let server_ttft = (written as f64 - received as f64) / 1e6;
            let arrival = (r.request_start_unix_ns as f64 + ttft * 1e6 - written as f64) / 1e6;
            let read = arrival + f64::from(r.first_content_read_delay_us?) / 1e3;
            Some((ttft - server_ttft, arrival, read))
        })
        .collect();
    if rows.is_empty() {
        println!("{c:>5} no matched samples");
        return;
    }
    let sorted = |pick: fn(&(f64, f64, f64)) -> f64| {
        let mut v: Vec<f64> = rows.iter().map(pick).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let (ttft, arrival, read) = (sorted(|r| r.0), sorted(|r| r.1), sorted(|r| r.2));
    println!(
        "{:>5} {:>10} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>7} {:>9.3} {:>9.3} {:>9.3}  {}",
        c,
        connect,
        ttft.len(),
        nearest_rank(&ttft, 50),
        nearest_rank(&ttft, 99),
        ttft[ttft.len() - 1],
        target,
        nearest_rank(&arrival, 50),
        nearest_rank(&arrival, 99),
        nearest_rank(&read, 99),
        load_average()
    );
}

fn cpu_table(rt: &tokio::runtime::Runtime) {
    println!("(2) client CPU per streamed chunk, C=64 (this process's user+sys over the cell / chunks)");
    println!("    sim: decode-step-ms 1 (fixed), 256 output tokens -> up to 64k chunks/s offered");
    println!(
        "    us/chunk = (user+sys) / token-bearing chunks; user and sys shown apart; us/event counts every SSE event"
    );
    println!(
        "{:>5} {:>9} {:>9} {:>9} {:>8} {:>9} {:>8} {:>8} {:>9} {:>9}  load",
        "C", "requests", "chunks", "events", "cpu s", "us/chunk", "user", "sys", "us/event", "chunks/s"
    );
    let sim = spawn_sim(&sim_settings(1.0, 256));
    for _ in 0..3 {
        rt.block_on(first_content_writes(&sim.url)); // clear
        let c = 64u32;
        let spec = CellSpec { warmup_requests: 0, context_tokens: 0, ..spec(200, c, 256, 0) };
        let before = cpu_seconds();
        let report = run(rt, &spec, &sim.url);
        let after = cpu_seconds();
        let (user, sys) = (after.0 - before.0, after.1 - before.1);
        let cpu = user + sys;
        let chunks: u64 =
            report.records.iter().map(|r| u64::from(r.content_chunks + r.reasoning_chunks)).sum();
        // Every SSE event the sim wrote (role, tokens, finish, usage, [DONE]).
        let truth_body = rt
            .block_on(async {
                anvil_net::install_crypto_provider();
                reqwest::get(format!("{}/debug/ground-truth", sim.url)).await?.bytes().await
            })
            .expect("ground truth");
        let truth: Vec<TruthRecord> = serde_json::from_slice(&truth_body).expect("ground truth JSON");
        let events: u64 = truth.iter().map(|r| r.chunks.len() as u64 + 1).sum(); // + [DONE]
        let wall = report.artifact["wall_clock_ms"].as_f64().unwrap_or(0.0) / 1000.0;
        println!(
            "{:>5} {:>9} {:>9} {:>9} {:>8.3} {:>9.3} {:>8.3} {:>8.3} {:>9.3} {:>9.0}  {}",
            c,
            report.records.len(),
            chunks,
            events,
            cpu,
            cpu * 1e6 / chunks as f64,
            user * 1e6 / chunks as f64,
            sys * 1e6 / chunks as f64,
            cpu * 1e6 / events as f64,
            chunks as f64 / wall.max(1e-9),
            load_average()
        );
    }
}

/// The pacers compared in the sweep (`ANVIL_LOADGEN_PACER`), oldest first.
const PACERS: [&str; 3] = ["tokio-timer", "thread", "sender"];

fn sweep_table() {
    println!("(3) open-loop Poisson: send lag = actual - intended send, ms (schedule kept while p99 < 1 ms)");
    println!("    sim: decode-step-ms 5 (fixed), 64 output tokens; no concurrency cap;");
    println!(
        "    pacer tokio-timer: the runtime sleeps on tokio's timer and sends; thread: a pacer thread wakes the"
    );
    println!(
        "    runtime, which sends; sender (default): prepared ahead, the sender thread writes at the due time;"
    );
    println!("    rows alternate under the same load");
    println!(
        "{:>7} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>10}  load",
        "req/s", "pacer", "requests", "p50", "p90", "p99", "max", "kept", "chunks/s"
    );
    let rates: Vec<f64> = std::env::var("FIDELITY_RATES")
        .ok()
        .map(|v| v.split(',').filter_map(|r| r.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![25.0, 50.0, 100.0, 200.0, 400.0, 800.0]);
    let sim = spawn_sim(&sim_settings(5.0, 64));
    let exe = std::env::current_exe().expect("own path");
    for rate in rates {
        for pacer in PACERS {
            // The pacer is chosen by environment at run time, so each row runs
            // in a child process of this bench with its own environment.
            let status = Command::new(&exe)
                .env(ROW_ENV, format!("{rate},{}", sim.url))
                .env("ANVIL_LOADGEN_PACER", pacer)
                .status()
                .expect("sweep row child");
            assert!(status.success(), "sweep row {rate} req/s with {pacer} failed");
        }
    }
}

/// One sweep row: `rate,url` in [`ROW_ENV`].
fn sweep_row(rt: &tokio::runtime::Runtime, args: &str) {
    let (rate, url) = args.split_once(',').expect("rate,url");
    let rate: f64 = rate.parse().expect("rate");
    rt.block_on(first_content_writes(url)); // clear
    let requests = ((rate * 3.0) as u32).clamp(200, 5000);
    let spec =
        CellSpec { arrival: Arrival::Poisson { rate_per_s: rate }, ..spec(300, 100_000, requests, 64) };
    let report = run(rt, &spec, url);
    let mut lags: Vec<f64> = report.records.iter().map(|r| r.send_lag_ms).collect();
    lags.sort_by(f64::total_cmp);
    let p99 = nearest_rank(&lags, 99);
    let chunks: u64 = report.records.iter().map(|r| u64::from(r.content_chunks)).sum();
    println!(
        "{:>7.0} {:>12} {:>9} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>6} {:>10.0}  {}",
        rate,
        std::env::var("ANVIL_LOADGEN_PACER").unwrap_or_default(),
        lags.len(),
        nearest_rank(&lags, 50),
        nearest_rank(&lags, 90),
        p99,
        lags[lags.len() - 1],
        if p99 < 1.0 { "yes" } else { "no" },
        chunks as f64 / (report.artifact["wall_clock_ms"].as_f64().unwrap_or(0.0) / 1000.0).max(1e-9),
        load_average()
    );
}

// --- what differs between client versions ---

const CONNECT_MODES: [&str; 2] = ["ahead", "on-demand"];

fn ttft_spec(spec: CellSpec, connect: &str) -> CellSpec {
    let connect =
        if connect == "on-demand" { anvil_loadgen::Connect::OnDemand } else { anvil_loadgen::Connect::Ahead };
    CellSpec { connect, ..spec }
}

fn report_records(report: &CellReport) -> Vec<anvil_loadgen::RequestRecord> {
    report.records.clone()
}

/// Runs the cell and writes its artifact into `dir` as `anvil run` does,
/// records streamed through the record log: (chunks, artifact bytes).
fn run_and_write(
    rt: &tokio::runtime::Runtime,
    spec: &CellSpec,
    url: &str,
    dir: &std::path::Path,
) -> (u64, u64) {
    let target =
        [Target { base_url: url.to_string(), api_key: None, label: "sim".into(), tls: Default::default() }];
    let quiet = |_: &Progress| {};
    let cell = rt
        .block_on(anvil_loadgen::run_cell_streamed(spec, &target, &CellContext::default(), &quiet, dir))
        .expect("cell");
    assert_eq!(cell.artifact.failed, 0);
    let chunks = cell.artifact.metric("content_chunks").as_u64().unwrap_or(0);
    let bytes = cell.write_artifact_file(&cell.artifact, &dir.join("benchmark.json")).expect("write");
    (chunks, bytes)
}

const ROW_ENV: &str = "FIDELITY_SWEEP_ROW";
const RSS_ENV: &str = "FIDELITY_RSS_ROW";

/// Peak resident memory of this process (VmHWM), in MiB.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn rss_table() {
    println!(
        "(4) peak RSS of a process that runs one cell and writes its benchmark.json (as `anvil run` does)"
    );
    println!(
        "    sim: decode-step-ms 1 (fixed), 256 output tokens; C=64 closed loop; one child process per row"
    );
    println!(
        "{:>9} {:>9} {:>12} {:>12} {:>14}  load",
        "requests", "chunks", "start MiB", "peak MiB", "artifact MiB"
    );
    let sim = spawn_sim(&sim_settings(1.0, 256));
    let exe = std::env::current_exe().expect("own path");
    let counts: Vec<u32> = std::env::var("FIDELITY_RSS_REQUESTS")
        .ok()
        .map(|v| v.split(',').filter_map(|r| r.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![2000]);
    for requests in counts {
        let status = Command::new(&exe)
            .env(RSS_ENV, format!("{requests},{}", sim.url))
            .status()
            .expect("rss row child");
        assert!(status.success(), "rss row {requests} failed");
    }
}

/// One RSS row: `requests,url` in [`RSS_ENV`].
fn rss_row(rt: &tokio::runtime::Runtime, args: &str) {
    let (requests, url) = args.split_once(',').expect("requests,url");
    let requests: u32 = requests.parse().expect("requests");
    let start = peak_rss_mib();
    let spec = CellSpec { context_tokens: 0, ..spec(400, 64, requests, 0) };
    let dir = std::env::temp_dir().join(format!("anvil-fidelity-rss-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let (chunks, bytes) = run_and_write(rt, &spec, url, &dir);
    let peak = peak_rss_mib();
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{:>9} {:>9} {:>12.1} {:>12.1} {:>14.1}  {}",
        requests,
        chunks,
        start,
        peak,
        bytes as f64 / (1024.0 * 1024.0),
        load_average()
    );
}

fn main() {
    // The caller's runtime only waits for run_cell; the client runs on its own.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    if let Ok(args) = std::env::var(ROW_ENV) {
        sweep_row(&rt, &args);
        return;
    }
    if let Ok(args) = std::env::var(RSS_ENV) {
        rss_row(&rt, &args);
        return;
    }
    println!("load average at start: {}", load_average());
    if wanted("ttft") {
        ttft_table(&rt);
        println!();
    }
    if wanted("cpu") {
        cpu_table(&rt);
        println!();
    }
    if wanted("sweep") {
        sweep_table();
        println!();
    }
    if wanted("rss") {
        rss_table();
    }
}
