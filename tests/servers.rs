//! Server lifecycle, end to end: the real `anvil` binary launches real
//! server processes (shell commands, its own simulated engine, and — when
//! it is built — llama.cpp's `llama-server`), and these tests check what
//! happens around them: readiness failures, crashes mid-cell, Ctrl-C and
//! `kill -9`, GPU assignment, replicas, lazy starts, external endpoints,
//! and the engine templates under `recipes/engines/`.
//!
//! Every test uses its own store, live-server registry and temp directory
//! (see `support_servers::Bench`), and looks in /proc for processes that
//! carry its marker: anvil passes its environment on to the servers, so
//! the test's `ANVIL_SERVER_REGISTRY` path marks every process it started.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common;
use crate::common::Outcome;
use crate::support_servers;
use crate::support_servers::{Bench, alive, finish, processes_marked, wait_until};
use nix::sys::signal::Signal;
use serde_json::Value;

/// A unique string for process command lines.
fn unique_marker(test: &str) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("anvil-servers-test-{test}-{}-{nanos}", std::process::id())
}

fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}

// ---------------------------------------------------------------------------
// 1. A server that never becomes ready
// ---------------------------------------------------------------------------

const NEVER_READY: &str = r#"
campaign "never-ready"
server "stuck" {
    engine "command"
    // $0 of the shell is the marker; `sleep` is its child, not exec'd.
    command "sh" "-c" "echo starting; sleep 600" "MARKER"
    ready http="/health" timeout="2s"
    grace "1s"
}
cell "c" server="stuck" {
    context-tokens 64
    requests 4
    concurrency 2
    max-tokens 16
}
"#;

#[test]
fn a_server_that_never_gets_ready_fails_its_cell_with_the_log_tail_and_leaves_nothing() {
    let bench = Bench::new();
    let marker = unique_marker("never-ready");
    let recipe = bench.recipe("recipe.kdl", &NEVER_READY.replace("MARKER", &marker));

    let child = bench.spawn_run(&recipe, &[]);
    let anvil_pid = child.id();
    // The detector must see the server while it is up, or its "nothing
    // left" below would prove nothing.
    assert!(wait_until(|| !processes_marked(&marker).is_empty()), "the stuck server was never seen running");
    assert!(
        wait_until(|| bench.server_processes(&[anvil_pid]).iter().any(|p| p.cmdline.starts_with("sleep"))),
        "the shell's `sleep` child was never seen: {:#?}",
        bench.server_processes(&[anvil_pid])
    );
    let outcome = finish(child, "run never-ready").expect_code(1);

    let summary = outcome.summary();
    assert_eq!((summary.failed, summary.ran), (1, 0), "{}", outcome.transcript());
    assert!(
        outcome.stdout.contains("FAILED cell `c`"),
        "the failed cell is named:\n{}",
        outcome.transcript()
    );
    assert!(outcome.stdout.contains("stuck"), "the server is named:\n{}", outcome.transcript());
    assert!(
        outcome.stdout.contains("not ready after"),
        "the reason is the readiness timeout:\n{}",
        outcome.transcript()
    );
    assert!(
        outcome.stdout.contains("starting"),
        "the error quotes the server's log tail:\n{}",
        outcome.transcript()
    );

    assert!(processes_marked(&marker).is_empty(), "the shell is left: {:#?}", processes_marked(&marker));
    bench.assert_no_server_left("after a readiness timeout");
    assert!(bench.registry_records().is_empty(), "registry records are left: {:?}", bench.registry_records());
    assert_eq!(bench.plan(&recipe, &[]).statuses()["c"], "pending", "a failure is not stored");
}

#[test]
fn a_recipe_named_without_a_directory_launches_its_servers() {
    let bench = Bench::new();
    let recipe = bench.recipe(
        "bare.kdl",
        r#"
server "s" {
    engine "command"
    command "sh" "-c" "exec ANVIL_BIN sim --port {port}"
    ready http="/health" timeout="30s"
}
cell "c" server="s" { context-tokens 64; requests 2; concurrency 1; max-tokens 8; }
"#,
    );
    assert!(recipe.exists());
    // Relative to the current directory (the scratch dir), as a user types it.
    let outcome = bench.anvil(&["run", "bare.kdl"]);
    let outcome = outcome.expect_code(0);
    assert_eq!(outcome.summary().ran, 1);
}

// ---------------------------------------------------------------------------
// 2. A server that crashes mid-cell
// ---------------------------------------------------------------------------

const CRASHY: &str = r#"
campaign "crashy"
server "crashy" {
    engine "command"
    command "ANVIL_BIN" "sim" "--port" "{port}" "--set" "faults.exit-after-requests=5"
    ready http="/health" timeout="30s"
}
cell "c" server="crashy" {
    context-tokens 64
    requests 20
    concurrency 2
    max-tokens 16
}
task "independent" {
    run "sh" "-c" "echo independent >> ran.log"
}
"#;

#[test]
fn a_server_crash_mid_cell_fails_the_cell_and_keep_going_runs_the_rest() {
    let bench = Bench::new();
    let recipe = bench.recipe("recipe.kdl", CRASHY);

    // One step at a time: the cell (declared first) runs first; without
    // --keep-going its failure stops the independent task.
    let stopped = bench.run(&recipe, &["-j", "1"], 1);
    assert!(
        stopped.stdout.contains("server `crashy` died during the cell"),
        "the reason names the server and the crash:\n{}",
        stopped.transcript()
    );
    let statuses = bench.scratch.last_run_statuses();
    assert_eq!(statuses["c"], "failed");
    assert_eq!(statuses["independent"], "skipped", "without --keep-going the rest stops: {statuses:?}");
    assert_eq!(bench.scratch.read("ran.log"), "");
    bench.assert_no_server_left("after the crash");

    let going = bench.run(&recipe, &["-j", "1", "--keep-going"], 1);
    let summary = going.summary();
    assert_eq!((summary.ran, summary.failed), (1, 1), "{}", going.transcript());
    assert!(
        going.stdout.contains("FAILED cell `c`: server `crashy` died during the cell"),
        "{}",
        going.transcript()
    );
    let statuses = bench.scratch.last_run_statuses();
    assert_eq!(statuses["c"], "failed");
    assert_eq!(statuses["independent"], "ran", "--keep-going runs the independent task: {statuses:?}");
    assert_eq!(bench.scratch.read("ran.log"), "independent\n");

    // The crash's evidence (exit status, log tail) is kept in the run record.
    let runs = std::fs::read_dir(bench.store().join("runs"))
        .expect("runs dir")
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<Vec<_>>();
    assert!(
        runs.iter().any(|r| r.contains("exited during the step")),
        "a run record holds the crash detail: {runs:?}"
    );

    bench.assert_no_server_left("after --keep-going");
    bench.verify_store();
    let plan = bench.plan(&recipe, &[]);
    assert_eq!(plan.statuses()["c"], "pending", "the failed cell is not stored");
    assert_eq!(plan.statuses()["independent"], "cached");
}

// ---------------------------------------------------------------------------
// 3. Ctrl-C and kill -9 during a cell
// ---------------------------------------------------------------------------

/// A slow simulated server behind a shell that forks a `sleep` first: the
/// `sleep` is a grandchild of anvil that PDEATHSIG does not cover. The cell
/// takes several seconds (4 rounds of 64 tokens at 25 ms per step).
const LONG_CELL: &str = r#"
campaign "long"
server "slow" {
    engine "command"
    command "sh" "-c" "sleep 1000 & exec ANVIL_BIN sim --port {port} --set decode-step-ms=25"
    ready http="/health" timeout="30s"
    grace "2s"
}
cell "long" server="slow" {
    context-tokens 64
    requests 8
    concurrency 2
    max-tokens 64
}
"#;

/// Wait until the server of a background run is serving the cell's
/// requests; returns the server's pid (the registry record's).
fn wait_for_cell_in_flight(bench: &Bench) -> u32 {
    let mut server_pid = 0;
    let in_flight = wait_until(|| {
        let Some(record) = bench.registry_records().into_iter().next() else { return false };
        server_pid = record["pid"].as_u64().unwrap_or(0) as u32;
        let port = record["port"].as_u64().unwrap_or(0) as u16;
        support_servers::http_get(port, "/metrics")
            .and_then(|(_, page)| support_servers::prometheus_value(&page, "vllm:num_requests_running"))
            .is_some_and(|running| running > 0.0)
    });
    assert!(in_flight, "the cell never had requests in flight; registry: {:?}", bench.registry_records());
    server_pid
}

#[test]
fn ctrl_c_during_a_cell_stops_every_server_process_before_anvil_exits() {
    let bench = Bench::new();
    let recipe = bench.recipe("recipe.kdl", LONG_CELL);

    let child = bench.spawn_run(&recipe, &[]);
    let anvil_pid = child.id();
    let server_pid = wait_for_cell_in_flight(&bench);
    let before = bench.server_processes(&[anvil_pid]);
    assert!(before.iter().any(|p| p.cmdline.starts_with("sleep 1000")), "the grandchild runs: {before:#?}");

    support_servers::signal(anvil_pid, Signal::SIGINT);
    let outcome = finish(child, "run (interrupted)");
    assert_ne!(outcome.code, Some(0), "an interrupted run does not succeed:\n{}", outcome.transcript());
    // Immediately after exit: the server, its grandchild, everything.
    assert!(!alive(server_pid), "the server (pid {server_pid}) outlived anvil");
    bench.assert_no_server_left("right after Ctrl-C");
    assert!(bench.registry_records().is_empty(), "registry records left: {:?}", bench.registry_records());

    bench.verify_store();
    let rerun = bench.run(&recipe, &[], 0);
    assert_eq!(rerun.summary().ran, 1, "the rerun completes the cell:\n{}", rerun.transcript());
    bench.assert_no_server_left("after the rerun");
}

#[test]
fn ctrl_c_exits_130_and_says_it_was_interrupted() {
    let bench = Bench::new();
    let recipe = bench.recipe("recipe.kdl", LONG_CELL);
    let child = bench.spawn_run(&recipe, &[]);
    let anvil_pid = child.id();
    wait_for_cell_in_flight(&bench);
    support_servers::signal(anvil_pid, Signal::SIGINT);
    let outcome = finish(child, "run (interrupted)");
    assert_eq!(outcome.code, Some(130), "{}", outcome.transcript());
    assert!(
        !outcome.stdout.contains("died during the cell"),
        "an interruption is not a crash:\n{}",
        outcome.transcript()
    );
}

#[test]
fn kill_9_of_anvil_kills_the_server_and_the_next_anvil_reaps_its_grandchild() {
    let bench = Bench::new();
    let recipe = bench.recipe("recipe.kdl", LONG_CELL);

    let mut child = bench.spawn_run(&recipe, &[]);
    let anvil_pid = child.id();
    let server_pid = wait_for_cell_in_flight(&bench);
    let grandchildren: Vec<u32> = bench
        .server_processes(&[anvil_pid])
        .into_iter()
        .filter(|p| p.cmdline.starts_with("sleep 1000"))
        .map(|p| p.pid)
        .collect();
    assert_eq!(
        grandchildren.len(),
        1,
        "one `sleep 1000` grandchild: {:#?}",
        bench.server_processes(&[anvil_pid])
    );

    support_servers::signal(anvil_pid, Signal::SIGKILL);
    let status = child.wait().expect("wait for the killed anvil");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    // The direct child dies with anvil (PR_SET_PDEATHSIG).
    assert!(wait_until(|| !alive(server_pid)), "the server (pid {server_pid}) survived anvil's kill -9");
    let grandchild_survived = grandchildren.iter().any(|&pid| alive(pid));
    eprintln!(
        "after kill -9: server gone; grandchild `sleep 1000` alive: {grandchild_survived} (PDEATHSIG does not reach it)"
    );
    assert!(!bench.registry_records().is_empty(), "the registry still records the server for the reaper");

    // The next anvil, of any recipe, sharing the registry, reaps what is left.
    let other = bench.recipe("other.kdl", "task \"hello\" { run \"true\"; }\n");
    let next = bench.run(&other, &[], 0);
    if grandchild_survived {
        assert!(
            next.stderr.contains("orphaned server"),
            "the reaper says what it stopped:\n{}",
            next.transcript()
        );
    }
    assert!(
        wait_until(|| grandchildren.iter().all(|&pid| !alive(pid))),
        "the grandchild survived the next anvil's reaper"
    );
    bench.assert_no_server_left("after the reaper");
    assert!(
        bench.registry_records().is_empty(),
        "the reaper clears the record: {:?}",
        bench.registry_records()
    );

    bench.verify_store();
    let rerun = bench.run(&recipe, &[], 0);
    assert_eq!(rerun.summary().ran, 1, "the rerun completes the cell:\n{}", rerun.transcript());
    bench.assert_no_server_left("after the rerun");
}

// ---------------------------------------------------------------------------
// 4. GPUs: disjoint ids in parallel, waiting, impossible requests
// ---------------------------------------------------------------------------

/// Two one-GPU servers that print what they were given, one cell each.
/// Each cell takes a few seconds (3 rounds of 32 tokens at 40 ms a step).
/// The servers' commands differ (SERVER=…): identical declarations would
/// give both cells one fingerprint, and the second would reuse the first.
const TWO_GPU_SERVERS: &str = r#"
campaign "gpus"
server "a" {
    engine "command"
    gpus 1
    command "sh" "-c" "echo CUDA=$CUDA_VISIBLE_DEVICES GPUS={gpus} SERVER=a; exec ANVIL_BIN sim --port {port} --set decode-step-ms=40"
    ready http="/health" timeout="30s"
}
server "b" {
    engine "command"
    gpus 1
    command "sh" "-c" "echo CUDA=$CUDA_VISIBLE_DEVICES GPUS={gpus} SERVER=b; exec ANVIL_BIN sim --port {port} --set decode-step-ms=40"
    ready http="/health" timeout="30s"
}
cell "on-a" server="a" { context-tokens 64; requests 6; concurrency 2; max-tokens 32; }
cell "on-b" server="b" { context-tokens 64; requests 6; concurrency 2; max-tokens 32; }
"#;

/// The `CUDA=… GPUS=…` line of a stored cell's `server-0.log` (not always
/// the first: stdout and stderr reach the log through separate pipes).
fn gpu_line(bench: &Bench, plan: &common::Plan, cell: &str) -> (String, String) {
    let log = std::fs::read_to_string(bench.entry(plan, cell).join("server-0.log"))
        .expect("server-0.log is stored with the cell");
    let line = log
        .lines()
        .find(|l| l.starts_with("CUDA="))
        .unwrap_or_else(|| panic!("{cell}: no CUDA= line in server-0.log:\n{log}"))
        .to_string();
    let mut cuda = String::new();
    let mut gpus = String::new();
    for word in line.split_whitespace() {
        if let Some(v) = word.strip_prefix("CUDA=") {
            cuda = v.to_string();
        } else if let Some(v) = word.strip_prefix("GPUS=") {
            gpus = v.to_string();
        }
    }
    (cuda, gpus)
}

/// The measured span of a stored cell, in unix nanoseconds.
fn cell_span(bench: &Bench, plan: &common::Plan, cell: &str) -> (u128, u128) {
    let artifact = bench.benchmark(plan, cell);
    let ns = |key: &str| {
        artifact[key].as_u64().map(u128::from).or_else(|| artifact[key].as_str().and_then(|s| s.parse().ok()))
    };
    let span = (ns("started_at_unix_ns"), ns("finished_at_unix_ns"));
    match span {
        (Some(start), Some(end)) if start < end => (start, end),
        _ => panic!("{cell}: no measured span in benchmark.json: {span:?}"),
    }
}

#[test]
fn two_one_gpu_servers_get_disjoint_ids_and_run_at_the_same_time() {
    let bench = Bench::new();
    let recipe = bench.recipe("recipe.kdl", TWO_GPU_SERVERS);
    let outcome = bench.run(&recipe, &["--gpus", "0,1", "-j", "2"], 0);
    assert_eq!(outcome.summary().ran, 2, "{}", outcome.transcript());

    let plan = bench.plan(&recipe, &[]);
    let (cuda_a, gpus_a) = gpu_line(&bench, &plan, "on-a");
    let (cuda_b, gpus_b) = gpu_line(&bench, &plan, "on-b");
    assert_eq!(cuda_a, gpus_a, "CUDA_VISIBLE_DEVICES and {{gpus}} agree for a");
    assert_eq!(cuda_b, gpus_b, "CUDA_VISIBLE_DEVICES and {{gpus}} agree for b");
    for id in [&cuda_a, &cuda_b] {
        assert!(id == "0" || id == "1", "one id from the pool, got {id:?}");
    }
    assert_ne!(cuda_a, cuda_b, "the two servers share a GPU");

    let (a_start, a_end) = cell_span(&bench, &plan, "on-a");
    let (b_start, b_end) = cell_span(&bench, &plan, "on-b");
    assert!(
        a_start < b_end && b_start < a_end,
        "with -j 2 on disjoint GPUs the two cells overlap: a {a_start}..{a_end}, b {b_start}..{b_end}"
    );
    bench.assert_no_server_left("after the run");
}

#[test]
fn a_server_waits_for_a_busy_gpu_instead_of_sharing_it() {
    let bench = Bench::new();
    let recipe = bench.recipe("recipe.kdl", TWO_GPU_SERVERS);
    let outcome = bench.run(&recipe, &["--gpus", "0", "-j", "2"], 0);
    assert_eq!(outcome.summary().ran, 2, "{}", outcome.transcript());

    let plan = bench.plan(&recipe, &[]);
    assert_eq!(gpu_line(&bench, &plan, "on-a"), ("0".into(), "0".into()));
    assert_eq!(gpu_line(&bench, &plan, "on-b"), ("0".into(), "0".into()));
    let (a_start, a_end) = cell_span(&bench, &plan, "on-a");
    let (b_start, b_end) = cell_span(&bench, &plan, "on-b");
    assert!(
        a_end <= b_start || b_end <= a_start,
        "one GPU: the second server waits, the cells do not overlap: a {a_start}..{a_end}, b {b_start}..{b_end}"
    );
}

#[test]
fn a_server_needing_more_gpus_than_the_pool_has_fails_at_once_without_launching() {
    let bench = Bench::new();
    let launches = bench.path().join("launches.log");
    let recipe = bench.recipe(
        "recipe.kdl",
        &r#"
server "big" {
    engine "command"
    gpus 2
    command "sh" "-c" "echo big >> LAUNCHES; exec ANVIL_BIN sim --port {port}"
    ready http="/health" timeout="30s"
}
cell "c" server="big" { context-tokens 64; requests 2; concurrency 1; max-tokens 8; }
"#
        .replace("LAUNCHES", &launches.display().to_string()),
    );
    // A hang here would run into the command limit and fail the test.
    let outcome = bench.run(&recipe, &["--gpus", "0"], 1);
    assert!(outcome.stdout.contains("FAILED cell `c`"), "{}", outcome.transcript());
    assert!(
        outcome.stdout.contains("asked for 2 GPUs but the pool only has 1"),
        "the reason says what was asked and what exists:\n{}",
        outcome.transcript()
    );
    assert!(!launches.exists(), "the server was launched anyway");
    bench.assert_no_server_left("after the refusal");
}

// ---------------------------------------------------------------------------
// 5. Replicas
// ---------------------------------------------------------------------------

#[test]
fn replicas_get_a_per_target_breakdown_that_adds_up_and_one_log_each() {
    let bench = Bench::new();
    let recipe = bench.recipe(
        "recipe.kdl",
        r#"
server "pair" {
    engine "sim"
    replicas 2
    sim { decode-step-ms 5; }
}
cell "both" server="pair" { context-tokens 64; requests 8; concurrency 4; max-tokens 16; }
"#,
    );
    bench.run(&recipe, &[], 0);
    let plan = bench.plan(&recipe, &[]);
    let artifact = bench.benchmark(&plan, "both");

    let per_target = artifact["per_target"].as_array().expect("per_target is a list");
    assert_eq!(per_target.len(), 2, "one row per replica: {per_target:#?}");
    let labels: Vec<&str> = per_target.iter().map(|t| str_of(t, "label")).collect();
    assert_ne!(labels[0], labels[1], "distinct replicas: {labels:?}");
    for row in per_target {
        assert!(row["completed"].as_u64().unwrap_or(0) > 0, "every replica served requests: {row}");
    }
    let completed: u64 = per_target.iter().map(|t| t["completed"].as_u64().unwrap_or(0)).sum();
    assert_eq!(Some(completed), artifact["completed"].as_u64(), "per-replica completions add up");
    let sum: f64 = per_target.iter().map(|t| t["throughput_tok_s"].as_f64().unwrap_or(f64::NAN)).sum();
    let aggregate = artifact["metrics"]["throughput_tok_s"].as_f64().expect("aggregate throughput");
    assert!(aggregate > 0.0);
    assert!(
        (sum - aggregate).abs() <= 1e-9 * aggregate,
        "per-replica throughputs {sum} add up to the aggregate {aggregate}"
    );

    let entry = bench.entry(&plan, "both");
    let ports: Vec<String> = ["server-0.log", "server-1.log"]
        .iter()
        .map(|name| {
            let log =
                std::fs::read_to_string(entry.join(name)).unwrap_or_else(|e| panic!("{name} is stored: {e}"));
            log.split("127.0.0.1:")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(!ports[0].is_empty() && ports[0] != ports[1], "two processes on two ports: {ports:?}");
}

// ---------------------------------------------------------------------------
// 6. Lazy start
// ---------------------------------------------------------------------------

/// Two servers that append their name to LAUNCHES when they start.
const LAZY: &str = r#"
campaign "lazy"
server "s1" {
    engine "command"
    command "sh" "-c" "echo s1 >> LAUNCHES; exec ANVIL_BIN sim --port {port}"
    ready http="/health" timeout="30s"
}
server "s2" {
    engine "command"
    command "sh" "-c" "echo s2 >> LAUNCHES; exec ANVIL_BIN sim --port {port}"
    ready http="/health" timeout="30s"
}
cell "c1" server="s1" { context-tokens 64; requests 2; concurrency 1; max-tokens 8; }
cell "c2" server="s2" { context-tokens 64; requests 2; concurrency 1; max-tokens 8; }
"#;

#[test]
fn servers_start_only_for_cells_that_are_not_stored() {
    let bench = Bench::new();
    let launches = bench.path().join("launches.log");
    let recipe = bench.recipe("recipe.kdl", &LAZY.replace("LAUNCHES", &launches.display().to_string()));
    let launched = || std::fs::read_to_string(&launches).unwrap_or_default();

    bench.run(&recipe, &["--only", "c1"], 0);
    assert_eq!(launched(), "s1\n", "--only c1 starts only s1");
    let statuses = bench.plan(&recipe, &[]).statuses();
    assert_eq!((statuses["s1"].as_str(), statuses["s2"].as_str()), ("cached", "pending"), "{statuses:?}");

    // s2 must start for c2; s1 serves only a stored cell and must not.
    let summary = bench.run(&recipe, &[], 0).summary();
    assert_eq!((summary.ran, summary.cached), (1, 1));
    assert_eq!(launched(), "s1\ns2\n", "s1, whose only cell is stored, was launched again");

    // Everything stored: no server starts, no server log is written.
    let statuses = bench.plan(&recipe, &[]).statuses();
    assert!(statuses.values().all(|s| s == "cached"), "{statuses:?}");
    let logs_before = bench.live_logs();
    let summary = bench.run(&recipe, &[], 0).summary();
    assert_eq!((summary.ran, summary.cached), (0, 2));
    assert_eq!(launched(), "s1\ns2\n", "a fully stored rerun started a server");
    assert_eq!(bench.live_logs(), logs_before, "a fully stored rerun wrote a server log");
    bench.assert_no_server_left("after the runs");
}

// ---------------------------------------------------------------------------
// 7. External endpoint
// ---------------------------------------------------------------------------

#[test]
fn an_external_endpoint_gets_the_api_key_and_the_store_never_sees_it() {
    let key = unique_marker("secret-key");
    let bench = Bench::new().with_env("ANVIL_TEST_KEY", &key);
    let (_sim, sim_port) = support_servers::start_sim(&[]);
    let proxy = support_servers::RecordingProxy::start(sim_port);
    let recipe = bench.recipe(
        "recipe.kdl",
        &r#"
server "ext" {
    url "http://127.0.0.1:PORT"
    api-key-env "ANVIL_TEST_KEY"
    model "test-model"
}
cell "c" server="ext" { context-tokens 64; requests 4; concurrency 2; max-tokens 16; }
"#
        .replace("PORT", &proxy.port.to_string()),
    );

    let outcome = bench.run(&recipe, &[], 0);
    assert_eq!(outcome.summary().ran, 1, "{}", outcome.transcript());
    assert!(
        bench.live_logs().is_empty(),
        "anvil launched something for an external server: {:?}",
        bench.live_logs()
    );

    let heads = proxy.heads();
    let with_key = heads
        .iter()
        .filter(|h| {
            h.to_ascii_lowercase().contains(&format!("authorization: bearer {}", key.to_ascii_lowercase()))
        })
        .count();
    assert!(with_key > 0, "no request carried the key; heads seen: {heads:#?}");

    let files = support_servers::file_count(&bench.store());
    assert!(files > 3, "the store holds the cell ({files} files)");
    let leaks = support_servers::files_containing(&bench.store(), &key);
    assert!(leaks.is_empty(), "the API key was written to: {leaks:?}");
    let plan = bench.plan(&recipe, &[]);
    let artifact = bench.benchmark(&plan, "c");
    assert_eq!(artifact["completed"].as_u64(), Some(4));
}

// ---------------------------------------------------------------------------
// 8. A real engine: llama.cpp's llama-server with SmolLM2-135M
// ---------------------------------------------------------------------------

/// LLAMA_SERVER and SMOLLM2_GGUF, or None (with the reason printed).
fn llama_env() -> Option<(String, String)> {
    match (std::env::var("LLAMA_SERVER"), std::env::var("SMOLLM2_GGUF")) {
        (Ok(server), Ok(gguf)) if Path::new(&server).exists() && Path::new(&gguf).exists() => {
            Some((server, gguf))
        }
        _ => {
            eprintln!(
                "skipped: set LLAMA_SERVER and SMOLLM2_GGUF to existing files (eval \"$(scripts/llama-server.sh --print-env)\")"
            );
            None
        }
    }
}

/// One run of the llama.cpp recipe, shared by the tests below (each
/// llama.cpp run takes a minute or more on 2 CPU cores).
struct LlamaRun {
    bench: Bench,
    recipe: PathBuf,
    sets: Vec<String>,
    plan: common::Plan,
    cells: Vec<String>,
    outcome: common::Outcome,
}

impl LlamaRun {
    fn sets(&self) -> Vec<&str> {
        self.sets.iter().map(String::as_str).collect()
    }
}

static LLAMA_RUN: std::sync::OnceLock<Option<LlamaRun>> = std::sync::OnceLock::new();

fn llama_run() -> Option<&'static LlamaRun> {
    LLAMA_RUN
        .get_or_init(|| {
            let (server, gguf) = llama_env()?;
            let bench = Bench::new();
            let recipe = repo_path("recipes/llama-cpp-smollm2.kdl");
            let sets = vec![
                "--set".to_string(),
                format!("llama_server={server}"),
                "--set".to_string(),
                format!("smollm2_gguf={gguf}"),
            ];
            let set_refs: Vec<&str> = sets.iter().map(String::as_str).collect();
            let plan = bench.plan(&recipe, &set_refs);
            let cells: Vec<String> = plan
                .nodes()
                .iter()
                .filter(|n| n["kind"] == "cell")
                .map(|n| str_of(n, "name").to_string())
                .collect();
            let mut args = vec!["run", recipe.to_str().expect("utf-8 path")];
            args.extend_from_slice(&set_refs);
            let outcome = bench.anvil(&args);
            eprintln!("{}", outcome.transcript());
            Some(LlamaRun { bench, recipe, sets, plan, cells, outcome })
        })
        .as_ref()
}

#[test]
fn llama_server_serves_two_cells_from_one_warm_launch_and_leaves_nothing() {
    let Some(run) = llama_run() else { return };
    let bench = &run.bench;
    assert_eq!(run.cells.len(), 2, "two cells: {:?}", run.cells);
    let summary = run.outcome.summary();
    assert_eq!(summary.failed, 0, "no step failed:\n{}", run.outcome.transcript());
    assert!(summary.ran >= 2, "both cells ran:\n{}", run.outcome.transcript());
    // The run's log folder went with it (each cell keeps its copy of the log).
    assert!(bench.live_logs().is_empty(), "log folders left behind: {:?}", bench.live_logs());
    bench.assert_no_server_left("after the llama.cpp run");

    let mut logs = Vec::new();
    for cell in &run.cells {
        let artifact = bench.benchmark(&run.plan, cell);
        let entry = bench.entry(&run.plan, cell);
        let requests = artifact["requests"].as_u64().unwrap_or(0);
        let completed = artifact["completed"].as_u64().unwrap_or(0);
        assert!(completed > 0, "{cell}: requests completed");
        assert_eq!(artifact["simulated"], false, "{cell}");
        assert_eq!(str_of(&artifact, "engine"), "llama-server", "{cell}");
        // The real engine's artifact carries every reference field and
        // follows the protocol's identities, like the sim's.
        assert_eq!(
            common::protocol::assert_follows_reference(&artifact, cell) as u64,
            completed,
            "{cell}: every completed record checked"
        );
        let sources = &artifact["metrics"]["output_token_sources"];
        assert_eq!(
            sources["usage"].as_u64(),
            Some(completed),
            "{cell}: output tokens come from usage: {sources}"
        );
        for timing in artifact["request_timings"].as_array().expect("request_timings") {
            if timing["performance_eligible"] == true {
                assert_eq!(timing["output_token_source"], "usage", "{cell}: {timing}");
                assert!(
                    timing["prompt_tokens"].as_u64().is_some_and(|t| t > 64),
                    "{cell}: real prompt_tokens from usage: {timing}"
                );
                // SmolLM2 never does this on its own: the KDL-escaped grammar reached the engine.
                assert_eq!(
                    timing["request_canary"]["marker_at_start"], true,
                    "{cell}: the grammar forced the marker: {timing}"
                );
                assert_eq!(
                    timing["receive_clock"], "kernel",
                    "{cell}: reads stamped by the kernel: {timing}"
                );
            }
        }
        assert_eq!(
            artifact["server_warmup"]["requests_per_replica"].as_u64(),
            Some(2),
            "{cell}: warmup recorded: {}",
            artifact["server_warmup"]
        );
        let result = support_servers::read_json(&entry.join("result.json"));
        eprintln!(
            "llama.cpp SmolLM2-135M cell `{cell}`: {completed}/{requests} completed, concurrency {}, prompt tokens mean {:.0}, ttft p50 {:.1} ms, ttft p99 {:.1} ms, decode mean {:.1} tok/s, aggregate {:.1} tok/s, wall {:.0} ms, server startup {} ms, warmup {} ms",
            artifact["concurrency"],
            artifact["metrics"]["prompt_tokens"].as_f64().unwrap_or(0.0) / completed.max(1) as f64,
            result["ttft_p50_ms"].as_f64().unwrap_or(f64::NAN),
            result["ttft_p99_ms"].as_f64().unwrap_or(f64::NAN),
            result["decode_tok_s_mean"].as_f64().unwrap_or(f64::NAN),
            result["aggregate_tok_s"].as_f64().unwrap_or(f64::NAN),
            result["wall_clock_ms"].as_f64().unwrap_or(f64::NAN),
            artifact["server_startup_ms"],
            artifact["server_warmup"]["duration_ms"],
        );
        logs.push(std::fs::read_to_string(entry.join("server-0.log")).expect("server-0.log stored"));
    }
    // Both cells copied the same, growing log: the shorter is the start of the longer.
    logs.sort_by_key(String::len);
    assert!(logs[1].starts_with(&logs[0]), "the two cells ran on one server (one log)");

    // Rerun: the cells are stored, so the server is never launched.
    let plan = bench.plan(&run.recipe, &run.sets());
    for cell in &run.cells {
        assert_eq!(plan.statuses()[cell], "cached", "{cell}");
    }
    let server = plan.nodes().iter().find(|n| n["kind"] == "server").expect("a server");
    assert_eq!(server["status"], "cached", "the server will not start: {server}");
    let mut args = vec!["run", run.recipe.to_str().expect("utf-8 path")];
    args.extend(run.sets());
    let rerun = bench.anvil(&args);
    assert_eq!(rerun.summary().failed, 0, "{}", rerun.transcript());
    assert_eq!(rerun.summary().ran, 0, "the rerun measured nothing: {}", rerun.transcript());
    assert!(bench.live_logs().is_empty(), "log folders left behind: {:?}", bench.live_logs());
    bench.assert_no_server_left("after the rerun");
}

#[test]
fn llama_server_cells_complete_every_request_and_pass_the_gate() {
    let Some(run) = llama_run() else { return };
    for cell in &run.cells {
        let artifact = run.bench.benchmark(&run.plan, cell);
        let requests = artifact["requests"].as_u64().unwrap_or(0);
        assert_eq!(
            artifact["completed"].as_u64(),
            Some(requests),
            "{cell}: every request completed; failures: {}",
            artifact["failures"]
        );
        assert_eq!(
            artifact["metrics"]["request_canary_passed"].as_u64(),
            Some(requests),
            "{cell}: every canary passed"
        );
    }
    assert_eq!(run.outcome.code, Some(0), "the gate passes:\n{}", run.outcome.transcript());
}

// ---------------------------------------------------------------------------
// 9. Engine templates
// ---------------------------------------------------------------------------

/// `anvil plan` accepts the template as written, and `anvil run --sim`
/// runs every cell in it on the servers' simulated twins.
fn check_engine_template(name: &str, engine: &str) {
    let bench = Bench::new();
    let recipe = repo_path(&format!("recipes/engines/{name}.kdl"));
    // Planned as twins: as declared, a template names weights this machine
    // lacks, and the plan refuses a missing file (tests/broken_inputs.rs).
    let plan = bench.plan(&recipe, &["--sim"]);
    assert!(plan.nodes().iter().any(|n| n["kind"] == "server"), "{name}: the template has a server");
    let cells: Vec<String> =
        plan.nodes().iter().filter(|n| n["kind"] == "cell").map(|n| str_of(n, "name").to_string()).collect();
    assert!(!cells.is_empty(), "{name}: the template has a cell");

    let outcome = bench.run(&recipe, &["--sim"], 0);
    assert_eq!(outcome.summary().ran, cells.len(), "{name}:\n{}", outcome.transcript());
    for cell in &cells {
        let artifact = bench.benchmark(&plan, cell);
        assert_eq!(artifact["simulated"], true, "{name}/{cell}: labelled simulated");
        assert_eq!(
            artifact["serve_flags"]["simulated_twin_of"], engine,
            "{name}/{cell}: says whose twin it is"
        );
        assert_eq!(artifact["completed"], artifact["requests"], "{name}/{cell}: all requests completed");
        assert_eq!(
            artifact["metrics"]["request_canary_passed"], artifact["requests"],
            "{name}/{cell}: canaries pass"
        );
    }
    bench.assert_no_server_left(name);
}

#[test]
fn the_sglang_template_plans_and_runs_on_its_twin() {
    check_engine_template("sglang", "sglang");
}

#[test]
fn the_vllm_template_plans_and_runs_on_its_twin() {
    check_engine_template("vllm", "vllm");
}

#[test]
fn the_llama_cpp_template_plans_and_runs_on_its_twin() {
    check_engine_template("llama-cpp", "llama.cpp");
}

// ---------------------------------------------------------------------------
// A server that goes silent mid-cell (`stall-timeout`)
// ---------------------------------------------------------------------------

/// The stall test on one server (`command`: its launch line, holding
/// `marker`): the first cell fails as stalled once the server is frozen,
/// the frozen process is killed, and the second cell runs on a fresh one.
fn stall_and_restart(bench: &Bench, server: &str, marker: &str, metric: &str, stall_s: u64) -> Outcome {
    let recipe = bench.recipe(
        "recipe.kdl",
        &format!(
            r#"
{server}
cell "frozen" server="s" {{
    context-tokens 32
    requests 5000
    concurrency 2
    max-tokens 16
    canaries #false
    stall-timeout "{stall_s}s"
}}
cell "after-restart" server="s" {{
    context-tokens 32
    requests 4
    max-tokens 16
    canaries #false
}}
"#
        ),
    );
    let run = bench.spawn_run(&recipe, &["-j", "1", "--keep-going", "--json"]);
    // Replies are 16 tokens: 64 is the length probe's and a few measured
    // requests' (a server counts a reply's tokens when it ends).
    let frozen = support_servers::freeze_once_serving(marker, metric, 64.0, Duration::from_secs(180));
    let outcome = finish(run, "run").expect_code(1);
    let transcript = outcome.transcript();
    let statuses = bench.scratch.last_run_statuses();
    assert_eq!(statuses["frozen"], "failed", "{transcript}");
    let said = format!("server `s` stalled: a request got no byte for {} ms", stall_s * 1000);
    assert!(transcript.contains(&said), "{transcript}");
    assert_eq!(crate::broken_inputs::fault_of(&outcome.json(), "frozen"), "server-stalled", "{transcript}");
    assert_eq!(statuses["after-restart"], "ran", "the next cell runs on a restarted server:\n{transcript}");
    assert!(!alive(frozen), "the frozen server was killed");
    bench.assert_no_server_left("after the stall");
    eprintln!("{}", outcome.stderr); // the timings, with --nocapture
    outcome
}

#[test]
fn a_sim_frozen_mid_cell_fails_it_as_stalled_and_restarts_for_the_next() {
    let bench = Bench::new();
    let marker =
        format!("stall-sim-{}", bench.store().display().to_string().len() + std::process::id() as usize);
    let server = format!(
        r#"server "s" {{
    engine "command"
    model "{marker}"
    command "ANVIL_BIN" "sim" "--port" "{{port}}" "--set" "model={marker}" "--set" "decode-step-ms=5"
    ready http="/health" timeout="30s"
}}"#
    );
    stall_and_restart(&bench, &server, &marker, "vllm:generation_tokens_total", 3);
}

/// The same on the real llama.cpp server (the test suite's SmolLM2).
#[test]
fn llama_cpp_frozen_mid_cell_fails_it_as_stalled_and_restarts_for_the_next() {
    let Some((llama, gguf)) = llama_env() else { return };
    let bench = Bench::new();
    let marker = format!("stall-llama-{}", std::process::id());
    let server = format!(
        r#"server "s" {{
    engine "command"
    model "{marker}"
    command "{llama}" "-m" "{gguf}" "--alias" "{marker}" "--host" "{{host}}" "--port" "{{port}}" "-c" "2048" "--parallel" "2" "-t" "2" "--metrics"
    ready http="/health" status=200 timeout="2m"
}}"#
    );
    // A CPU llama.cpp on 2 busy cores can go 3 s without a byte while
    // alive (a prefill it was starved for): 15 s is silence only a frozen one keeps.
    stall_and_restart(&bench, &server, &marker, "llamacpp:tokens_predicted_total", 15);
}
