//! A server's `scrape` targets through the anvil binary: an exporter of the
//! test's own making (a DCGM-like `/metrics` on a TcpListener in this
//! process, whose energy counters grow by a known amount at every scrape
//! and which logs what it served) is read around and during the cell, its
//! series labelled with its URL; the energy the cell used and its energy
//! per output token follow from what it served before and after the cell;
//! a target that refuses connections is recorded as failed and the cell
//! still completes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::common::{Outcome, Scratch, anvil_binary};

const ENERGY: &str = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";
const POWER: &str = "DCGM_FI_DEV_POWER_USAGE";
/// Each GPU's energy counter (mJ since its boot) at the first scrape and
/// what every scrape after adds: different per GPU, so a sum that missed
/// one, or took a value for a difference, cannot come out right.
const START_MJ: [f64; 2] = [123_456_789_000.0, 98_765_432_000.0];
const STEP_MJ: [f64; 2] = [1000.0, 2500.0];
const POWER_W: [f64; 2] = [301.5, 152.25];

/// A series key as anvil stores it: labels sorted by name.
fn key(metric: &str, gpu: usize) -> String {
    format!("{metric}{{UUID=\"GPU-{gpu}\",gpu=\"{gpu}\"}}")
}

/// The fake exporter: its URL and, in the order it served them, each
/// scrape's energy counters (GPU 0, GPU 1).
struct Exporter {
    url: String,
    served: Arc<Mutex<Vec<[f64; 2]>>>,
}

impl Exporter {
    fn start() -> Exporter {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the exporter");
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        let served = Arc::new(Mutex::new(Vec::new()));
        let log = served.clone();
        // One connection at a time, so the log's order is the order served.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                serve(stream, &log);
            }
        });
        Exporter { url, served }
    }

    fn served(&self) -> Vec<[f64; 2]> {
        self.served.lock().unwrap().clone()
    }
}

fn serve(mut stream: TcpStream, log: &Mutex<Vec<[f64; 2]>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head);
    if !head.starts_with("GET /metrics ") {
        let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return;
    }
    let body = {
        let mut log = log.lock().unwrap();
        let n = log.len() as f64;
        let energy = [START_MJ[0] + n * STEP_MJ[0], START_MJ[1] + n * STEP_MJ[1]];
        log.push(energy);
        let mut body = format!(
            "# HELP {ENERGY} Total energy consumption since boot (in mJ).\n# TYPE {ENERGY} counter\n\
             # HELP {POWER} Power draw (in W).\n# TYPE {POWER} gauge\n"
        );
        for gpu in 0..2 {
            body.push_str(&format!("{ENERGY}{{gpu=\"{gpu}\",UUID=\"GPU-{gpu}\"}} {}\n", energy[gpu]));
            body.push_str(&format!("{POWER}{{gpu=\"{gpu}\",UUID=\"GPU-{gpu}\"}} {}\n", POWER_W[gpu]));
        }
        body
    };
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn recipe(scratch: &Scratch, name: &str, scrapes: &[&str]) -> PathBuf {
    let scrape: String = scrapes.iter().map(|url| format!("    scrape \"{url}\"\n")).collect();
    scratch.write(
        name,
        &format!(
            r#"
server "sim" {{
    model "m"
{scrape}    sim {{ decode-step-ms 10; }}
}}
cell "c" server="sim" {{
    context-tokens 64
    requests 8
    concurrency 2
    max-tokens 16
}}
"#
        ),
    )
}

/// `anvil run RECIPE`, sampling every 50 ms so the cell has several samples.
fn run(scratch: &Scratch, path: &Path) -> Outcome {
    let args = ["run", path.to_str().unwrap()];
    let output = assert_cmd::Command::new(anvil_binary())
        .current_dir(scratch.path())
        .env("ANVIL_STORE", scratch.store())
        .env("NO_COLOR", "1")
        .env("ANVIL_METRICS_INTERVAL_MS", "50")
        .args(args)
        .timeout(Duration::from_secs(180))
        .output()
        .expect("start anvil");
    Outcome::from_output(&args, output).expect_code(0)
}

/// The entry of `list` whose `replica` is `label`.
fn entry<'a>(list: &'a Value, label: &str) -> &'a Value {
    list.as_array()
        .and_then(|l| l.iter().find(|e| e["replica"] == label))
        .unwrap_or_else(|| panic!("no entry for `{label}` in {list}"))
}

#[test]
fn an_exporters_series_join_the_cells_and_its_energy_counter_gives_energy_per_output_token() {
    let scratch = Scratch::new();
    let exporter = Exporter::start();
    let path = recipe(&scratch, "scrape.kdl", &[&exporter.url]);
    // Unhashed: the target decides what is observed, not what is measured.
    let without = recipe(&scratch, "plain.kdl", &[]);
    assert_eq!(scratch.plan(&path, &[]).fingerprint("c"), scratch.plan(&without, &[]).fingerprint("c"));

    run(&scratch, &path);
    let served = exporter.served();
    // Before the cell, at least one sample during it, after it.
    assert!(served.len() >= 3, "scrapes served: {served:?}");
    let a: Value = scratch.stored_json(&path, "c", "benchmark.json");
    let telemetry = &a["telemetry"];

    // The deltas: the exporter's, labelled with its URL, are after − before
    // of what it served first and last; the power gauge its value after.
    let (first, last) = (served[0], served[served.len() - 1]);
    let deltas = &telemetry["server_metrics_delta"];
    let exported = entry(deltas, &exporter.url);
    assert_eq!(exported["scrape_target"], true, "{exported}");
    for gpu in 0..2 {
        assert_eq!(exported["delta"][key(ENERGY, gpu)].as_f64(), Some(last[gpu] - first[gpu]), "{exported}");
        assert_eq!(exported["delta"][key(POWER, gpu)].as_f64(), Some(POWER_W[gpu]), "{exported}");
    }
    // The engine's own replica is there too, told apart: no flag, no DCGM series.
    let engine = entry(deltas, "sim");
    assert!(engine.get("scrape_target").is_none(), "{engine}");
    let engine_keys: Vec<&String> = engine["delta"].as_object().expect("the sim's deltas").keys().collect();
    assert!(engine_keys.iter().any(|k| k.starts_with("vllm:")), "{engine_keys:?}");
    assert!(engine_keys.iter().all(|k| !k.starts_with("DCGM_")), "{engine_keys:?}");

    // The series: every scrape between the first and the last, in order.
    let series = &telemetry["server_metrics_series"];
    let sampled = entry(series, &exporter.url);
    assert_eq!(sampled["scrape_target"], true);
    assert_eq!(sampled["failed_scrapes"], 0, "{sampled}");
    let samples = sampled["samples"].as_array().expect("samples");
    let energies: Vec<[f64; 2]> = samples
        .iter()
        .map(|s| [0, 1].map(|gpu| s["values"][key(ENERGY, gpu)].as_f64().expect("energy sampled")))
        .collect();
    assert_eq!(energies, served[1..served.len() - 1], "samples are the scrapes between before and after");
    for s in samples {
        assert_eq!(s["values"][key(POWER, 1)].as_f64(), Some(POWER_W[1]), "the power gauge is kept: {s}");
    }
    let engine_series = entry(series, "sim");
    assert!(engine_series.get("scrape_target").is_none());
    assert!(!engine_series["samples"].as_array().unwrap().is_empty());

    // Energy: the two GPUs' increases, in joules, over the output tokens.
    let derived = &telemetry["server_derived"];
    let energy_mj: f64 = (0..2).map(|gpu| last[gpu] - first[gpu]).sum();
    assert!(energy_mj > 0.0);
    let energy_j = energy_mj / 1000.0;
    assert_eq!(derived["energy_j"].as_f64(), Some(energy_j), "{derived}");
    assert_eq!(derived["energy_counter"], ENERGY, "{derived}");
    let output_tokens = a["metrics"]["output_tokens"].as_f64().expect("output tokens");
    assert!(output_tokens > 0.0);
    assert_eq!(derived["energy_per_output_token_j"].as_f64(), Some(energy_j / output_tokens), "{derived}");
    assert_eq!(derived["energy_mj"].as_f64(), Some(energy_mj), "{derived}");
}

#[test]
fn a_target_that_refuses_connections_is_recorded_as_failed_and_the_cell_completes() {
    let scratch = Scratch::new();
    let refused = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/metrics", listener.local_addr().unwrap())
    };
    let path = recipe(&scratch, "refused.kdl", &[&refused]);
    let outcome = run(&scratch, &path);
    assert_eq!(outcome.summary().failed, 0, "{}", outcome.transcript());
    let a: Value = scratch.stored_json(&path, "c", "benchmark.json");
    let telemetry = &a["telemetry"];
    let delta = entry(&telemetry["server_metrics_delta"], &refused);
    assert_eq!(delta["scrape_target"], true);
    assert!(delta.get("delta").is_none(), "{delta}");
    assert!(delta["unavailable"].as_str().is_some_and(|why| why.contains(&refused)), "{delta}");
    let series = entry(&telemetry["server_metrics_series"], &refused);
    assert_eq!(series["samples"].as_array().map(Vec::len), Some(0), "{series}");
    assert!(series["failed_scrapes"].as_u64().is_some_and(|n| n >= 1), "{series}");
    assert!(series["first_error"].as_str().is_some(), "{series}");
    // The engine's own metrics are unaffected; no energy without a counter.
    assert!(entry(&telemetry["server_metrics_delta"], "sim")["delta"].is_object());
    assert!(telemetry["server_derived"].get("energy_j").is_none(), "{telemetry}");
}

#[test]
fn a_scrape_url_that_is_not_a_metrics_endpoint_is_a_recipe_error() {
    let scratch = Scratch::new();
    let path = recipe(&scratch, "bad.kdl", &["127.0.0.1:9400"]);
    let outcome = scratch.anvil(&["plan", path.to_str().unwrap()]).expect_code(2);
    assert!(
        outcome.stderr.contains("scrape \"127.0.0.1:9400\": give an http:// or https:// URL"),
        "{}",
        outcome.transcript()
    );
    let path = recipe(&scratch, "bad.kdl", &["http://127.0.0.1:9400/"]);
    let outcome = scratch.anvil(&["plan", path.to_str().unwrap()]).expect_code(2);
    assert!(outcome.stderr.contains("must end in `/metrics`"), "{}", outcome.transcript());
}
