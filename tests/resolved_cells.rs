//! One resolved cell, read by every consumer: what the decision summary,
//! the workload manifest and the report say about a cell's load is what
//! the load generator did (its artifact), not a second reading of the
//! recipe. And a run's outputs are its own: `export` bundles them from the
//! store, whatever `results/` holds.

use crate::common::{Scratch, entry_dir};
use serde_json::Value;

/// The campaign the issue found misreported: three headline cells, a trace
/// (its own arrivals, cap 1024), a Poisson rate without a cap, and a closed
/// loop at C6; plus an open loop capped at one request in flight.
const RECIPE: &str = r#"
campaign "loads" { seed 5; }
server "sim" {
    model "m"
    sim { decode-step-ms 2; prefill-tok-s 200000; }
}
cell "replay" server="sim" {
    trace "trace.jsonl" format="mooncake" block-tokens=16
}
cell "poisson" server="sim" {
    arrival "poisson"
    rate 20.0
    requests 40
    context-tokens 64
    max-tokens 16
}
cell "closed" server="sim" {
    concurrency 6
    requests 18
    context-tokens 64
    max-tokens 16
}
cell "capped" server="sim" {
    arrival "constant"
    rate 200.0
    requests 20
    concurrency 1
    context-tokens 64
    max-tokens 32
}
decision "d" {
    headline "replay" "poisson" "closed"
    rule label="measured" when="true"
}
"#;

const TRACE: &str = r#"{"timestamp": 0, "input_length": 40, "output_length": 8, "hash_ids": [1, 2]}
{"timestamp": 50, "input_length": 40, "output_length": 8, "hash_ids": [1, 3]}
{"timestamp": 100, "input_length": 40, "output_length": 8, "hash_ids": [1, 2]}
{"timestamp": 150, "input_length": 40, "output_length": 8, "hash_ids": [4, 5]}
{"timestamp": 200, "input_length": 40, "output_length": 8, "hash_ids": [1, 2]}
{"timestamp": 250, "input_length": 40, "output_length": 8, "hash_ids": [1, 3]}
"#;

fn scratch() -> (Scratch, std::path::PathBuf) {
    let scratch = Scratch::new();
    scratch.write("trace.jsonl", TRACE);
    let recipe = scratch.write("loads.kdl", RECIPE);
    (scratch, recipe)
}

fn artifact(scratch: &Scratch, fingerprint: &str) -> Value {
    let path = entry_dir(&scratch.store(), fingerprint).join("benchmark.json");
    serde_json::from_slice(&std::fs::read(&path).expect("benchmark.json")).expect("JSON")
}

#[test]
fn the_summary_manifest_and_report_say_what_the_load_generator_did() {
    let (scratch, recipe) = scratch();
    let run = scratch.run(&recipe, &["--report"], 0);
    let fingerprints = scratch.plan(&recipe, &[]).fingerprints();
    let art = |name: &str| artifact(&scratch, &fingerprints[name]);

    // What the load generator did, per cell.
    let (replay, poisson, closed, capped) = (art("replay"), art("poisson"), art("closed"), art("capped"));
    assert_eq!(replay["resolved_cell"]["concurrency"], 1024, "a trace's default cap");
    assert_eq!(
        poisson["resolved_cell"]["concurrency"], 40,
        "an open loop's default cap is its request count"
    );
    assert_eq!(
        poisson["in_flight_cap"]["held_requests"], 0,
        "so no due request waited: {}",
        poisson["in_flight_cap"]
    );
    assert_eq!(closed["offered_load"]["axis"], "concurrency");
    assert_eq!(closed["offered_load"]["value"], 6.0);
    for a in [&replay, &poisson] {
        assert_eq!(a["offered_load"]["axis"], "request_rate");
        assert!(a["offered_load"]["value"].as_f64().is_some_and(|r| r > 0.0), "{}", a["offered_load"]);
    }
    // A measured rate near what was asked (20/s over 40 Poisson gaps; the trace's 6 lines 50 ms apart).
    let rate = poisson["offered_load"]["value"].as_f64().unwrap();
    assert!((8.0..50.0).contains(&rate), "poisson offered {rate}");
    let trace_rate = replay["offered_load"]["value"].as_f64().unwrap();
    assert!((10.0..30.0).contains(&trace_rate), "trace offered {trace_rate}");
    // A set cap that holds requests back says so, in the artifact and the run line.
    let held = capped["in_flight_cap"]["held_requests"].as_u64().unwrap();
    assert!(held > 0, "a cap of 1 at 200 req/s holds requests back: {}", capped["in_flight_cap"]);
    assert!(
        run.stderr.contains("the in-flight cap of 1 held")
            || run.stdout.contains("the in-flight cap of 1 held"),
        "the run line says the cap held requests back:\n{}",
        run.transcript()
    );

    // The decision summary.
    let summary: Value =
        serde_json::from_str(&scratch.read("results/loads/decision-summary.json")).expect("summary");
    let topology = |fp: &str| {
        let rows = summary["headline_results"].as_array().expect("headline rows");
        let row = rows.iter().find(|r| r["evidence"] == fp).expect("a row per headline cell");
        row["topology"].as_str().expect("topology").to_string()
    };
    assert_eq!(topology(&fingerprints["closed"]), "1 replica, C6");
    assert!(
        topology(&fingerprints["poisson"]).starts_with("1 replica, poisson 20 req/s ("),
        "{}",
        topology(&fingerprints["poisson"])
    );
    assert!(
        topology(&fingerprints["poisson"]).ends_with("measured), cap 40"),
        "{}",
        topology(&fingerprints["poisson"])
    );
    assert!(
        topology(&fingerprints["replay"]).contains("trace replay"),
        "{}",
        topology(&fingerprints["replay"])
    );
    assert!(topology(&fingerprints["replay"]).ends_with("cap 1024"), "{}", topology(&fingerprints["replay"]));
    let workload = summary["measurement"]["headline_workload"].as_str().expect("headline workload");
    assert!(
        workload.starts_with(&format!("{} requests, trace trace.jsonl", replay["requests"])),
        "{workload}"
    );

    // The manifest: the grid the cells ran.
    let manifest: Value =
        serde_json::from_str(&scratch.read("results/loads/workload-manifest.json")).expect("manifest");
    let selection = &manifest["selection"];
    assert_eq!(selection["concurrency"], serde_json::json!([6]), "closed-loop cells only");
    assert_eq!(selection["traces"], serde_json::json!(["trace.jsonl"]));
    let rates: Vec<f64> =
        selection["request_rates"].as_array().expect("rates").iter().filter_map(Value::as_f64).collect();
    for a in [&replay, &poisson, &capped] {
        let measured = (a["offered_load"]["value"].as_f64().unwrap() * 10.0).round() / 10.0;
        assert!(rates.contains(&measured), "{measured} in {rates:?}");
    }
    assert_eq!(selection["headline_requests"], replay["requests"]);
    assert_eq!(selection["headline_max_tokens"], replay["resolved_cell"]["max_tokens"]);

    // The report places each cell at the load it offered.
    let page = scratch.read("results/loads/report.html");
    for (name, a) in [("replay", &replay), ("poisson", &poisson), ("closed", &closed)] {
        let x = a["offered_load"]["value"].as_f64().unwrap();
        let cell = format!("data-cell=\"{name}\" data-offered=\"{x}\"");
        assert!(page.contains(&cell), "the report places {name} at {x}");
    }
    assert!(
        page.contains("Throughput vs request rate (req/s)") && page.contains("Throughput vs concurrency")
    );
}

#[test]
fn export_bundles_the_runs_own_outputs_from_the_store() {
    let (scratch, recipe) = scratch();
    let recipe_arg = recipe.display().to_string();
    scratch.run(&recipe, &["--out", "elsewhere"], 0);
    // `results/` holds outputs of another campaign run into another store.
    std::fs::create_dir_all(scratch.path().join("results/loads")).unwrap();
    std::fs::write(
        scratch.path().join("results/loads/decision-summary.json"),
        "{\"schema\": \"not this run\"}",
    )
    .unwrap();
    scratch.anvil(&["export", &recipe_arg, "-o", "loads.anvil"]).expect_code(0);
    let verified = scratch.anvil(&["verify", "loads.anvil"]).expect_code(0);
    assert!(verified.stdout.contains("decision summary rebuilt"), "{}", verified.transcript());
    // The bundled summary is the stored one, which `--out` was a copy of.
    let unpacked = Scratch::new();
    let tar = std::process::Command::new("tar")
        .args(["-xzf", &scratch.path().join("loads.anvil").display().to_string(), "-C"])
        .arg(unpacked.path())
        .status();
    assert!(tar.is_ok_and(|s| s.success()), "a bundle is a gzipped tar");
    assert_eq!(
        unpacked.read("outputs/decision-summary.json"),
        scratch.read("elsewhere/loads/decision-summary.json"),
        "the bundle holds the run's own summary"
    );
}

/// Shipped recipes (the quick start whole; the traffic recipe without its
/// minute-long search): every cell the run measured is placed in the report
/// at the load its artifact says it offered, and the decision summary's
/// headline rows and the manifest's grid say what the artifacts say.
#[test]
fn shipped_recipes_publish_what_their_artifacts_record() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (recipe, only) in [
        ("recipes/quickstart.kdl", &[][..]),
        ("recipes/traffic.kdl", &["replay", "sessions", "dataset", "ramp"][..]),
    ] {
        let scratch = Scratch::new();
        for dir in ["recipes", "examples/traces", "examples/datasets"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("shipped folder").flatten() {
                if entry.path().is_file() {
                    let name = format!("{dir}/{}", entry.file_name().to_string_lossy());
                    scratch.write(&name, &std::fs::read_to_string(entry.path()).expect("text"));
                }
            }
        }
        let path = scratch.path().join(recipe);
        let mut args = vec!["--report"];
        if !only.is_empty() {
            args.push("--only");
            args.extend_from_slice(only);
        }
        scratch.run(&path, &args, 0);
        let fingerprints = scratch.plan(&path, &[]).fingerprints();
        let campaign = if recipe.contains("quickstart") { "quickstart" } else { "traffic" };
        let page = scratch.read(&format!("results/{campaign}/report.html"));
        let statuses = scratch.last_run_statuses();
        let measured: Vec<&String> = statuses
            .iter()
            .filter(|(n, s)| *s == "ran" && fingerprints.contains_key(*n))
            .map(|(n, _)| n)
            .collect();
        let mut closed = std::collections::BTreeSet::new();
        let mut cells = 0;
        for name in measured {
            let path = entry_dir(&scratch.store(), &fingerprints[name]).join("benchmark.json");
            let Ok(bytes) = std::fs::read(&path) else { continue };
            let a: Value = serde_json::from_slice(&bytes).expect("JSON");
            cells += 1;
            let x = a["offered_load"]["value"].as_f64().expect("an offered load");
            assert!(
                page.contains(&format!("data-cell=\"{name}\" data-offered=\"{x}\"")),
                "{recipe}: {name} at {x}"
            );
            if a["offered_load"]["axis"] == "concurrency" {
                closed.insert(a["resolved_cell"]["concurrency"].as_u64().expect("concurrency"));
            }
        }
        assert!(cells >= 3, "{recipe}: the cells were measured");
        if campaign == "quickstart" {
            let manifest: Value =
                serde_json::from_str(&scratch.read("results/quickstart/workload-manifest.json"))
                    .expect("manifest");
            let grid: std::collections::BTreeSet<u64> = manifest["selection"]["concurrency"]
                .as_array()
                .expect("concurrency")
                .iter()
                .filter_map(Value::as_u64)
                .collect();
            assert_eq!(grid, closed, "the manifest's concurrencies are the closed-loop cells'");
            let summary: Value =
                serde_json::from_str(&scratch.read("results/quickstart/decision-summary.json"))
                    .expect("summary");
            let headline = artifact(&scratch, &fingerprints["headline"]);
            let row = &summary["headline_results"][0];
            assert_eq!(row["evidence"], fingerprints["headline"].as_str());
            let expected = format!("1 replica, C{}", headline["resolved_cell"]["concurrency"]);
            assert_eq!(row["topology"], expected.as_str());
            assert_eq!(manifest["selection"]["headline_requests"], headline["requests"]);
        }
    }
}
