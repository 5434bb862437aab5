//! The runner's spine at scale, measured with the release binary:
//!
//! - `anvil plan` of a generated 10,000-step recipe (tasks, swept tasks,
//!   simulated cells and gates) against an empty store, and against a store
//!   that already holds 1,000 of its tasks (stored by a run of a
//!   1,000-task variant of the same recipe);
//! - planning at 10,000, 30,000 and 100,000 steps (the same mix scaled, plus
//!   a screen and a wildcard gate per swept cell family, `cell.c7-*`, and a
//!   decision): time and peak RSS per size, and the ratio to the smallest,
//!   which should grow like the step count;
//! - a no-op rerun of `recipes/quickstart.kdl` (everything cached) next to
//!   `anvil --version`, the floor of starting the process at all.
//!
//! Run: `cargo bench --bench spine` (prints tables; medians of N runs;
//! `SPINE_ANVIL=path/to/anvil` measures another build).

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
const SCALE_RUNS: usize = 3;

/// The binary measured: this build's, or another one named by `SPINE_ANVIL`
/// (to put an older build's numbers next to these).
fn anvil() -> PathBuf {
    std::env::var_os("SPINE_ANVIL").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_anvil")), PathBuf::from)
}

/// Plain tasks in chains of ten (`after` the previous one), so the DAG has depth.
fn plain_tasks(count: usize, out: &mut String) {
    for i in 0..count {
        let after = if i % 10 == 0 { String::new() } else { format!(" after=\"t{}\"", i - 1) };
        let _ = writeln!(out, "task \"t{i}\"{after} {{\n    run \"sh\" \"-c\" \"echo task {i}\"\n}}");
    }
}

fn big_recipe() -> String {
    scaled_recipe(1, false)
}

/// The 10,000-step mix times `scale`; with `wildcards`, a screen and a
/// wildcard gate per cell family and a decision (which reads every verdict)
/// replace as many plain gates.
fn scaled_recipe(scale: usize, wildcards: bool) -> String {
    let (plain, swept, servers, cells) =
        (PLAIN_TASKS * scale, SWEPT_DECLS * scale, SERVERS * scale, CELL_DECLS * scale);
    let mut out = String::from("campaign \"spine\" {\n    seed 7\n}\nparam \"scale\" 3\n");
    plain_tasks(plain, &mut out);
    let values: Vec<String> = (0..SWEEP_VALUES).map(|v| v.to_string()).collect();
    for d in 0..swept {
        let _ = writeln!(
            out,
            "task \"s{d}-{{v}}\" {{\n    sweep \"v\" {}\n    run \"sh\" \"-c\" \"echo swept {d} {{v}} {{scale}}\"\n}}",
            values.join(" ")
        );
    }
    for s in 0..servers {
        let _ = writeln!(
            out,
            "server \"sim{s}\" {{\n    engine \"sim\"\n    model \"m{s}\"\n    sim {{ decode-step-ms {} }}\n}}",
            1 + s
        );
    }
    out.push_str("workload \"w\" {\n    context-tokens 64\n    requests 4\n    max-tokens 16\n}\n");
    let concurrency: Vec<String> = (1..=CELL_SWEEP).map(|c| c.to_string()).collect();
    for c in 0..cells {
        let _ = writeln!(
            out,
            "cell \"c{c}-{{conc}}\" server=\"sim{}\" workload=\"w\" {{\n    sweep \"conc\" {}\n    concurrency \"{{conc}}\"\n}}",
            c % servers,
            concurrency.join(" ")
        );
    }
    let mut gates = GATES * scale;
    if wildcards {
        for c in 0..cells {
            let _ = writeln!(
                out,
                "screen \"best-c{c}\" {{\n    over \"cell.c{c}-*\"\n    metric \"aggregate_tok_s\"\n}}\ngate \"clean-c{c}\" {{\n    require \"max(cell.c{c}-*.failed) == 0\"\n}}"
            );
        }
        out.push_str(
            "decision \"verdict\" {\n    headline \"c0-1\"\n    rule label=\"clean\" when=\"gate.clean-c0.passed\"\n    promote-when \"false\"\n}\n",
        );
        gates -= 2 * cells + 1;
    }
    for g in 0..gates {
        let _ = writeln!(out, "gate \"g{g}\" {{\n    require \"task.t{}.exit_code == 0\"\n}}", g % plain);
    }
    out
}

/// One `anvil plan --json`: wall time, and as GNU time reports them (None
/// without /usr/bin/time) the child's CPU time (user + system; unlike wall
/// time, it does not grow when other work shares the cores) and peak RSS.
struct PlanSample {
    wall: Duration,
    cpu: Option<Duration>,
    peak_bytes: Option<u64>,
}

fn plan_with_peak(store: &Path, recipe: &Path) -> PlanSample {
    let gnu_time = Path::new("/usr/bin/time");
    let mut command = if gnu_time.exists() {
        let mut c = Command::new(gnu_time);
        c.args(["-f", "spine-time %U %S %M"]).arg(anvil());
        c
    } else {
        Command::new(anvil())
    };
    let started = Instant::now();
    let output = command
        .env("ANVIL_STORE", store)
        .arg("plan")
        .arg(recipe)
        .arg("--json")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .expect("start anvil");
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "anvil plan {} failed:\n{stderr}", recipe.display());
    let measured: Option<Vec<f64>> = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("spine-time "))
        .map(|rest| rest.split_whitespace().filter_map(|v| v.parse().ok()).collect());
    match measured.as_deref() {
        Some(&[user, system, kib]) => PlanSample {
            wall: elapsed,
            cpu: Some(Duration::from_secs_f64(user + system)),
            peak_bytes: Some(kib as u64 * 1024),
        },
        _ => PlanSample { wall: elapsed, cpu: None, peak_bytes: None },
    }
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
    // `SPINE_WRITE=DIR` only writes the scaling recipes there (to profile them).
    if let Some(dir) = std::env::var_os("SPINE_WRITE") {
        for scale in [1, 3, 10] {
            let path = Path::new(&dir).join(format!("spine-{}k.kdl", scale * 10));
            std::fs::write(&path, scaled_recipe(scale, true)).expect("write recipe");
            println!("wrote {}", path.display());
        }
        return;
    }
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
    scaling(dir.path());
    println!("plan per step (10k, empty store): {:.1} µs", cold.median().as_secs_f64() * 1e6 / steps as f64);
    println!(
        "no-op rerun / --version (medians): {:.2}×",
        noop.median().as_secs_f64() / version.median().as_secs_f64()
    );
}

/// Planning time and peak memory at 10k, 30k and 100k steps (with
/// wildcard references), each against an empty store; medians of
/// `SCALE_RUNS` per size (`SPINE_RUNS=N` to change).
fn scaling(dir: &Path) {
    let runs: usize = std::env::var("SPINE_RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(SCALE_RUNS);
    let store = dir.join("scale-store");
    let recipes: Vec<(usize, PathBuf)> = [1, 3, 10]
        .into_iter()
        .map(|scale| {
            let recipe = dir.join(format!("spine-{scale}0k.kdl"));
            std::fs::write(&recipe, scaled_recipe(scale, true)).expect("write recipe");
            (10_000 * scale, recipe)
        })
        .collect();
    println!();
    println!(
        "{:<8} {:>4} {:>9} {:>7} {:>9} {:>7} {:>9} {:>7} {:>9}",
        "steps", "runs", "wall ms", "× 10k", "cpu ms", "× 10k", "peak MiB", "× 10k", "cpu µs/st"
    );
    let mut base: Option<(f64, f64, f64)> = None;
    for (steps, recipe) in &recipes {
        let samples: Vec<PlanSample> = (0..runs).map(|_| plan_with_peak(&store, recipe)).collect();
        let median = |mut values: Vec<f64>| {
            values.sort_by(f64::total_cmp);
            values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let wall = median(samples.iter().map(|s| s.wall.as_secs_f64()).collect());
        // NaN when GNU time is missing.
        let cpu = median(samples.iter().filter_map(|s| s.cpu).map(|c| c.as_secs_f64()).collect());
        let peak =
            samples.iter().filter_map(|s| s.peak_bytes).max().map_or(f64::NAN, |b| b as f64 / 1048576.0);
        let (w0, c0, m0) = *base.get_or_insert((wall, cpu, peak));
        println!(
            "{:<8} {:>4} {:>9.1} {:>6.2}× {:>9.1} {:>6.2}× {:>9.1} {:>6.2}× {:>9.1}",
            steps,
            runs,
            wall * 1e3,
            wall / w0,
            cpu * 1e3,
            cpu / c0,
            peak,
            peak / m0,
            cpu * 1e6 / *steps as f64
        );
    }
    println!("(linear: × 10k follows the step count, 3× and 10×)");
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
