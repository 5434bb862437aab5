//! A run is what was asked for when it started (issue 42): the recipe is
//! frozen when the run starts, later waves load it from the frozen text, the
//! report renders from the run's stored documents, and an edit made during
//! the run shows in the next plan as the reason its steps are pending.
//! Real runs of the real binary on the simulated engine.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Scratch, entry_dir};

/// Two cells (a few seconds each: 16 tokens at 25 ms a step, 24 requests two
/// at a time), a screen over them, and a cell on the screen's winner.
const RECIPE: &str = r#"
campaign "frozen" {
    seed 7
    description "CAMPAIGN_DESC"
}

server "base" abstract=#true {
    engine "sim"
    model "frozen-model"
    sim {
        prefill-tok-s 50000
        max-running-seqs 8
    }
}
server "quick" extends="base" {
    sim { decode-step-ms 25; }
}
server "steady" extends="base" {
    sim { decode-step-ms 40; }
}

workload "tiny" {
    context-tokens 64
    concurrency 2
    requests 24
    response-words 8
    max-tokens 16
    thinking "off"
}

cell "try-quick" server="quick" workload="tiny" {
    requests QUICK_REQUESTS
    description "QUICK_DESC"
}
cell "try-steady" server="steady" workload="tiny"

screen "depth" {
    over "cell.try-*"
    metric "aggregate_tok_s"
}

cell "on-winner" server="{screen.depth.winner_server}" workload="tiny" {
    requests WINNER_REQUESTS
    description "WINNER_DESC"
}
"#;

struct Version {
    quick_requests: &'static str,
    winner_requests: &'static str,
    quick_desc: &'static str,
    winner_desc: &'static str,
    campaign_desc: &'static str,
}

const ASKED: Version = Version {
    quick_requests: "24",
    winner_requests: "4",
    quick_desc: "quick twin as asked",
    winner_desc: "winner cell of four requests",
    campaign_desc: "the campaign as asked",
};

/// The recipe edited during the run: an upstream setting, the winner's
/// request count, and every description a report shows.
const EDITED: Version = Version {
    quick_requests: "26",
    winner_requests: "9",
    quick_desc: "quick twin EDITED",
    winner_desc: "winner cell EDITED",
    campaign_desc: "the campaign EDITED",
};

fn recipe(v: &Version) -> String {
    RECIPE
        .replace("QUICK_REQUESTS", v.quick_requests)
        .replace("WINNER_REQUESTS", v.winner_requests)
        .replace("QUICK_DESC", v.quick_desc)
        .replace("WINNER_DESC", v.winner_desc)
        .replace("CAMPAIGN_DESC", v.campaign_desc)
}

/// The one run record in the store, once it exists.
fn run_record(store: &Path) -> Option<Value> {
    let dir = std::fs::read_dir(store.join("runs")).ok()?;
    let path = dir.flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|e| e == "json"))?;
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn node<'a>(record: &'a Value, name: &str) -> &'a Value {
    record["nodes"].as_array().and_then(|n| n.iter().find(|n| n["name"] == name)).unwrap_or_else(|| {
        panic!("no node {name} in {record}");
    })
}

fn report(scratch: &Scratch, recipe: &Path) -> String {
    let out = scratch.path().join("report.html");
    let _ = std::fs::remove_file(&out);
    scratch
        .anvil(&["report", recipe.to_str().unwrap(), "--format", "html", "--out", out.to_str().unwrap()])
        .expect_code(0);
    std::fs::read_to_string(&out).expect("the report was written")
}

#[test]
fn a_recipe_edited_during_a_run_changes_neither_the_run_nor_its_report() {
    let scratch = Scratch::new();
    let path = scratch.write("recipe.kdl", &recipe(&ASKED));
    let store = scratch.store();

    let child = scratch
        .command()
        .args(["run", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start anvil run");
    // The run's record is written before its first step starts: the first
    // wave (the two cells, seconds each) is under way from then on.
    let deadline = Instant::now() + Duration::from_secs(60);
    let started = loop {
        if let Some(record) = run_record(&store) {
            break record;
        }
        assert!(Instant::now() < deadline, "the run never recorded its start");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(started["status"], "running", "{started}");
    scratch.write("recipe.kdl", &recipe(&EDITED));
    // The edit preceded every settling: the screen had not chosen yet.
    let screen = node(&started, "depth")["fingerprint"].as_str().unwrap().to_string();
    assert!(
        !entry_dir(&store, &screen).exists(),
        "the first wave ended before the edit: the test proves nothing"
    );

    let output = child.wait_with_output().expect("the run ends");
    let transcript =
        format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{transcript}");

    // The winner's cell ran the request count asked for when the run started.
    let record = run_record(&store).expect("the run's record");
    let winner = node(&record, "on-winner");
    assert_eq!(winner["status"], "ran", "{record}");
    let fp = winner["fingerprint"].as_str().unwrap();
    let artifact: Value =
        serde_json::from_slice(&std::fs::read(entry_dir(&store, fp).join("benchmark.json")).unwrap())
            .unwrap();
    assert_eq!(artifact["resolved_cell"]["requests"], 4, "{}", artifact["resolved_cell"]);

    // The record names the frozen recipe and keeps its text as asked.
    let frozen = record["extra"]["frozen_inputs"].as_object().expect("frozen inputs named");
    let (_, input) = frozen.iter().find(|(name, _)| name.ends_with("recipe.kdl")).expect("the recipe frozen");
    assert_eq!(input["blake3"], format!("blake3:{}", blake3::hash(recipe(&ASKED).as_bytes()).to_hex()));
    assert_eq!(input["text"], recipe(&ASKED));

    // The report describes the run, not the file. Rendered while the file
    // holds the edit and again after restoring it, it is the same page, and
    // it shows what was asked: the descriptions (present in both versions
    // of the file, different in each) are the run's, so the comparison
    // cannot pass by the report leaving them out or reading either file.
    let during = report(&scratch, &path);
    scratch.write("recipe.kdl", &recipe(&ASKED));
    let restored = report(&scratch, &path);
    assert!(during == restored, "the report depends on the recipe file");
    for asked in [ASKED.campaign_desc, ASKED.quick_desc, ASKED.winner_desc] {
        assert!(during.contains(asked), "the report lacks {asked:?}");
    }
    assert!(!during.contains("EDITED"), "the report shows the edited recipe");

    // The next plan names the edits as why the changed steps are pending.
    scratch.write("recipe.kdl", &recipe(&EDITED));
    let plan = scratch.plan(&path, &[]);
    let reason = |name: &str| {
        plan.nodes().iter().find(|n| n["name"] == name).map(|n| n["reason"].to_string()).unwrap_or_default()
    };
    assert!(plan.pending().contains(&"try-quick".to_string()), "{:?}", plan.statuses());
    let upstream = reason("try-quick");
    assert!(
        upstream.contains("requests") && upstream.contains("24") && upstream.contains("26"),
        "{upstream}"
    );
    assert!(reason("on-winner").contains("waits for screen.depth"), "{}", reason("on-winner"));
    // With the upstream setting as the run had it, the winner is settled
    // on the stored screen and pending for its own edit alone.
    let winner_only = Version { quick_requests: ASKED.quick_requests, ..EDITED };
    scratch.write("recipe.kdl", &recipe(&winner_only));
    let plan = scratch.plan(&path, &[]);
    assert_eq!(plan.pending(), ["on-winner"], "{:?}", plan.statuses());
    let reason =
        plan.nodes().iter().find(|n| n["name"] == "on-winner").map(|n| n["reason"].to_string()).unwrap();
    assert!(reason.contains("requests") && reason.contains('4') && reason.contains('9'), "{reason}");
}

/// A bundle exported after the recipe was edited carries the recipe its
/// run read (the run record's frozen text), not the edited file.
#[test]
fn a_bundle_carries_the_recipe_its_run_read_not_a_later_edit() {
    let scratch = Scratch::new();
    let original = r#"
server "sim" { model "m"; }
cell "c" server="sim" { requests 4; max-tokens 8; context-tokens 16; }
"#;
    let recipe = scratch.write("frozen-export.kdl", original);
    scratch.run(&recipe, &[], 0);
    // Edited after the run: a comment and a changed setting.
    scratch.write("frozen-export.kdl", &original.replace("requests 4", "requests 9 /* EDITED */"));
    scratch.anvil(&["export", "frozen-export.kdl", "-o", "b.anvil"]).expect_code(0);
    let elsewhere = Scratch::new();
    let bundle = scratch.path().join("b.anvil");
    elsewhere.anvil(&["import", bundle.to_str().unwrap(), "--into", "theirs"]).expect_code(0);
    let unpacked =
        std::fs::read_to_string(elsewhere.path().join("theirs/frozen-export.kdl")).expect("unpacked recipe");
    assert_eq!(unpacked, original, "the bundle carries the edited recipe");
}
