//! `anvil run --executor slurm` against a real Slurm (scripts/start-slurm.sh:
//! one node, two fake GPUs). Without `sbatch` these tests print a notice and
//! pass, unless `ANVIL_REQUIRE_SLURM=1` (CI), which makes them fail.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use crate::common::Scratch;
use serde_json::Value;

/// The cluster is one node with two CPUs and two GPUs: tests that measure
/// placement must have it to themselves, so Slurm tests run one at a time.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The cluster, when Slurm answers; otherwise a notice (or a failure under
/// ANVIL_REQUIRE_SLURM=1) and None.
fn slurm_or_skip(test: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    let up = Command::new("scontrol")
        .arg("ping")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("sbatch").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success());
    if !up {
        if std::env::var("ANVIL_REQUIRE_SLURM").is_ok_and(|v| v == "1") {
            panic!("{test}: ANVIL_REQUIRE_SLURM=1 but Slurm is not reachable (run scripts/start-slurm.sh)");
        }
        eprintln!(
            "NOTICE: {test} skipped: no Slurm here (run scripts/start-slurm.sh; ANVIL_REQUIRE_SLURM=1 makes this fail)"
        );
        return None;
    }
    Some(CLUSTER.lock().unwrap_or_else(|e| e.into_inner()))
}

/// `scontrol show job -o ID` as key → value.
fn show_job(id: &str) -> BTreeMap<String, String> {
    let out = Command::new("scontrol").args(["show", "job", "-o", id]).output().expect("scontrol");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Every run record in the store, oldest first (workers' records included).
fn run_records(scratch: &Scratch) -> Vec<Value> {
    let mut runs: Vec<Value> = std::fs::read_dir(scratch.store().join("runs"))
        .unwrap()
        .flatten()
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .collect();
    runs.sort_by_key(|r| (r["finished_at"].as_str().unwrap_or("").to_string(), r["run_id"].to_string()));
    runs
}

/// The newest head's run record (it lists its Slurm jobs in `extra.jobs`).
fn head_record(scratch: &Scratch) -> Value {
    run_records(scratch)
        .into_iter()
        .rev()
        .find(|r| r["extra"]["jobs"].is_array())
        .expect("a head's run record")
}

/// The Slurm jobs of the newest head's run.
fn recorded_jobs(scratch: &Scratch) -> Vec<Value> {
    head_record(scratch)["extra"]["jobs"].as_array().cloned().unwrap_or_default()
}

/// Step name → status in the newest head's run record.
fn head_statuses(scratch: &Scratch) -> BTreeMap<String, String> {
    head_record(scratch)["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["name"].as_str().unwrap().to_string(), n["status"].as_str().unwrap().to_string()))
        .collect()
}

/// Every job record in the store (`<store>/jobs/<id>.json`).
fn job_records(store: &Path) -> Vec<Value> {
    let Ok(dir) = std::fs::read_dir(store.join("jobs")) else { return Vec::new() };
    let mut records: Vec<Value> = dir
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".json") && !name.contains(".progress.") && !name.starts_with('.')
        })
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .collect();
    records.sort_by_key(|r| r["job_id"].as_str().unwrap_or("").parse::<u64>().unwrap_or(0));
    records
}

fn decision_labels(scratch: &Scratch, recipe: &Path) -> BTreeMap<String, Value> {
    let plan = scratch.plan(recipe, &[]);
    plan.nodes()
        .iter()
        .filter(|n| n["kind"] == "decision")
        .map(|n| {
            let fp = n["fingerprint"].as_str().unwrap();
            let entry = common::entry_dir(&scratch.store(), fp).join("result.json");
            let result: Value =
                serde_json::from_slice(&std::fs::read(&entry).expect("decision stored")).unwrap();
            (n["name"].as_str().unwrap().to_string(), result["decision_labels"].clone())
        })
        .collect()
}

/// Pids whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
        })
        .collect()
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn quickstart_through_slurm_matches_a_local_run() {
    let Some(_cluster) = slurm_or_skip("quickstart_through_slurm_matches_a_local_run") else { return };
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/recipes/quickstart.kdl")).unwrap();
    let local = Scratch::new();
    let local_recipe = local.write("quickstart.kdl", &text);
    let t = Instant::now();
    local.run(&local_recipe, &[], 0);
    let local_wall = t.elapsed();

    let remote = Scratch::new();
    let recipe = remote.write("quickstart.kdl", &text);
    let t = Instant::now();
    let first = remote.run(&recipe, &["--executor", "slurm"], 0);
    let slurm_wall = t.elapsed();
    eprintln!("quickstart wall time: local {local_wall:.1?}, through slurm {slurm_wall:.1?}");
    assert!(first.summary().ok, "{}", first.transcript());
    let jobs = recorded_jobs(&remote);
    // Two server groups (sim-step4: screen, headline, check; sim-step12: screen) and one task.
    assert_eq!(jobs.len(), 3, "{jobs:#?}\n{}", first.transcript());
    for job in &jobs {
        let id = job["job_id"].as_str().unwrap();
        let shown = show_job(id);
        assert_eq!(shown.get("JobState").map(String::as_str), Some("COMPLETED"), "job {id}: {shown:?}");
    }
    let group4 = jobs.iter().find(|j| j["label"] == "server sim-step4").expect("a job for sim-step4");
    let mut steps: Vec<&str> =
        group4["steps"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    steps.sort();
    assert_eq!(steps, ["headline", "headline-json", "screen-step4"], "one job per server with all its steps");
    // Every job runs from its step documents: cells and checks beside their server's, a task alone.
    let scripts: Vec<String> = std::fs::read_dir(remote.store().join("jobs"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "sh"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    let script_of = |label: &str| scripts.iter().find(|s| s.contains(label)).cloned().unwrap_or_default();
    for label in ["server sim-step12", "server sim-step4", "task environment"] {
        let script = script_of(label);
        assert!(script.contains("--document") && !script.contains("--recipe"), "{label}: {script}");
    }
    assert!(remote.plan(&recipe, &[]).pending().is_empty(), "everything landed in the store");

    // Nothing is submitted again.
    let second = remote.run(&recipe, &["--executor", "slurm"], 0);
    assert_eq!(second.summary().ran, 0, "{}", second.transcript());
    assert!(!second.stderr.contains("submitted"), "{}", second.transcript());
    assert_eq!(job_records(&remote.store()).len(), 3);

    let labels = decision_labels(&local, &local_recipe);
    assert!(!labels.is_empty() && labels.values().all(Value::is_array), "{labels:?}");
    assert_eq!(labels, decision_labels(&remote, &recipe));
    remote.anvil(&["store", "verify"]).expect_code(0);
}

/// Servers whose cells take `seconds` of simulated decoding, with `gpus`.
fn timed_servers(servers: &[(&str, u64, u64)]) -> String {
    let mut text = String::from("campaign \"gpus\" {\n    seed 3\n}\n");
    text.push_str(
        "workload \"w\" {\n    context-tokens 64\n    concurrency 1\n    requests 4\n    max-tokens 20\n    thinking \"off\"\n}\n",
    );
    for (name, gpus, seconds) in servers {
        // 4 requests × 20 tokens = 80 decode steps.
        let step_ms = seconds * 1000 / 80;
        text.push_str(&format!(
            "server \"{name}\" {{\n    engine \"sim\"\n    gpus {gpus}\n    sim {{\n        decode-step-ms {step_ms}\n    }}\n}}\n\
             cell \"cell-{name}\" server=\"{name}\" workload=\"w\"\n"
        ));
    }
    text
}

fn epoch_of(shown: &BTreeMap<String, String>, key: &str) -> i64 {
    let text = shown.get(key).unwrap_or_else(|| panic!("no {key} in {shown:?}"));
    let out = Command::new("date").args(["-d", text, "+%s"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or_else(|_| panic!("{key}={text}"))
}

#[test]
fn tp2_waits_while_two_one_gpu_groups_hold_the_gpus() {
    let Some(_cluster) = slurm_or_skip("tp2_waits_while_two_one_gpu_groups_hold_the_gpus") else { return };
    let scratch = Scratch::new();
    let recipe =
        scratch.write("gpus.kdl", &timed_servers(&[("one-a", 1, 4), ("one-b", 1, 4), ("tp2", 2, 2)]));
    let out = scratch.run(&recipe, &["--executor", "slurm"], 0);
    let jobs = recorded_jobs(&scratch);
    assert_eq!(jobs.len(), 3, "{}", out.transcript());
    let span = |label: &str| {
        let job = jobs.iter().find(|j| j["label"] == format!("server {label}")).expect(label);
        let shown = show_job(job["job_id"].as_str().unwrap());
        assert!(shown.get("TresPerNode").is_some_and(|t| t.contains("gpu")), "{shown:?}");
        (epoch_of(&shown, "StartTime"), epoch_of(&shown, "EndTime"))
    };
    let (a, b, tp2) = (span("one-a"), span("one-b"), span("tp2"));
    eprintln!("one-a {a:?}, one-b {b:?}, tp2 {tp2:?}");
    let overlap = |x: (i64, i64), y: (i64, i64)| x.0 < y.1 && y.0 < x.1;
    assert!(overlap(a, b), "the two 1-GPU groups ran at once: {a:?} {b:?}");
    assert!(!overlap(a, tp2) && !overlap(b, tp2), "TP2 never shared the GPUs: {a:?} {b:?} {tp2:?}");
}

#[test]
fn scancel_of_a_running_job_fails_exactly_its_steps() {
    let Some(_cluster) = slurm_or_skip("scancel_of_a_running_job_fails_exactly_its_steps") else { return };
    let scratch = Scratch::new();
    let recipe = scratch.write("cancel.kdl", &timed_servers(&[("victim", 0, 30), ("survivor", 0, 3)]));
    let head = scratch
        .command()
        .args(["run", "--executor", "slurm", "--keep-going"])
        .arg(&recipe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let store = scratch.store();
    let mut victim = String::new();
    wait_for("the victim's job to run", Duration::from_secs(60), || {
        if let Some(job) = job_records(&store).into_iter().find(|j| j["label"] == "server victim") {
            victim = job["job_id"].as_str().unwrap().to_string();
            return show_job(&victim).get("JobState").is_some_and(|s| s == "RUNNING");
        }
        false
    });
    wait_for("the victim's server to run", Duration::from_secs(30), || {
        !processes_with("decode-step-ms=375").is_empty()
    });
    assert!(Command::new("scancel").arg(&victim).status().unwrap().success());
    let out = head.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let statuses = head_statuses(&scratch);
    assert_eq!(statuses["cell-victim"], "failed", "{statuses:?}\n{stdout}");
    assert_eq!(statuses["cell-survivor"], "ran", "{statuses:?}\n{stdout}");
    assert!(stdout.contains("CANCELLED"), "the failure names the job's end state:\n{stdout}");
    assert_eq!(show_job(&victim).get("JobState").map(String::as_str), Some("CANCELLED"));
    // The victim's server (`anvil sim … decode-step-ms=375`) did not survive its job.
    wait_for("the cancelled job's server to be gone", Duration::from_secs(15), || {
        processes_with("decode-step-ms=375").is_empty()
    });
    scratch.anvil(&["store", "verify"]).expect_code(0);
    // The rerun runs only what failed.
    let rerun = scratch.run(&recipe, &["--executor", "slurm"], 0).summary();
    assert_eq!((rerun.ran, rerun.cached), (1, 1));
}

#[test]
fn a_head_killed_with_sigkill_is_rerun_and_waits_for_its_jobs() {
    let Some(_cluster) = slurm_or_skip("a_head_killed_with_sigkill_is_rerun_and_waits_for_its_jobs") else {
        return;
    };
    let scratch = Scratch::new();
    let recipe = scratch.write("killed.kdl", &timed_servers(&[("slow", 0, 8)]));
    let mut head = scratch
        .command()
        .args(["run", "--executor", "slurm"])
        .arg(&recipe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let store = scratch.store();
    let id = first_job_running(&store);
    head.kill().unwrap(); // SIGKILL
    head.wait().unwrap();
    assert_eq!(
        show_job(&id).get("JobState").map(String::as_str),
        Some("RUNNING"),
        "the job outlives its head"
    );

    let out = scratch.run(&recipe, &["--executor", "slurm"], 0);
    assert!(out.stderr.contains("waiting for it instead of submitting"), "{}", out.transcript());
    assert!(!out.stderr.contains("submitted"), "{}", out.transcript());
    assert_eq!(job_records(&store).len(), 1, "one job in all");
    let summary = out.summary();
    assert_eq!(summary.failed, 0);
    // The cell ran once: exactly one recorded run (the job's worker) says it ran there.
    wait_for("the adopted job to end", Duration::from_secs(30), || {
        show_job(&id).get("JobState").is_some_and(|s| s == "COMPLETED")
    });
    let fp = scratch.plan(&recipe, &[]).fingerprint("cell-slow");
    let workers_ran = run_records(&scratch)
        .iter()
        .filter(|r| {
            r["extra"]["slurm_job"].is_string()
                && r["nodes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n["fingerprint"] == fp.as_str() && n["status"] == "ran")
        })
        .count();
    assert_eq!(workers_ran, 1);
    scratch.anvil(&["store", "verify"]).expect_code(0);
}

const EXECUTOR_BLOCK: &str = r#"
executor "slurm" {
    time-limit "10"
    sbatch-args "--comment=anvil-executor-block"
    cpus 1
}
"#;

#[test]
fn the_executor_block_changes_no_fingerprint() {
    let scratch = Scratch::new();
    let plain = scratch.write("plain.kdl", &timed_servers(&[("s", 0, 1)]));
    let with_block =
        scratch.write("block.kdl", &format!("{}{EXECUTOR_BLOCK}", timed_servers(&[("s", 0, 1)])));
    assert_eq!(scratch.plan(&plain, &[]).fingerprints(), scratch.plan(&with_block, &[]).fingerprints());
    let bad = scratch.write("bad.kdl", "executor \"slurm\" {\n    partitoin \"gpu\"\n}\n");
    let out = scratch.anvil(&["plan", bad.to_str().unwrap()]);
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("unknown executor setting `partitoin`"), "{}", out.stderr);
    assert!(out.stderr.contains("partition"), "a suggestion: {}", out.stderr);
}

#[test]
fn the_executor_block_reaches_sbatch() {
    let Some(_cluster) = slurm_or_skip("the_executor_block_reaches_sbatch") else { return };
    let scratch = Scratch::new();
    let recipe = scratch.write("block.kdl", &format!("{}{EXECUTOR_BLOCK}", timed_servers(&[("s", 0, 1)])));
    scratch.run(&recipe, &["--executor", "slurm"], 0);
    let jobs = recorded_jobs(&scratch);
    assert_eq!(jobs.len(), 1);
    let shown = show_job(jobs[0]["job_id"].as_str().unwrap());
    assert_eq!(shown.get("TimeLimit").map(String::as_str), Some("00:10:00"), "{shown:?}");
    assert_eq!(shown.get("Comment").map(String::as_str), Some("anvil-executor-block"), "{shown:?}");
}

#[test]
fn anvil_cancel_cancels_the_jobs_of_a_run() {
    let Some(_cluster) = slurm_or_skip("anvil_cancel_cancels_the_jobs_of_a_run") else { return };
    let scratch = Scratch::new();
    let recipe = scratch.write("cancel-cmd.kdl", &timed_servers(&[("long", 0, 40)]));
    let head = scratch
        .command()
        .args(["run", "--executor", "slurm"])
        .arg(&recipe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let store = scratch.store();
    let mut job = Value::Null;
    wait_for("the job to run", Duration::from_secs(60), || {
        if let Some(record) = job_records(&store).first() {
            job = record.clone();
            return show_job(job["job_id"].as_str().unwrap()).get("JobState").is_some_and(|s| s == "RUNNING");
        }
        false
    });
    let run_id = job["run_id"].as_str().unwrap();
    let out = scratch.anvil(&["cancel", run_id]).expect_code(0);
    assert!(out.stdout.contains(job["job_id"].as_str().unwrap()), "{}", out.transcript());
    let ended = head.wait_with_output().unwrap();
    assert_eq!(ended.status.code(), Some(1));
    assert_eq!(
        show_job(job["job_id"].as_str().unwrap()).get("JobState").map(String::as_str),
        Some("CANCELLED")
    );
    assert_eq!(head_statuses(&scratch)["cell-long"], "failed");
    // Nothing left to cancel.
    assert!(scratch.anvil(&["cancel", run_id]).expect_code(0).stdout.contains("no job of run"));
}

#[test]
fn ctrl_c_on_the_head_cancels_its_jobs_and_records_an_interrupted_run() {
    let Some(_cluster) = slurm_or_skip("ctrl_c_on_the_head_cancels_its_jobs_and_records_an_interrupted_run")
    else {
        return;
    };
    let scratch = Scratch::new();
    let recipe = scratch.write("interrupt.kdl", &timed_servers(&[("held", 0, 40)]));
    let head = scratch
        .command()
        .args(["run", "--executor", "slurm"])
        .arg(&recipe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let store = scratch.store();
    let id = first_job_running(&store);
    assert!(Command::new("kill").args(["-INT", &head.id().to_string()]).status().unwrap().success());
    let out = head.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    wait_for("the job to be cancelled", Duration::from_secs(20), || {
        show_job(&id).get("JobState").is_some_and(|s| s == "CANCELLED")
    });
    let record = head_record(&scratch);
    assert_eq!(record["status"], "interrupted", "{record:#}");
    assert_eq!(record["extra"]["jobs"][0]["job_id"], id.as_str());
}

/// Wait until the run's first job is RUNNING; its Slurm job id.
fn first_job_running(store: &std::path::Path) -> String {
    let mut id = String::new();
    wait_for("the job to run", Duration::from_secs(60), || {
        if let Some(record) = job_records(store).first() {
            id = record["job_id"].as_str().unwrap().to_string();
            return show_job(&id).get("JobState").is_some_and(|s| s == "RUNNING");
        }
        false
    });
    id
}

#[test]
fn loadgen_workers_reach_the_cells_a_slurm_job_measures() {
    let Some(_cluster) = slurm_or_skip("loadgen_workers_reach_the_cells_a_slurm_job_measures") else {
        return;
    };
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "workers.kdl",
        r#"
server "sim" { model "m"; sim { prefill-tok-s 200000; decode-step-ms 1; max-running-seqs 32; } }
cell "open" server="sim" { context-tokens 32; max-tokens 8; arrival "constant"; rate 200; requests 100; canaries #false; }
"#,
    );
    let run = scratch.run(&recipe, &["--executor", "slurm", "--loadgen-workers", "3"], 0);
    assert!(run.summary().ok, "{}", run.transcript());
    assert_eq!(recorded_jobs(&scratch).len(), 1, "{}", run.transcript());
    let artifact = scratch.stored_json(&recipe, "open", "benchmark.json");
    assert_eq!(artifact["loadgen_workers"], 3, "the job's worker measured with the run's setting");
    assert_eq!(artifact["completed"], 100);
}

/// The issue's case: the recipe moved away after planning, a Slurm job runs
/// a cell from its step document alone, and the recipe's run finds the entry.
#[test]
fn a_slurm_job_runs_a_cell_from_its_document_with_the_recipe_gone() {
    let Some(_cluster) = slurm_or_skip("a_slurm_job_runs_a_cell_from_its_document_with_the_recipe_gone")
    else {
        return;
    };
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "campaign/documents.kdl",
        r#"
campaign "documents-on-slurm" { seed 11; }
server "sim" { engine "sim"; sim { decode-step-ms 2; } }
cell "small" { server "sim"; concurrency 2; requests 10; context-tokens 64; max-tokens 8; }
"#,
    );
    let docs = scratch.path().join("docs");
    scratch.anvil(&["plan", recipe.to_str().unwrap(), "--emit", docs.to_str().unwrap()]).expect_code(0);
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(docs.join("plan.json")).unwrap()).unwrap();
    let cell = plan["steps"].as_array().unwrap().iter().find(|s| s["name"] == "small").unwrap().clone();
    let fingerprint = cell["fingerprint"].as_str().unwrap();
    std::fs::rename(scratch.path().join("campaign"), scratch.path().join("elsewhere")).unwrap();

    let document = docs.join(cell["document"].as_str().unwrap());
    let command = format!(
        "{} --store {} worker --document {}",
        common::anvil_binary().display(),
        scratch.store().display(),
        document.display()
    );
    let out = Command::new("sbatch")
        .args([
            "--wait",
            "--parsable",
            "--output",
            scratch.path().join("job.log").to_str().unwrap(),
            "--wrap",
            &command,
        ])
        .current_dir(scratch.path())
        .output()
        .expect("sbatch");
    let log = std::fs::read_to_string(scratch.path().join("job.log")).unwrap_or_default();
    assert!(out.status.success(), "sbatch: {}\n{log}", String::from_utf8_lossy(&out.stderr));
    assert!(log.contains("small: 10 ok"), "{log}");
    let entry = scratch.store().join("entries").join(&fingerprint[..2]).join(fingerprint);
    assert!(entry.join("benchmark.json").is_file(), "{log}");

    std::fs::rename(scratch.path().join("elsewhere"), scratch.path().join("campaign")).unwrap();
    let run = scratch.run(&recipe, &["--json"], 0).json();
    let small = run["steps"].as_array().unwrap().iter().find(|s| s["name"] == "small").unwrap().clone();
    assert_eq!(small["status"], "cached", "{small}");
}
