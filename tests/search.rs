//! `search` steps end to end, with the real binary over loopback HTTP
//! against the simulated engine: a bracket search finds the capacity the
//! sim's own model predicts; each probe is a stored cell, so a killed search
//! resumes without repeating one and an SLO-only change sends no request
//! (counted on the server's own request counter); every stop rule and each
//! failure (a probe that fails, a server that dies) ends the search as
//! documented.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::common::{Scratch, entry_dir};
use crate::support_servers::ExternalSim;
use serde_json::Value;

/// The probes are timed on a shared machine: one search test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The stored result of step `name` of the recipe, by its planned fingerprint.
fn stored_result(scratch: &Scratch, recipe: &Path, name: &str) -> Value {
    let fp = scratch.plan(recipe, &[]).fingerprint(name);
    let text = std::fs::read_to_string(entry_dir(&scratch.store(), &fp).join("result.json"))
        .unwrap_or_else(|e| panic!("{name} is not stored ({fp}): {e}"));
    serde_json::from_str(&text).unwrap()
}

/// Every fingerprint the store holds.
fn stored_fingerprints(store: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for shard in std::fs::read_dir(store.join("entries")).into_iter().flatten().flatten() {
        for entry in std::fs::read_dir(shard.path()).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.len() == 64 {
                out.insert(name);
            }
        }
    }
    out
}

/// The requests a stored probe sent: its prompt-calibration requests and
/// its measured ones (these recipes have no warmup).
fn requests_sent(store: &Path, fingerprint: &str) -> u64 {
    let dir = entry_dir(store, fingerprint);
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
    };
    let (result, artifact) = (read("result.json"), read("benchmark.json"));
    let calibration = artifact["calibration"]["probes"].as_array().map_or(0, Vec::len) as u64;
    result["completed"].as_u64().unwrap() + result["failed"].as_u64().unwrap() + calibration
}

fn plan_reason(scratch: &Scratch, recipe: &Path, name: &str) -> String {
    let plan = scratch.plan(recipe, &[]);
    let node = plan.nodes().iter().find(|n| n["name"] == name).expect("the step is planned").clone();
    node["reason"].as_str().unwrap_or_default().to_string()
}

fn curve_values(result: &Value) -> Vec<f64> {
    result["curve"].as_array().unwrap().iter().map(|p| p["value"].as_f64().unwrap()).collect()
}

/// The probes' table, printed so a test run shows what was measured.
fn print_curve(label: &str, result: &Value) {
    eprintln!("{label}: {} = {}, stopped {}", result["variable"], result["max_value"], result["stopped"]);
    for p in result["curve"].as_array().unwrap() {
        eprintln!(
            "  {:>8} {:<6} {} tok/s {}",
            p["value"],
            if p["passed"].as_bool().unwrap() { "pass" } else { "FAIL" },
            p["throughput_tok_s"],
            p["metrics"]
        );
    }
}

const CAPACITY_SIM: &str = r#"
    model "cap-model"
    sim {
        decode-step-ms 2
        decode-step-ms-per-seq 0.25
        max-running-seqs 8
        prefill-tok-s 20000
        // The prefix cache stays on: every probe has prompts of its own
        // (`prompt-salt`), so no probe is served from another's.
    }
"#;

const CAPACITY_WORKLOAD: &str = r#"
workload "short" {
    context-tokens 256
    max-tokens 16
    thinking "off"
    requests 150
    warmup-requests 0
    concurrency 512
}
"#;

/// The sim's capacity for this profile, from its own model.
fn analytic_capacity() -> f64 {
    let profile = anvil_sim::SimProfile {
        decode_step_ms: 2.0,
        decode_step_ms_per_seq: 0.25,
        max_running_seqs: 8,
        prefill_tok_s: 20_000.0,
        prefix_cache: false,
        ..Default::default()
    };
    profile.capacity_rps(256, 16)
}

#[test]
fn a_bracket_search_finds_the_capacity_the_sim_model_predicts() {
    let _one = serial();
    let scratch = Scratch::new();
    let capacity = analytic_capacity();
    let recipe = scratch.write(
        "capacity.kdl",
        &format!(
            r#"
server "sim" {{ {CAPACITY_SIM} }}
{CAPACITY_WORKLOAD}
search "capacity" server="sim" workload="short" {{
    variable "rate"
    range 12 200
    slo "probe.ttft_p99_ms <= 250"
    precision "10%"
    budget 10
}}
gate "enough" {{
    require "search.capacity.max_rate >= 12"
}}
cell "by-hand" server="sim" workload="short" {{
    arrival "poisson"
    rate 24
    prompt-salt 24001  // a probe's prompts are its own: 1 + 24 × 1000
    stop-when-saturated #true  // a rate probe stops when clearly lost
}}
"#
        ),
    );
    assert!(plan_reason(&scratch, &recipe, "capacity").contains("up to 10 probes, 0 stored (next: rate=12)"));
    scratch.run(&recipe, &["--only", "capacity", "enough"], 0);
    let result = stored_result(&scratch, &recipe, "capacity");
    print_curve(&format!("analytic capacity {capacity:.2} req/s"), &result);
    assert_eq!(result["schema"], "anvil-serving.search-result/v1");
    assert_eq!(result["simulated"], true);
    assert_eq!(result["stopped"], "precision", "{result}");
    let pass = result["max_rate"].as_f64().unwrap();
    let fail = result["lowest_fail"].as_f64().unwrap();
    assert!(fail - pass <= 0.1 * pass + 1e-9, "bracket [{pass}, {fail}] wider than 10%");
    // The SLO holds below capacity and breaks past it (the queue grows
    // without bound): the boundary the search found brackets the model's
    // capacity, within its precision plus the finite probe's slack.
    assert!(
        pass >= 0.75 * capacity && pass <= 1.15 * capacity,
        "max_rate {pass} vs capacity {capacity:.2} req/s"
    );
    assert!(result["curve"].as_array().unwrap().len() <= 10);

    // A probe is exactly the cell one would write by hand.
    let by_hand = scratch.plan(&recipe, &[]).fingerprint("by-hand");
    let probe_24 =
        result["curve"].as_array().unwrap().iter().find(|p| p["value"] == 24.0).expect("24 probed");
    assert_eq!(probe_24["fingerprint"].as_str().unwrap(), by_hand);
    assert_eq!(scratch.plan(&recipe, &[]).statuses()["by-hand"], "cached");

    // A rerun executes nothing.
    let again = scratch.run(&recipe, &[], 0);
    assert!(!again.stderr.contains("capacity@"), "no probe is measured again:\n{}", again.stderr);
}

/// A rate search against an external sim whose request counter the test reads.
fn counted_recipe(scratch: &Scratch, sim: &ExternalSim, slo: &str, method: &str) -> PathBuf {
    scratch.write(
        "counted.kdl",
        &format!(
            r#"
server "sim" {{ url "{url}"; model "cap-model"; }}
workload "short" {{
    context-tokens 128
    max-tokens 8
    thinking "off"
    requests 40
    warmup-requests 0
    concurrency 512
}}
search "capacity" server="sim" workload="short" {{
    variable "rate"
    {method}
    slo "{slo}"
    precision "10%"
}}
"#,
            url = sim.url()
        ),
    )
}

#[test]
fn a_killed_search_resumes_from_its_stored_probes_and_repeats_none() {
    let _one = serial();
    let scratch = Scratch::new();
    let sim = ExternalSim::start(&["decode-step-ms=2", "max-running-seqs=8", "prefix-cache=false"]);
    let recipe = counted_recipe(&scratch, &sim, "probe.ttft_p99_ms <= 250", "range 8 400");
    let mut child = scratch
        .command()
        .args(["run", recipe.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while stored_fingerprints(&scratch.store()).len() < 2 {
        assert!(Instant::now() < deadline, "no two probes stored in time");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it was killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = stored_fingerprints(&scratch.store());
    // The killed probe's requests still in the server finish on their own.
    let served_before = sim.settled_count();
    let reason = plan_reason(&scratch, &recipe, "capacity");
    assert!(reason.contains(&format!("{} stored", before.len())), "{reason}");

    let rerun = scratch.run(&recipe, &[], 0);
    let after = stored_fingerprints(&scratch.store());
    let served = sim.requests_served() - served_before;
    let result = stored_result(&scratch, &recipe, "capacity");
    print_curve("resumed", &result);
    let curve: Vec<String> = result["curve"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["fingerprint"].as_str().unwrap().into())
        .collect();
    // Every probe stored before the kill is on the curve, reused.
    for fp in &before {
        assert!(curve.contains(fp), "stored probe {fp} not reused");
    }
    // The rerun sent exactly the requests of the probes it measured (each
    // probe's own artifact counts them: its prompt calibration, then 40),
    // and none for a probe stored before the kill.
    let new: Vec<&String> = curve.iter().filter(|fp| !before.contains(*fp)).collect();
    let measured = new.len() as u64;
    let expected: u64 = new.iter().map(|fp| requests_sent(&scratch.store(), fp)).sum();
    assert!(expected >= 40 * measured);
    assert_eq!(served, expected, "requests served by the rerun:\n{}", rerun.stderr);
    assert_eq!(after.len(), before.len() + measured as usize + 1, "the probes and the search's own entry");
    // The run record lists every probe: measured by this run, or reused.
    let statuses = scratch.last_run_statuses();
    for p in result["curve"].as_array().unwrap() {
        let name = format!("capacity@rate={}", p["value"].as_f64().unwrap());
        let reused = before.contains(p["fingerprint"].as_str().unwrap());
        assert_eq!(statuses[&name], if reused { "cached" } else { "ran" }, "{name}: {statuses:?}");
    }
    let measured_lines =
        rerun.stderr.lines().filter(|l| l.contains("cell") && l.contains("capacity@")).count();
    assert_eq!(measured_lines as u64, measured, "{}", rerun.stderr);
}

#[test]
fn changing_only_the_slo_rejudges_stored_probes_and_sends_no_request() {
    let _one = serial();
    let scratch = Scratch::new();
    let sim = ExternalSim::start(&["decode-step-ms=2", "max-running-seqs=8", "prefix-cache=false"]);
    // Every rung below the server's capacity (about 95 req/s): a probe
    // past it fails, over-saturated at its end, whatever its SLO says.
    let ladder = "ladder 5 10 20 40 80";
    let recipe = counted_recipe(&scratch, &sim, "probe.ttft_p99_ms <= 100000", ladder);
    scratch.run(&recipe, &[], 0);
    let first = stored_result(&scratch, &recipe, "capacity");
    print_curve("loose SLO", &first);
    assert_eq!(first["stopped"], "ladder-done");
    assert_eq!(curve_values(&first), [5.0, 10.0, 20.0, 40.0, 80.0]);
    assert_eq!(first["max_rate"], 80.0);

    // A threshold between two stored probes' TTFT p99: the answer moves.
    let ttft: Vec<f64> = first["curve"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metrics"]["ttft_p99_ms"].as_f64().unwrap())
        .collect();
    let (i, limit) = (1..ttft.len())
        .rev()
        .find_map(|i| (ttft[i] > ttft[i - 1] * 1.05).then(|| (i, (ttft[i] + ttft[i - 1]) / 2.0)))
        .expect("TTFT grows with the rate somewhere on the ladder");
    let served_before = sim.requests_served();
    let tighter = counted_recipe(&scratch, &sim, &format!("probe.ttft_p99_ms <= {limit:.3}"), ladder);
    let reason = plan_reason(&scratch, &tighter, "capacity");
    assert!(reason.contains("re-evaluates 5 stored probes, sends no request"), "{reason}");
    assert_eq!(scratch.plan(&tighter, &[]).statuses()["sim"], "cached", "the server will not start");
    let run = scratch.run(&tighter, &[], 0);
    assert_eq!(sim.requests_served(), served_before, "no request sent:\n{}", run.stderr);
    let second = stored_result(&scratch, &tighter, "capacity");
    print_curve("tighter SLO", &second);
    assert_ne!(second["max_rate"], first["max_rate"]);
    assert!(second["max_rate"].as_f64().unwrap() < curve_values(&first)[i]);
    // The probes are the same stored cells.
    let fps = |r: &Value| -> Vec<Value> {
        r["curve"].as_array().unwrap().iter().map(|p| p["fingerprint"].clone()).collect()
    };
    assert_eq!(fps(&first), fps(&second));
}

/// Searches on one closed-loop sim, each ending by another stop rule.
#[test]
fn each_stop_rule_ends_a_search() {
    let _one = serial();
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "stops.kdl",
        r#"
server "sim" {
    model "m"
    sim { decode-step-ms 2; max-running-seqs 2; }
}
server "flaky" {
    model "m"
    sim { decode-step-ms 2; faults { http-500-rate 0.3; } }
}
workload "w" { context-tokens 64; max-tokens 8; thinking "off"; requests 16; warmup-requests 0; }

search "budget" server="sim" workload="w" {
    variable "concurrency"
    range 1 64
    slo "probe.ttft_p99_ms <= 100000"
    budget 3
}
search "saturation" server="sim" workload="w" {
    variable "concurrency"
    range 1 64
    slo "probe.ttft_p99_ms <= 100000"
    saturation-pct 20
}
search "top" server="sim" workload="w" {
    variable "concurrency"
    range 1 4
    slo "probe.failed == 0"
}
search "bottom" server="sim" workload="w" {
    variable "concurrency"
    range 2 8
    slo "probe.ttft_p99_ms <= 0.001"
}
search "errors" server="flaky" workload="w" {
    variable "concurrency"
    range 1 8
    slo "probe.ttft_p99_ms <= 100000"
    stop-on-errors #true
}
"#,
    );
    scratch.run(&recipe, &[], 0);
    let check = |name: &str, stopped: &str, values: &[f64], answer: Option<f64>| {
        let result = stored_result(&scratch, &recipe, name);
        print_curve(name, &result);
        assert_eq!(result["stopped"], stopped, "{name}: {result}");
        assert_eq!(curve_values(&result), values, "{name}");
        assert_eq!(result["max_concurrency"].as_f64(), answer, "{name}");
    };
    check("budget", "budget", &[1.0, 2.0, 4.0], Some(4.0));
    // Two sequences run at once: past concurrency 2 throughput stops growing.
    let saturation = stored_result(&scratch, &recipe, "saturation");
    assert_eq!(saturation["stopped"], "saturation", "{saturation}");
    assert!(curve_values(&saturation).len() <= 4, "{saturation}");
    check("top", "top-of-range", &[1.0, 2.0, 4.0], Some(4.0));
    check("bottom", "bottom-of-range", &[2.0], None);
    assert_eq!(stored_result(&scratch, &recipe, "bottom")["boundary"], "below-range");
    let errors = stored_result(&scratch, &recipe, "errors");
    assert_eq!(errors["stopped"], "errors", "{errors}");
    assert!(errors["curve"].as_array().unwrap().last().unwrap()["failed"].as_u64().unwrap() > 0);
}

#[test]
fn a_ladder_probes_in_order_and_a_bisection_splits_whole_concurrencies() {
    let _one = serial();
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "bisect.kdl",
        r#"
server "sim" { model "m"; sim { decode-step-ms 2; max-running-seqs 2; } }
workload "w" { context-tokens 64; max-tokens 8; thinking "off"; requests 16; warmup-requests 0; }
search "rungs" server="sim" workload="w" {
    variable "concurrency"
    ladder 3 6 5
    slo "probe.completed == 16"
}
search "whole" server="sim" workload="w" {
    variable "concurrency"
    range 1 32
    slo "probe.ttft_p99_ms <= 60"
    precision 1
    budget 20
}
search "missing" server="sim" workload="w" {
    variable "concurrency"
    range 1 4
    slo "probe.no_such_metric <= 5"
}
"#,
    );
    // A metric the probe does not have: the search fails and says which.
    let run = scratch.run(&recipe, &["--keep-going", "--report"], 1);
    assert!(
        run.stdout.contains("FAILED search `missing`: slo \"probe.no_such_metric <= 5\" at concurrency=1"),
        "{}",
        run.stdout
    );
    let rungs = stored_result(&scratch, &recipe, "rungs");
    assert_eq!(curve_values(&rungs), [3.0, 6.0, 5.0]);
    // The run's summary gives each search's answer; the report shows its probes.
    assert!(
        run.stdout.contains("search `rungs`: max_concurrency 6 (point values: no stated rate) (boundary above-range, stopped: ladder-done, 3 probes, "),
        "{}",
        run.stdout
    );
    let html = scratch.read("results/bisect/report.html");
    let section = &html[html.find("<section id=\"searches\">").expect("a Searches section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains("max_concurrency 6 (point values: no stated rate)"), "{section}");
    for fp in rungs["curve"].as_array().unwrap().iter().map(|p| p["fingerprint"].as_str().unwrap()) {
        assert!(section.contains(&fp[..12]), "probe {fp} in the report's table");
    }
    assert_eq!(rungs["stopped"], "ladder-done");
    assert_eq!(rungs["boundary"], "above-range");
    let whole = stored_result(&scratch, &recipe, "whole");
    print_curve("whole", &whole);
    assert_eq!(whole["stopped"], "precision", "{whole}");
    let values = curve_values(&whole);
    assert!(values.iter().all(|v| v.fract() == 0.0), "{values:?}");
    let (pass, fail) = (whole["max_concurrency"].as_f64().unwrap(), whole["lowest_fail"].as_f64().unwrap());
    assert_eq!(fail - pass, 1.0, "{whole}");
}

#[test]
fn a_probe_that_fails_fails_the_search_and_keeps_what_was_stored() {
    let _one = serial();
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "fails.kdl",
        r#"
server "down" { model "m"; sim { decode-step-ms 2; faults { http-500-rate 1.0; } } }
workload "w" { context-tokens 64; max-tokens 8; thinking "off"; requests 8; warmup-requests 0; }
search "capacity" server="down" workload="w" {
    variable "concurrency"
    range 1 8
    slo "probe.failed == 0"
}
"#,
    );
    let run = scratch.run(&recipe, &[], 1);
    let failed = "FAILED search `capacity`: probe concurrency=1: cell failed";
    assert!(run.stdout.contains(failed) && run.stdout.contains("HTTP 500"), "{}", run.stdout);
    assert!(stored_fingerprints(&scratch.store()).is_empty(), "a failure is never stored");
}

#[test]
fn a_server_that_dies_mid_search_fails_it_and_the_rerun_resumes() {
    let _one = serial();
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "dies.kdl",
        r#"
server "sim" { model "m"; sim { decode-step-ms 2; faults { exit-after-requests 40; } } }
workload "w" { context-tokens 64; max-tokens 8; thinking "off"; requests 12; warmup-requests 0; }
search "capacity" server="sim" workload="w" {
    variable "concurrency"
    range 1 64
    slo "probe.ttft_p99_ms <= 100000"
}
"#,
    );
    // The server exits after 40 requests (calibration included), during a
    // probe: the search fails, the probes measured before stay stored.
    let run = scratch.run(&recipe, &[], 1);
    assert!(
        run.stdout.contains("FAILED search `capacity`: server `sim` died during probe"),
        "{}",
        run.stdout
    );
    let stored = stored_fingerprints(&scratch.store());
    let n = stored.len();
    assert!(n >= 1, "a probe was measured before the crash:\n{}", run.stderr);
    let next = 1u64 << n; // doubling from 1
    let reason = plan_reason(&scratch, &recipe, "capacity");
    assert!(reason.contains(&format!("{n} stored (next: concurrency={next})")), "{reason}");
    // The rerun starts a fresh server and goes on from the next probe,
    // measuring none of the stored ones again.
    let rerun = scratch.anvil(&["run", recipe.to_str().unwrap()]);
    for k in 0..n {
        let value = format!("capacity@concurrency={} ", 1u64 << k);
        assert!(!rerun.stderr.contains(&value), "{value} measured again:\n{}", rerun.stderr);
    }
    assert!(rerun.stderr.contains(&format!("capacity@concurrency={next} ")), "{}", rerun.stderr);
    let now = stored_fingerprints(&scratch.store());
    assert!(now.len() > n && stored.iter().all(|fp| now.contains(fp)));
}

#[test]
fn recipe_errors_point_at_the_search() {
    let scratch = Scratch::new();
    let cases = [
        ("slo \"cell.x.ttft_p99_ms <= 1\"", "an SLO reads only the probe"),
        ("slo \"probe.ttft_p99_ms <=\"", "in search `capacity`"),
        ("slo \"probe.ok\"\n    range 8 4", "the range must be 0 < min < max"),
        ("slo \"probe.ok\"\n    precision \"ten\"", "`precision` is a positive number"),
        ("slo \"probe.ok\"\n    range 1 2\n    min 3", "give `range` or `min`/`max`, not both"),
        ("slo \"probe.ok\"\n    probe-duration \"0s\"", "a probe of no time measures nothing"),
    ];
    for (settings, expected) in cases {
        let extra = if settings.contains("range") || settings.contains("min") { "" } else { "range 1 8" };
        let recipe = scratch.write(
            "bad.kdl",
            &format!(
                "server \"sim\" {{ model \"m\"; }}\nsearch \"capacity\" server=\"sim\" {{\n    variable \"rate\"\n    {extra}\n    {settings}\n}}\n"
            ),
        );
        let out = scratch.anvil(&["plan", recipe.to_str().unwrap()]).expect_code(2);
        assert!(out.stderr.contains(expected), "{settings}: {}", out.stderr);
        assert!(out.stderr.contains("bad.kdl"), "{}", out.stderr);
    }
    // A probe is its workload with the variable set: sessions decide their own load.
    let recipe = scratch.write(
        "staged.kdl",
        r#"
server "sim" { model "m"; }
workload "w" {
    sessions 2 turns=2 { turn "hello"; }
}
search "capacity" server="sim" workload="w" { variable "rate"; range 1 8; slo "probe.failed == 0"; }
"#,
    );
    let out = scratch.anvil(&["plan", recipe.to_str().unwrap()]).expect_code(2);
    assert!(out.stderr.contains("its workload sets `sessions`"), "{}", out.stderr);
    // A probe duration sets a rate probe's request count; a concurrency probe has none to set.
    let recipe = scratch.write(
        "duration.kdl",
        r#"
server "sim" { model "m"; }
search "capacity" server="sim" { variable "concurrency"; range 1 8; slo "probe.failed == 0"; probe-duration "5s"; }
"#,
    );
    let out = scratch.anvil(&["plan", recipe.to_str().unwrap()]).expect_code(2);
    assert!(out.stderr.contains("`probe-duration` sets a rate probe's request count"), "{}", out.stderr);
    // A gate reading the other variable's answer is refused at plan time.
    let recipe = scratch.write(
        "gate.kdl",
        r#"
server "sim" { model "m"; }
search "capacity" server="sim" { variable "rate"; range 1 8; slo "probe.failed == 0"; }
gate "g" { require "search.capacity.max_concurrency >= 2"; }
gate "h" { require "search.capacity.max_rat >= 2"; }
"#,
    );
    let out = scratch.anvil(&["plan", recipe.to_str().unwrap()]).expect_code(2);
    assert!(out.stderr.contains("read `max_rate` (or `max_value`)"), "{}", out.stderr);
    assert!(out.stderr.contains("`max_rat` (did you mean `max_rate`?)"), "{}", out.stderr);
}

/// Under `--executor slurm` a search runs inside its server's job, with the
/// cells on that server (skipped, with a notice, where Slurm does not answer).
#[test]
fn a_search_runs_in_its_servers_slurm_job() {
    let up = Command::new("scontrol").arg("ping").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if !up.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var("ANVIL_REQUIRE_SLURM").map_or(true, |v| v != "1"),
            "ANVIL_REQUIRE_SLURM=1 but Slurm is not reachable (run scripts/start-slurm.sh)"
        );
        eprintln!(
            "NOTICE: a_search_runs_in_its_servers_slurm_job skipped: no Slurm here (scripts/start-slurm.sh)"
        );
        return;
    }
    let _one = serial();
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "slurm.kdl",
        r#"
server "sim" { model "m"; sim { decode-step-ms 2; max-running-seqs 8; prefix-cache #false; } }
workload "w" { context-tokens 128; max-tokens 8; thinking "off"; requests 40; warmup-requests 0; concurrency 256; }
search "capacity" server="sim" workload="w" {
    variable "rate"
    range 16 400
    slo "probe.ttft_p99_ms <= 150"
    precision "20%"
}
cell "after" server="sim" workload="w" { arrival "poisson"; rate 20; }
gate "enough" { require "search.capacity.max_rate >= 16"; }
"#,
    );
    let run = scratch.run(&recipe, &["--executor", "slurm"], 0);
    assert!(
        run.stderr.contains(": server sim (capacity, after)"),
        "one job for the server's group:\n{}",
        run.stderr
    );
    let result = stored_result(&scratch, &recipe, "capacity");
    assert_eq!(result["stopped"], "precision", "{result}");
    for p in result["curve"].as_array().unwrap() {
        assert!(entry_dir(&scratch.store(), p["fingerprint"].as_str().unwrap()).is_dir(), "probe stored");
    }
    let again = scratch.run(&recipe, &["--executor", "slurm"], 0);
    assert!(!again.stderr.contains("submitted"), "a rerun submits nothing:\n{}", again.stderr);
}

/// A bundle carries a search's probes (they are in the run record), and
/// `anvil verify` judges the search again from them with no server.
#[test]
fn verify_rejudges_a_bundled_search_from_its_probes() {
    let _one = serial();
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "bundled.kdl",
        r#"
server "sim" { model "m"; sim { decode-step-ms 2; } }
workload "w" { context-tokens 64; max-tokens 8; thinking "off"; requests 8; warmup-requests 0; }
search "capacity" server="sim" workload="w" {
    variable "concurrency"
    ladder 1 2
    slo "probe.completed == 8"
}
"#,
    );
    scratch.run(&recipe, &[], 0);
    scratch.anvil(&["export", "bundled.kdl", "-o", "search.anvil"]).expect_code(0);
    let elsewhere = Scratch::new();
    let bundle = scratch.path().join("search.anvil");
    let verified = elsewhere.anvil(&["verify", bundle.to_str().unwrap()]).expect_code(0);
    assert!(verified.stdout.contains("verified: clean"), "{}", verified.transcript());
    assert!(
        verified.stdout.contains("1 gates, screens and decisions evaluated again"),
        "{}",
        verified.transcript()
    );
}

/// An open loop far past capacity with `stop-when-saturated` stops early:
/// it sends fewer requests than planned, cancels those in flight, and its
/// artifact and run line say why; the same cell without it runs them all.
#[test]
fn an_open_loop_far_past_capacity_stops_when_saturated() {
    let _one = serial();
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "saturated.kdl",
        &format!(
            r#"
server "sim" {{ {CAPACITY_SIM} }}
{CAPACITY_WORKLOAD}
cell "lost" server="sim" workload="short" {{
    arrival "poisson"
    rate 400
    requests 2000
    stop-when-saturated #true
}}
"#
        ),
    );
    let outcome = scratch.run(&recipe, &[], 0);
    assert!(outcome.transcript().contains("stopped early"), "{}", outcome.transcript());
    let fp = scratch.plan(&recipe, &[]).fingerprint("lost");
    let artifact: Value = serde_json::from_slice(
        &std::fs::read(entry_dir(&scratch.store(), &fp).join("benchmark.json")).unwrap(),
    )
    .unwrap();
    let ending = &artifact["ending"];
    assert_eq!(ending["reason"], "over-saturated", "{ending}");
    let unsent = ending["unsent"].as_u64().unwrap();
    assert!(unsent > 0, "{ending}");
    // What was recorded, what was cancelled and what was never sent add up to the plan.
    let recorded = artifact["request_timings"].as_array().unwrap().len() as u64;
    assert_eq!(recorded + ending["cancelled"].as_u64().unwrap() + unsent, 2000, "{ending}");
    let result = stored_result(&scratch, &recipe, "lost");
    assert_eq!(result["stopped_early"]["reason"], "over-saturated", "{result}");
}

/// A simulated server of `slots` sequences whose replies are `tokens` decode
/// steps of 10 ms (so `tokens / 100` seconds, whatever the batch), one
/// open-loop Poisson cell `name` at `rate` with the over-saturation rule on.
fn slow_replies_recipe(name: &str, slots: u32, tokens: u32, rate: u32, requests: u32) -> String {
    format!(
        r#"
server "sim" {{
    model "slow"
    sim {{
        decode-step-ms 10
        decode-step-ms-per-seq 0
        max-running-seqs {slots}
        output-tokens {tokens}
    }}
}}
cell "{name}" server="sim" {{
    context-tokens 128
    max-tokens {tokens}
    thinking "off"
    arrival "poisson"
    rate {rate}
    requests {requests}
    warmup-requests 0
    concurrency {requests}
    stop-when-saturated #true
}}
"#
    )
}

/// The over-saturation rule judges against the time a request takes: a
/// server with room for 512 sequences and ~3 s replies, offered 20 req/s
/// (an eighth of its capacity), fills from idle for 3 s with nothing
/// ending. The rule must not read that as a queue that grows: all 200
/// requests complete. (Before the lagged window it stopped at 3.1 s with
/// nothing completed.)
#[test]
fn a_stable_load_with_replies_of_seconds_is_not_stopped_as_over_saturated() {
    let _one = serial();
    let scratch = Scratch::new();
    let recipe = scratch.write("slow-replies.kdl", &slow_replies_recipe("steady", 512, 300, 20, 200));
    let outcome = scratch.run(&recipe, &[], 0);
    assert!(!outcome.transcript().contains("stopped early"), "{}", outcome.transcript());
    let result = stored_result(&scratch, &recipe, "steady");
    assert!(result.get("stopped_early").is_none_or(Value::is_null), "{result}");
    assert_eq!(result["completed"], 200, "{result}");
}

/// The same kind of server offered 1.3 times its capacity (32 sequences of
/// ~1 s: 32 req/s, offered 42) is stopped as over-saturated, and the run
/// line says so.
#[test]
fn a_load_past_capacity_by_a_third_is_stopped_as_over_saturated() {
    let _one = serial();
    let scratch = Scratch::new();
    let recipe = scratch.write("past-capacity.kdl", &slow_replies_recipe("lost", 32, 100, 42, 1500));
    let outcome = scratch.run(&recipe, &[], 0);
    let transcript = outcome.transcript();
    assert!(transcript.contains("over-saturated at"), "{transcript}");
    let result = stored_result(&scratch, &recipe, "lost");
    assert_eq!(result["stopped_early"]["reason"], "over-saturated", "{result}");
}

/// A capacity search where replies last about a second (32 sequences of 100
/// tokens at 10 ms a step: the sim's own model gives ~30 req/s) finds the
/// capacity: its rate probes run with the over-saturation rule on, which
/// before the rule judged against the time a request takes stopped every
/// probe while the server was still filling, so the search reported a
/// capacity far below the true one.
#[test]
fn a_capacity_search_with_replies_of_a_second_finds_the_capacity() {
    let _one = serial();
    let scratch = Scratch::new();
    let profile = anvil_sim::SimProfile {
        decode_step_ms: 10.0,
        decode_step_ms_per_seq: 0.0,
        max_running_seqs: 32,
        prefill_tok_s: 20_000.0,
        prefix_cache: false,
        ..Default::default()
    };
    let capacity = profile.capacity_rps(128, 100);
    let recipe = scratch.write(
        "slow-capacity.kdl",
        r#"
server "sim" {
    model "slow"
    sim { decode-step-ms 10; decode-step-ms-per-seq 0; max-running-seqs 32; prefill-tok-s 20000; prefix-cache #false; }
}
workload "second" {
    context-tokens 128
    max-tokens 100
    thinking "off"
    requests 300
    warmup-requests 0
    concurrency 2000
}
search "capacity" server="sim" workload="second" {
    variable "rate"
    range 8 80
    slo "probe.ttft_p99_ms <= 1000"
    precision "10%"
    budget 8
}
"#,
    );
    scratch.run(&recipe, &[], 0);
    let result = stored_result(&scratch, &recipe, "capacity");
    print_curve(&format!("analytic capacity {capacity:.2} req/s"), &result);
    let pass = result["max_rate"].as_f64().unwrap();
    assert!(
        pass >= 0.9 * capacity && pass <= 1.1 * capacity,
        "max_rate {pass} vs the model's capacity {capacity:.2} req/s: {result}"
    );
}

/// A search with `confidence` states a bound: each probe judged over its
/// intervals, the answer with the lowest non-pass above it, the search's
/// error rate and what it cost, in the result, the summary and the
/// report. An undecided probe is measured again: a probe of 30 requests
/// has no interval for its mean (below 50 values), so each passes only
/// after an extra repeat pooled with it. A rerun replays the same rounds
/// from the store and measures nothing.
#[test]
fn a_search_with_confidence_states_its_bound_error_rate_and_cost() {
    let _one = serial();
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "bound.kdl",
        &format!(
            r#"
campaign "bound"
server "sim" {{ {CAPACITY_SIM} }}
{CAPACITY_WORKLOAD}
workload "few" {{
    context-tokens 256
    max-tokens 16
    thinking "off"
    requests 30
    warmup-requests 0
}}
search "capacity" server="sim" workload="short" {{
    variable "concurrency"
    range 4 64
    slo "probe.ttft_mean_ms <= 150"
    precision "25%"
    budget 8
    confidence 0.95
    extra-repeats 2
}}
search "few" server="sim" workload="few" {{
    variable "concurrency"
    ladder 4 8
    slo "probe.ttft_mean_ms <= 2000"
    confidence 0.95
    extra-repeats 2
}}
"#
        ),
    );
    let run = scratch.run(&recipe, &["--report"], 0);
    let result = stored_result(&scratch, &recipe, "capacity");
    print_curve("concurrency bound at 95%", &result);
    assert_eq!(result["confidence"], 0.95);
    // 2 chances (a doubling and a step up above the capacity) × 3 looks × 1 interval × 5%.
    assert_eq!(result["error_rate"], 0.3, "{result}");
    assert!(result["error_basis"].as_str().unwrap().contains("3 looks"), "{result}");
    let curve = result["curve"].as_array().unwrap();
    let bound = result["max_concurrency"].as_f64().expect("a bound");
    let above = result["lowest_fail"].as_f64().expect("a non-pass above it");
    assert!(bound < above);
    for p in curve {
        assert_eq!(p["passed"], p["verdict"] == "passed", "{p}");
    }
    let requests: u64 =
        curve.iter().map(|p| p["completed"].as_u64().unwrap() + p["failed"].as_u64().unwrap()).sum();
    assert_eq!(result["cost"]["probes"], curve.len());
    assert_eq!(result["cost"]["requests"], requests);
    let extras = result["cost"]["extra_repeats"].as_u64().unwrap();
    let claim = format!(
        "search `capacity`: max_concurrency {bound}: the SLO holds there at 0.95 confidence (not at concurrency={above}; error rate ≤ 0.3)"
    );
    assert!(run.stdout.contains(&claim), "{claim}\n{}", run.stdout);
    let extras_words = if extras == 0 { String::new() } else { format!(" + {extras} extra repeat") };
    assert!(
        run.stdout.contains(&format!("{} probes{extras_words}", curve.len()))
            && run.stdout.contains(&format!("{requests} requests")),
        "{}",
        run.stdout
    );
    let html = scratch.read("results/bound/report.html");
    assert!(html.contains(&format!("max_concurrency {bound}: the SLO holds there at 0.95 confidence")));

    // Undecided probes measured more: each passed only with an extra repeat
    // pooled, every one stored; the requests counted are the pooled ones.
    let few = stored_result(&scratch, &recipe, "few");
    print_curve("ladder of 30-request probes", &few);
    assert_eq!(few["error_rate"], 0.15, "1 rung × 3 looks × 5%: {few}");
    for p in few["curve"].as_array().unwrap() {
        let pooled = p["extra_repeats"].as_array().map_or(0, Vec::len);
        assert!(pooled >= 1, "no mean interval below 50 values: {p}");
        assert_eq!(
            p["completed"].as_u64().unwrap() + p["failed"].as_u64().unwrap(),
            30 * (1 + pooled as u64)
        );
        for fp in p["extra_repeats"].as_array().into_iter().flatten() {
            assert!(
                stored_fingerprints(&scratch.store()).contains(fp.as_str().unwrap()),
                "extra {fp} stored"
            );
        }
    }
    assert_eq!(few["max_concurrency"], 8.0, "{few}");

    // A rerun replays the same rounds from the store: nothing is measured.
    let again = scratch.run(&recipe, &[], 0);
    assert!(
        !again.stderr.contains("@concurrency"),
        "no probe or extra repeat is measured again:\n{}",
        again.stderr
    );

    // A bundle carries every probe and extra repeat: verify replays the
    // same rounds from them and finds the same bounds.
    scratch.anvil(&["export", "bound.kdl", "-o", "bound.anvil"]).expect_code(0);
    let bundle = scratch.path().join("bound.anvil");
    let verified = Scratch::new().anvil(&["verify", bundle.to_str().unwrap()]).expect_code(0);
    assert!(verified.stdout.contains("verified: clean"), "{}", verified.transcript());
}
