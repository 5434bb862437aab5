//! The runner's spine at scale, measured with the release binary:
//!
//! - `anvil plan` of a generated 10,000-step recipe (tasks, swept tasks,
//!   simulated cells and gates) against an empty store, and against a store
//!   that already holds 1,000 of its tasks (stored by a run of a
//!   1,000-task variant of the same recipe);
//! - a no-op rerun of `recipes/quickstart.kdl` (everything cached) next to
//!   `anvil --version`, the floor of starting the process at all.
//!
//! Run: `cargo bench --bench spine` (prints a table; medians of N runs).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PLAIN_TASKS: usize = 2_500;
const SWEPT_DECLS: usize = 50;
const SWEEP_VALUES: usize = 50; // 50 × 50 = 2,500 swept tasks
const SERVERS: usize = 10;
const CELL_DECLS: usize = 25;
const CELL_SWEEP: usize = 100; // 25 × 100 = 2,500 cells
const GATES: usize = 10_000 - PLAIN_TASKS - SWEPT_DECLS * SWEEP_VALUES - SERVERS - CELL_DECLS * CELL_SWEEP;
const STORED_TASKS: usize = 1_000;
const PLAN_RUNS: usize = 5;
const STARTUP_RUNS: usize = 21;

fn anvil() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_anvil"))
}

/// Plain tasks in chains of ten (`after` the previous one), so the DAG has depth.
fn plain_tasks(count: usize, out: &mut String) {
    for i in 0..count {
        let after = if i % 10 == 0 { String::new() } else { format!(" after=\"t{}\"", i - 1) };
        let _ = writeln!(out, "task \"t{i}\"{after} {{\n    run \"sh\" \"-c\" \"echo task {i}\"\n}}");
    }
}

fn big_recipe() -> String {
    let mut out = String::from("campaign \"spine-10k\" {\n    seed 7\n}\nparam \"scale\" 3\n");
    plain_tasks(PLAIN_TASKS, &mut out);
    let values: Vec<String> = (0..SWEEP_VALUES).map(|v| v.to_string()).collect();
    for d in 0..SWEPT_DECLS {
        let _ = writeln!(
            out,
            "task \"s{d}-{{v}}\" {{\n    sweep \"v\" {}\n    run \"sh\" \"-c\" \"echo swept {d} {{v}} {{scale}}\"\n}}",
            values.join(" ")
        );
    }
    for s in 0..SERVERS {
        let _ = writeln!(
            out,
            "server \"sim{s}\" {{\n    engine \"sim\"\n    model \"m{s}\"\n    sim {{ decode-step-ms {} }}\n}}",
            1 + s
        );
    }
    out.push_str("workload \"w\" {\n    context-tokens 64\n    requests 4\n    max-tokens 16\n}\n");
    let concurrency: Vec<String> = (1..=CELL_SWEEP).map(|c| c.to_string()).collect();
    for c in 0..CELL_DECLS {
        let _ = writeln!(
            out,
            "cell \"c{c}-{{conc}}\" server=\"sim{}\" workload=\"w\" {{\n    sweep \"conc\" {}\n    concurrency \"{{conc}}\"\n}}",
            c % SERVERS,
            concurrency.join(" ")
        );
    }
    for g in 0..GATES {
        let _ =
            writeln!(out, "gate \"g{g}\" {{\n    require \"task.t{}.exit_code == 0\"\n}}", g % PLAIN_TASKS);
    }
    out
}

fn small_recipe() -> String {
    let mut out = String::from("campaign \"spine-1k\" {\n    seed 7\n}\n");
    plain_tasks(STORED_TASKS, &mut out);
    out
}

/// Run anvil to the end and return how long it took; it must exit 0.
fn timed(store: &Path, args: &[&str]) -> Duration {
    let started = Instant::now();
    let output = Command::new(anvil())
        .env("ANVIL_STORE", store)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("start anvil");
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "anvil {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    elapsed
}

struct Sample {
    label: String,
    times: Vec<Duration>,
}

impl Sample {
    fn measure(label: &str, runs: usize, mut once: impl FnMut() -> Duration) -> Sample {
        let times = (0..runs).map(|_| once()).collect();
        Sample { label: label.to_string(), times }
    }

    fn sorted(&self) -> Vec<Duration> {
        let mut t = self.times.clone();
        t.sort();
        t
    }

    fn median(&self) -> Duration {
        self.sorted()[self.times.len() / 2]
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is a filter we ignore.
    let dir = tempfile::tempdir().expect("temporary directory");
    let big = dir.path().join("spine-10k.kdl");
    let small = dir.path().join("spine-1k.kdl");
    std::fs::write(&big, big_recipe()).expect("write recipe");
    std::fs::write(&small, small_recipe()).expect("write recipe");
    let big_arg = big.to_str().expect("utf-8 path");

    let steps = PLAIN_TASKS + SWEPT_DECLS * SWEEP_VALUES + SERVERS + CELL_DECLS * CELL_SWEEP + GATES;
    println!(
        "spine bench: {steps} steps ({PLAIN_TASKS} tasks, {} swept tasks, {SERVERS} servers, {} cells, {GATES} gates); binary {}",
        SWEPT_DECLS * SWEEP_VALUES,
        CELL_DECLS * CELL_SWEEP,
        anvil().display()
    );

    let empty_store = dir.path().join("empty-store");
    let cold = Sample::measure("plan 10k, empty store", PLAN_RUNS, || {
        timed(&empty_store, &["plan", big_arg, "--json"])
    });

    let warm_store = dir.path().join("warm-store");
    let fill = timed(&warm_store, &["run", small.to_str().expect("utf-8 path"), "-j", "8"]);
    let cached = count_cached(&warm_store, big_arg);
    let warm = Sample::measure(&format!("plan 10k, {cached} stored"), PLAN_RUNS, || {
        timed(&warm_store, &["plan", big_arg, "--json"])
    });

    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/quickstart.kdl");
    let quick_arg = quickstart.to_str().expect("utf-8 path");
    let quick_store = dir.path().join("quickstart-store");
    timed(&quick_store, &["run", quick_arg]);
    let noop =
        Sample::measure("quickstart no-op rerun", STARTUP_RUNS, || timed(&quick_store, &["run", quick_arg]));
    let version = Sample::measure("anvil --version", STARTUP_RUNS, || timed(&quick_store, &["--version"]));

    println!();
    println!("{:<32} {:>5} {:>10} {:>10} {:>10}", "measurement", "runs", "median ms", "min ms", "max ms");
    for sample in [&cold, &warm, &noop, &version] {
        let sorted = sample.sorted();
        println!(
            "{:<32} {:>5} {:>10} {:>10} {:>10}",
            sample.label,
            sample.times.len(),
            ms(sample.median()),
            ms(sorted[0]),
            ms(sorted[sorted.len() - 1])
        );
    }
    println!();
    println!("filling the store: run of the {STORED_TASKS}-task variant took {} ms", ms(fill));
    println!("plan per step (10k, empty store): {:.1} µs", cold.median().as_secs_f64() * 1e6 / steps as f64);
    println!(
        "no-op rerun / --version (medians): {:.2}×",
        noop.median().as_secs_f64() / version.median().as_secs_f64()
    );
}

/// How many of the big recipe's steps the store already holds.
fn count_cached(store: &Path, recipe: &str) -> usize {
    let output = Command::new(anvil())
        .env("ANVIL_STORE", store)
        .args(["plan", recipe, "--json"])
        .output()
        .expect("start anvil");
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).expect("plan --json");
    plan["nodes"]
        .as_array()
        .map_or(0, |nodes| nodes.iter().filter(|n| n["status"] == "cached" && n["kind"] == "task").count())
}
