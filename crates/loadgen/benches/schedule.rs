//! Does the client keep its open-loop schedule, and does its memory stay
//! flat as the request count grows? Printed as tables:
//!
//! (1) A ladder of constant arrival rates (evenly spaced sends) against
//!     the simulated engine with 2-token replies, so the server is not the
//!     bottleneck: send lag (actual − intended send) p50/p99/max per rate;
//!     the highest rate whose p99 stays under 1 ms is the rate the client
//!     keeps on this machine. Between the last rate that kept it and the
//!     first that did not, the midpoint is tried too.
//! (2) A Poisson cell at that rate (bursty gaps, same mean), next to it.
//! (3) Memory: cells of 10,000 and 100,000 requests (replayed traces when
//!     the load generator has trace replay, `BENCH_MEMORY=poisson` to force
//!     Poisson cells) — peak resident memory (VmHWM) of the process that
//!     ran the cell and wrote its artifact, and its send lag.
//!
//! Each cell runs in a child process of this bench (so VmHWM is that
//! cell's alone); the sim runs in this parent process, on its own runtime.
//! Records stream to the record log in a temporary folder and the artifact
//! is written as `anvil run` writes it.
//!
//! `cargo bench -p anvil-loadgen --bench schedule`; `BENCH_RATES=500,1000`
//! sets the ladder; `BENCH_MEMORY_RATE` the memory cells' rate (default
//! 1,000/s); `BENCH_ONLY=ladder|memory`.

#[path = "common/in_process_sim.rs"]
mod in_process_sim;

#[path = "common/vmhwm.rs"]
mod vmhwm;

use std::io::Write as _;
use std::process::Command;

use anvil_loadgen::{Arrival, CellContext, CellSpec, Progress, Target};
use serde_json::{Value, json};
use vmhwm::vmhwm_kib;

const JOB_ENV: &str = "SCHEDULE_BENCH_JOB";

fn main() {
    if let Ok(job) = std::env::var(JOB_ENV) {
        child(&job);
        return;
    }
    let url = start_sim();
    println!(
        "anvil-loadgen schedule bench; sim in-process (decode-step-ms 1, 2 output tokens), load: {}",
        load()
    );
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    if only != "memory" {
        ladder(&url);
    }
    if only != "ladder" {
        let rate = std::env::var("BENCH_MEMORY_RATE")
            .ok()
            .and_then(|r| r.parse().ok())
            // Memory is about the request count, not the schedule: a rate
            // high enough that 100,000 requests take under two minutes.
            .unwrap_or(1000.0);
        memory(&url, rate);
    }
}

/// One measured cell, as a child process reports it.
#[derive(Debug)]
struct Cell {
    requests: u64,
    failed: u64,
    lag_p50: f64,
    lag_p99: f64,
    lag_max: f64,
    ttft_p50: f64,
    ttft_p99: f64,
    ttft_sched_p99: f64,
    vmhwm_mib: f64,
    wall_s: f64,
}

fn run_child(kind: &str, rate: f64, requests: u64, url: &str) -> Cell {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .env(JOB_ENV, format!("{kind},{rate},{requests},{url}"))
        .output()
        .expect("bench child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| l.strip_prefix("RESULT ")).unwrap_or_else(|| {
        panic!("child {kind} {rate}/s failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr))
    });
    let v: Value = serde_json::from_str(line).expect("child result");
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Cell {
        requests: v["requests"].as_u64().unwrap_or(0),
        failed: v["failed"].as_u64().unwrap_or(0),
        lag_p50: f("lag_p50"),
        lag_p99: f("lag_p99"),
        lag_max: f("lag_max"),
        ttft_p50: f("ttft_p50"),
        ttft_p99: f("ttft_p99"),
        ttft_sched_p99: f("ttft_sched_p99"),
        vmhwm_mib: f("vmhwm_kib") / 1024.0,
        wall_s: f("wall_s"),
    }
}

fn header() {
    println!(
        "{:>8} {:>9} {:>8} {:>6} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9} {:>11} {:>9} {:>7}",
        "req/s",
        "arrivals",
        "requests",
        "failed",
        "lag p50",
        "lag p99",
        "lag max",
        "kept",
        "ttft p50",
        "ttft p99",
        "sched p99",
        "VmHWM MiB",
        "wall s"
    );
}

fn row(rate: f64, kind: &str, c: &Cell) {
    println!(
        "{:>8.0} {:>9} {:>8} {:>6} {:>9.3} {:>9.3} {:>9.3} {:>6} {:>9.3} {:>9.3} {:>11.3} {:>9.1} {:>7.1}",
        rate,
        kind,
        c.requests,
        c.failed,
        c.lag_p50,
        c.lag_p99,
        c.lag_max,
        if c.lag_p99 < 1.0 { "yes" } else { "no" },
        c.ttft_p50,
        c.ttft_p99,
        c.ttft_sched_p99,
        c.vmhwm_mib,
        c.wall_s
    );
    let _ = std::io::stdout().flush();
}

/// Requests per rung: about 3 s of arrivals, 500 to 20,000.
fn rung_requests(rate: f64) -> u64 {
    ((rate * 3.0) as u64).clamp(500, 20_000)
}

fn ladder(url: &str) -> Option<f64> {
    println!(
        "\n(1) constant-rate ladder: send lag ms (kept: p99 < 1 ms); sched p99 = TTFT p99 from the scheduled send"
    );
    header();
    let rates: Vec<f64> = std::env::var("BENCH_RATES")
        .ok()
        .map(|v| v.split(',').filter_map(|r| r.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![50.0, 100.0, 250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0]);
    // Up the ladder until two rungs in a row miss (one miss can be a
    // neighbour's burst on a shared machine); then the midpoint between the
    // highest kept rung and the miss above it.
    let (mut kept, mut missed_above, mut misses) = (None::<f64>, None::<f64>, 0);
    for &rate in &rates {
        let c = run_child("constant", rate, rung_requests(rate), url);
        row(rate, "constant", &c);
        if c.lag_p99 < 1.0 && c.failed == 0 {
            (kept, missed_above, misses) = (Some(rate), None, 0);
        } else {
            missed_above = missed_above.or(Some(rate));
            misses += 1;
            if misses == 2 {
                break;
            }
        }
    }
    if let (Some(lo), Some(hi)) = (kept, missed_above) {
        let mid = ((lo + hi) / 2.0).round();
        let c = run_child("constant", mid, rung_requests(mid), url);
        row(mid, "constant", &c);
        if c.lag_p99 < 1.0 && c.failed == 0 {
            kept = Some(mid);
        }
    }
    let poisson_rate = match kept {
        Some(rate) => {
            println!("highest constant rate with send-lag p99 < 1 ms: {rate:.0} req/s");
            rate
        }
        None => {
            println!("no rung kept send-lag p99 under 1 ms on this machine now (load: {})", load());
            rates[0]
        }
    };
    println!("\n(2) a Poisson cell at {poisson_rate:.0} req/s");
    header();
    let c = run_child("poisson", poisson_rate, rung_requests(poisson_rate), url);
    row(poisson_rate, "poisson", &c);
    kept
}

fn memory(url: &str, rate: f64) {
    let trace = std::env::var("BENCH_MEMORY").as_deref() != Ok("poisson") && trace_replay_available();
    let kind = if trace { "trace" } else { "poisson" };
    println!(
        "\n(3) memory: {kind} cells at {rate:.0} req/s; VmHWM = peak resident memory of the child that ran the cell and wrote its artifact"
    );
    if !trace {
        println!(
            "    (Poisson cells: BENCH_MEMORY=poisson, or this build of the load generator has no trace replay)"
        );
    }
    header();
    for requests in [10_000u64, 100_000] {
        let c = run_child(kind, rate, requests, url);
        row(rate, kind, &c);
    }
}

/// Whether `CellSpec` has trace replay (the `traffic` of H1's work); the
/// bench builds either way.
fn trace_replay_available() -> bool {
    serde_json::to_value(CellSpec::default()).is_ok_and(|v| v.get("traffic").is_some())
}

/// The sim, fast enough that the client is the bottleneck.
fn start_sim() -> String {
    in_process_sim::start(&[
        ("decode-step-ms", "1"),
        ("decode-step-ms-per-seq", "0"),
        ("max-running-seqs", "100000"),
        ("prefill-tok-s", "10000000"),
    ])
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// The cell a job names: `kind,rate,requests,url`.
fn child_spec(kind: &str, rate: f64, requests: u64, dir: &std::path::Path) -> CellSpec {
    let arrival = match kind {
        "constant" => Arrival::Constant { rate_per_s: rate },
        _ => Arrival::Poisson { rate_per_s: rate },
    };
    let spec = CellSpec {
        name: format!("schedule-{kind}-{rate}"),
        model: "bench".into(),
        context_tokens: 0,
        concurrency: 100_000,
        arrival,
        requests: requests as u32,
        warmup_requests: 64,
        max_tokens: 2,
        canaries: false,
        seed: 11,
        request_timeout_ms: 60_000,
        ..CellSpec::default()
    };
    if kind != "trace" {
        return spec;
    }
    // A generated mooncake trace at `rate`: unique 64-token prompts (one
    // hash id each, 64-token blocks), 2 output tokens.
    let path = dir.join("trace.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("trace file"));
    let mut t_ms = 0.0;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..requests {
        writeln!(
            file,
            "{{\"timestamp\": {}, \"input_length\": 64, \"output_length\": 2, \"hash_ids\": [{i}]}}",
            t_ms as u64
        )
        .expect("trace line");
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let u = ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        t_ms += -u.ln() / rate * 1000.0;
    }
    drop(file);
    let mut v = serde_json::to_value(&spec).expect("spec as JSON");
    v["traffic"] = json!({"kind": "trace", "path": path, "format": "mooncake", "block_tokens": 64,
        "time_scale": 1.0, "start_ms": 0, "duration_ms": null, "max_requests": null, "looped": false,
        "ignore_eos": false});
    serde_json::from_value(v).expect("a trace cell (the traffic layout changed?)")
}

fn child(job: &str) {
    let mut parts = job.splitn(4, ',');
    let kind = parts.next().expect("kind").to_string();
    let rate: f64 = parts.next().and_then(|r| r.parse().ok()).expect("rate");
    let requests: u64 = parts.next().and_then(|r| r.parse().ok()).expect("requests");
    let url = parts.next().expect("url").to_string();
    let dir = std::env::temp_dir().join(format!("anvil-schedule-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let spec = child_spec(&kind, rate, requests, &dir);
    let target: Target = serde_json::from_value(json!({"base_url": url, "label": "sim"})).expect("a target");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let quiet = |_: &Progress| {};
    let started = std::time::Instant::now();
    let cell = rt
        .block_on(anvil_loadgen::run_cell_streamed(&spec, &[target], &CellContext::default(), &quiet, &dir))
        .expect("cell");
    cell.write_artifact_file(&cell.artifact, &dir.join("benchmark.json")).expect("artifact");
    let wall_s = started.elapsed().as_secs_f64();
    let m = |key: &str| cell.artifact.metric(key).clone();
    let result = json!({
        "requests": cell.artifact.requests,
        "failed": cell.artifact.failed,
        "lag_p50": m("send_lag_p50_ms"),
        "lag_p99": m("send_lag_p99_ms"),
        "lag_max": m("send_lag_max_ms"),
        "ttft_p50": m("ttft_p50_ms"),
        "ttft_p99": m("ttft_p99_ms"),
        "ttft_sched_p99": m("ttft_from_schedule_p99_ms"),
        "vmhwm_kib": vmhwm_kib(),
        "wall_s": wall_s,
    });
    println!("RESULT {result}");
    let _ = std::fs::remove_dir_all(&dir);
}
