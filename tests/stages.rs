//! Load stages, latency measured from the schedule and the per-second
//! series, against the simulated engine over loopback: the load
//! generator's figures, their independent re-derivation (anvil-evidence),
//! and the recipe words (`stage`, `slo from=`) through the anvil binary.

use crate::common::{Scratch, entry_dir};
use anvil_loadgen::{Arrival, CellContext, CellReport, CellSpec, Progress, Slo, SloFrom, Stage, Target};
use serde_json::Value;

async fn sim(profile: &[(&str, &str)]) -> anvil_sim::SimHandle {
    let mut p = anvil_sim::SimProfile::default();
    for (k, v) in profile {
        p.set(k, v).unwrap();
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    anvil_sim::spawn(p, listener).await.unwrap()
}

async fn measure(spec: &CellSpec, base_url: String) -> CellReport {
    // Through serde: a target is its address and label; the rest is default.
    let target: Target =
        serde_json::from_value(serde_json::json!({"base_url": base_url, "label": "sim"})).unwrap();
    let target = [target];
    let ctx = CellContext { engine: "sim".into(), simulated: true, ..CellContext::default() };
    let quiet = |_: &Progress| {};
    anvil_loadgen::run_cell(spec, &target, &ctx, &quiet).await.expect("cell runs")
}

fn small(name: &str) -> CellSpec {
    CellSpec {
        name: name.into(),
        model: "sim-model".into(),
        context_tokens: 64,
        max_tokens: 8,
        seed: 3,
        request_timeout_ms: 30_000,
        ..CellSpec::default()
    }
}

/// Every figure the artifact claims is reproduced by the independent checker.
fn assert_rederives(artifact: &Value, must_check: &[&str]) {
    let report = anvil_evidence::rederive(artifact).unwrap();
    for u in report
        .unchecked
        .iter()
        .filter(|u| u.path.starts_with("stages") || u.path.starts_with("series"))
        .take(5)
    {
        eprintln!("UNCHECKED {u:?}");
    }
    for m in report.mismatches.iter().take(3) {
        let i: usize = m
            .path
            .trim_start_matches("request_timings[")
            .split(']')
            .next()
            .unwrap_or("0")
            .parse()
            .unwrap_or(0);
        eprintln!("RECORD {} SLO {}", artifact["request_timings"][i], artifact["slo"]);
    }
    assert!(report.is_clean(), "{:#?}", report.mismatches);
    for path in must_check {
        assert!(report.was_checked(path), "{path} not checked: {}", report.summary());
    }
    let unchecked: Vec<&str> = report.unchecked.iter().map(|u| u.path.as_str()).collect();
    assert!(
        !unchecked.iter().any(|p| p.starts_with("series.") && *p != "series.interval_s"),
        "{unchecked:?}"
    );
}

fn column(artifact: &Value, name: &str) -> Vec<f64> {
    artifact["series"][name].as_array().unwrap().iter().map(|v| v.as_f64().unwrap_or(f64::NAN)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_is_measured_stage_by_stage_and_re_derives() {
    let server = sim(&[("decode-step-ms", "2")]).await;
    let spec = CellSpec {
        concurrency: 16,
        stages: vec![
            Stage { arrival: Arrival::Constant { rate_per_s: 10.0 }, concurrency: 16, duration_ms: 1000 },
            Stage { arrival: Arrival::Constant { rate_per_s: 30.0 }, concurrency: 16, duration_ms: 1000 },
            Stage { arrival: Arrival::ClosedLoop, concurrency: 3, duration_ms: 1000 },
        ],
        ..small("ramp")
    };
    let report = measure(&spec, server.base_url()).await;
    let a = &report.artifact;
    assert_eq!(a["failed"], 0, "{}", a["failures"]);
    let stages = a["stages"].as_array().expect("a stages array");
    assert_eq!(stages.len(), 3);
    // Constant arrivals: exactly rate × duration in each open-loop window.
    assert_eq!(stages[0]["attempted"], 10);
    assert_eq!(stages[1]["attempted"], 30);
    assert_eq!(stages[2]["window_ms"], serde_json::json!([2000.0, 3000.0]));
    let closed = stages[2]["attempted"].as_u64().unwrap();
    assert!(closed >= 3, "three workers for a second send at least one request each: {closed}");
    let total: u64 = stages.iter().map(|s| s["attempted"].as_u64().unwrap()).sum();
    assert!(a["requests_per_repeat"].is_null(), "stages replace the request count");
    assert_eq!(total, a["requests"].as_u64().unwrap(), "every request belongs to one stage");
    for r in &report.records {
        let stage = r.stage.expect("each record names its stage") as usize;
        let (start, end) = (stage as f64 * 1000.0, (stage + 1) as f64 * 1000.0);
        assert!(
            (start..end).contains(&r.intended_send_ms),
            "stage {stage} request intended at {} ms",
            r.intended_send_ms
        );
        // Open loop carries its latency from the schedule; closed loop has no schedule.
        assert_eq!(r.ttft_from_schedule_ms.is_some(), stage < 2);
    }
    let m = &stages[1]["metrics"];
    assert!(m["throughput_tok_s"].as_f64().unwrap() > 0.0);
    assert!(m["ttft_from_schedule_p99_ms"].as_f64().unwrap() >= m["ttft_p99_ms"].as_f64().unwrap());
    assert!(stages[2]["metrics"]["ttft_from_schedule_p99_ms"].is_null());

    // The series covers the whole run, second by second, and adds up to the records.
    let t = column(a, "t");
    assert_eq!(a["series"]["interval_s"], 1.0);
    assert!((3..=4).contains(&t.len()), "{t:?}");
    assert_eq!(column(a, "sent").iter().sum::<f64>(), total as f64);
    let finished = column(a, "completed").iter().sum::<f64>() + column(a, "failed").iter().sum::<f64>();
    assert_eq!(finished, total as f64);
    let sent = column(a, "sent");
    assert_eq!((sent[0], sent[1]), (10.0, 30.0), "{sent:?}");
    let in_flight = column(a, "in_flight");
    assert!(in_flight[2] <= 3.5, "closed loop at 3 holds about 3: {in_flight:?}");
    assert!(column(a, "output_tok_s").iter().all(|v| *v >= 0.0));

    assert_rederives(
        a,
        &[
            "stages[1].metrics.ttft_p99_ms",
            "stages[1].metrics.ttft_from_schedule_p99_ms",
            "stages[0].window_ms",
            "stages[2].wall_clock_ms",
            "series.in_flight",
            "series.output_tok_s",
            "series.ttft_p50_ms",
            "metrics.ttft_from_schedule_p99_ms",
            "request_timings[0].ttft_from_schedule_ms",
        ],
    );
    server.shutdown().await.unwrap();
}

/// A server slower than the arrival rate with an in-flight cap of one:
/// requests wait behind the cap, so measured from their actual send they
/// look fast while users arriving on schedule waited (vLLM #54101).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_from_the_schedule_shows_what_the_cap_hid() {
    let server = sim(&[("decode-step-ms", "5")]).await;
    let cell = |from| CellSpec {
        arrival: Arrival::Constant { rate_per_s: 50.0 },
        concurrency: 1,
        requests: 30,
        slo: Some(Slo { ttft_ms: Some(100.0), from, ..Slo::default() }),
        ..small("omission")
    };
    let send = measure(&cell(SloFrom::Send), server.base_url()).await;
    let schedule = measure(&cell(SloFrom::Schedule), server.base_url()).await;
    for report in [&send, &schedule] {
        let m = &report.artifact["metrics"];
        let (ttft, scheduled) =
            (m["ttft_p99_ms"].as_f64().unwrap(), m["ttft_from_schedule_p99_ms"].as_f64().unwrap());
        // 8 tokens at 5 ms a step is ≥ 40 ms a request against 20 ms between arrivals:
        // the 30th request is sent ~600 ms late.
        assert!(scheduled > ttft + 200.0, "from schedule {scheduled} ms vs from send {ttft} ms");
        for r in &report.records {
            let (t, s, lag) = (r.ttft_ms.unwrap(), r.ttft_from_schedule_ms.unwrap(), r.send_lag_ms);
            assert!((s - (t + lag)).abs() < 1e-9);
        }
        assert_rederives(&report.artifact, &["request_timings[29].slo_met", "metrics.goodput_rate"]);
    }
    let rate = |r: &CellReport| r.artifact["metrics"]["goodput_rate"].as_f64().unwrap();
    assert!(rate(&send) > 0.9, "from send almost every request is fast: {}", rate(&send));
    assert!(rate(&schedule) < 0.5, "from the schedule most waited: {}", rate(&schedule));
    assert_eq!(schedule.artifact["slo"]["from"], "schedule");
    assert!(send.artifact["slo"].get("from").is_none(), "the default is not written");
    server.shutdown().await.unwrap();
}

const STAGED: &str = r#"
campaign "staged" {
    seed 5
}

server "sim" {
    engine "sim"
    model "test-model"
    sim {
        decode-step-ms 1
    }
}

workload "base" {
    context-tokens 64
    max-tokens 8
    concurrency 8
    requests 40
    arrival "constant"
    rate 3.0
    slo ttft="2s" from="schedule"
}

cell "ramp" server="sim" workload="base" {
    stage rate=4 duration="1s"
    stage rate=8 duration="1s"
    stage concurrency=2 duration="500ms"
}
"#;

#[test]
fn a_recipe_declares_stages_and_its_artifact_carries_them() {
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", STAGED);
    let summary = scratch.run(&recipe, &[], 0).summary();
    assert_eq!((summary.ran, summary.failed), (1, 0));
    let fingerprint = scratch.plan(&recipe, &[]).fingerprint("ramp");
    let path = entry_dir(&scratch.store(), &fingerprint).join("benchmark.json");
    let a: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let stages = a["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 3);
    assert_eq!(
        stages[0]["arrival"]["kind"], "constant",
        "the workload's arrival word gives the kind of gaps"
    );
    assert_eq!((stages[0]["attempted"].as_u64(), stages[1]["attempted"].as_u64()), (Some(4), Some(8)));
    assert_eq!(stages[2]["arrival"]["kind"], "closed_loop");
    assert_eq!(stages[2]["concurrency"], 2);
    assert_eq!(a["slo"]["from"], "schedule");
    // `requests` and `rate` from the workload are replaced by the stages.
    assert_ne!(a["requests"], 40);
    assert!(a["metrics"]["ttft_from_schedule_p99_ms"].is_number());
    assert_rederives(&a, &["stages[1].metrics.throughput_tok_s"]);

    // The campaign report draws the staged cell's load by stage and lists its stages.
    let html = scratch.anvil(&["report", "recipe.kdl", "-o", "-"]).expect_code(0).stdout;
    assert!(html.contains("aria-label=\"ramp: load by stage\""), "the load-by-stage plot");
    assert!(!html.contains("cannot draw"), "every plot drew");
    assert!(html.contains("<table class=\"stages\">"), "the stage table");

    // Changing a stage changes the cell's fingerprint; a recipe without stages keeps its own.
    let faster = scratch.write("faster.kdl", &STAGED.replace("stage rate=8", "stage rate=9"));
    assert_ne!(scratch.plan(&faster, &[]).fingerprint("ramp"), fingerprint);
}

fn rejected(text: &str, says: &str) {
    let scratch = Scratch::new();
    scratch.write("recipe.kdl", text);
    let outcome = scratch.anvil(&["plan", "recipe.kdl"]).expect_code(2);
    assert!(outcome.stderr.contains(says), "expected {says:?} in:\n{}", outcome.stderr);
    assert!(outcome.stderr.contains("recipe.kdl:"), "points at the file:\n{}", outcome.stderr);
    assert!(!outcome.stderr.contains("panicked"), "{}", outcome.stderr);
}

#[test]
fn bad_stages_are_recipe_errors() {
    let cell = |body: &str| {
        format!("server \"sim\" {{\n    engine \"sim\"\n}}\ncell \"c\" server=\"sim\" {{\n{body}\n}}\n")
    };
    rejected(&cell("    stage rate=5"), "stage 1 needs duration=");
    rejected(&cell("    stage duration=\"5s\""), "stage 1 needs rate= (requests per second) or concurrency=");
    rejected(&cell("    stage rate=5 duration=\"0s\""), "duration must be longer than zero");
    rejected(
        &cell("    stage rate=5 duration=\"1s\"\n    stage rate=-1 duration=\"1s\""),
        "stage 2: rate must be a positive number",
    );
    rejected(&cell("    requests 10\n    stage rate=5 duration=\"1s\""), "sets both `requests` and `stage`");
    rejected(&cell("    stage rate=5 duration=\"1s\" speed=2"), "`stage` has no property `speed`");
    rejected(&cell("    stage rate=\"fast\" duration=\"1s\""), "`stage rate=` takes a number");
    rejected(&cell("    slo ttft=\"1s\" from=\"arrival\""), "`slo from=` takes \"send\" or \"schedule\"");
    rejected(
        &cell("    sessions 2 turns=2\n    stage rate=5 duration=\"1s\""),
        "sets both `sessions` and `stage`",
    );
}
