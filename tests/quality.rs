//! Answer quality inside a campaign, end to end on the simulated engine
//! over loopback (`answers { … }` in its profile: a known accuracy per
//! seed, a known share of diverging replies), with fixed seeds: answers
//! kept and scored, accuracy with its interval, arms compared on the same
//! items (McNemar) and lossless outputs against the control's rerun,
//! bundles that carry the answers and catch a doctored one, and the
//! recipe errors of bad declarations.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::Scratch;

const ARITH: &str = include_str!("../datasets/arith-v1.jsonl");

/// A sim server answering the shipped dataset's items right for a share
/// `accuracy` of them (drawn by `seed`), diverging on `diverge` of prompts.
fn sim_server(name: &str, accuracy: f64, seed: u64, diverge: f64) -> String {
    format!(
        "server \"{name}\" {{\n    model \"m\"\n    sim {{\n        decode-step-ms 1\n        seed {seed}\n        \
         answers {{ dataset \"arith-v1.jsonl\"; accuracy {accuracy}; diverge-rate {diverge}; }}\n    }}\n}}\n"
    )
}

/// A cell that sends every item of the shipped dataset to `server`.
fn scored_cell(name: &str, server: &str, extra: &str) -> String {
    format!(
        "cell \"{name}\" server=\"{server}\" {{\n    dataset \"arith-v1.jsonl\" format=\"anvil\"\n    \
         concurrency 8\n    max-tokens 32\n{extra}}}\n"
    )
}

/// A scratch folder holding `recipe` (as `q.kdl`) and the shipped dataset.
fn campaign(recipe: &str) -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    scratch.write("arith-v1.jsonl", ARITH);
    let path = scratch.write("q.kdl", &format!("campaign \"q\" {{ seed 11; }}\n{recipe}"));
    (scratch, path)
}

fn answers(scratch: &Scratch, recipe: &std::path::Path, cell: &str) -> Vec<Value> {
    let path = scratch.stored_path(recipe, cell, "answers.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|line| serde_json::from_str(line).expect("an answer line")).collect()
}

/// One seeded run at a set accuracy of 0.7: the cell's accuracy is scored
/// from its kept answers, one per item, and its 95% interval holds 0.7; a
/// gate reads the share over that interval.
#[test]
fn a_scored_cell_states_its_accuracy_with_an_interval_that_holds_the_truth() {
    let recipe = format!(
        "{}{}gate \"good-enough\" {{\n    require \"cell.a.accuracy.share > 0.5\"\n    confidence 0.95\n}}\n",
        sim_server("sim-a", 0.7, 3, 0.0),
        scored_cell("a", "sim-a", "")
    );
    let (scratch, path) = campaign(&recipe);
    let outcome = scratch.run(&path, &[], 0);
    let result = scratch.stored_json(&path, "a", "result.json");
    let accuracy = &result["accuracy"];
    let (low, high) =
        (accuracy["share_ci95_low"].as_f64().unwrap(), accuracy["share_ci95_high"].as_f64().unwrap());
    assert!(
        low < 0.7 && 0.7 < high,
        "the interval [{low}, {high}] holds the set 0.7: {}",
        outcome.transcript()
    );
    assert_eq!((accuracy["n"].as_u64(), accuracy["items"].as_u64()), (Some(200), Some(200)));
    let lines = answers(&scratch, &path, "a");
    let mut items: Vec<&str> = lines.iter().map(|l| l["item"].as_str().unwrap()).collect();
    items.sort();
    items.dedup();
    assert_eq!(items.len(), 200, "each item once");
    let right = lines.iter().filter(|l| l["correct"] == true).count() as u64;
    assert_eq!(accuracy["correct"].as_u64(), Some(right), "the accuracy is the kept answers' scores");
    assert!(lines.iter().all(|l| l["simulated"] == true), "the sim's answers say so");
    assert_eq!(result["answers"]["kept"], 200);
    assert_eq!(result["answers"]["simulated"], true);
    let gate = scratch.stored_json(&path, "good-enough", "result.json");
    assert_eq!(gate["status"], "passed", "{gate}");
    assert_eq!(gate["requirements"][0]["intervals"], serde_json::json!(["cell.a.accuracy.share"]));
}

/// `keep-answers` on synthetic prompts: answers kept up to the budget,
/// the rest counted as dropped; the setting moves the cell's fingerprint.
#[test]
fn answers_are_kept_within_their_budget() {
    let cell = |budget: &str| {
        format!(
            "server \"s\" {{ model \"m\"; sim {{ decode-step-ms 1; output-tokens 40; }} }}\n\
             cell \"c\" server=\"s\" {{\n    requests 20\n    context-tokens 64\n{budget}}}\n"
        )
    };
    let (scratch, path) = campaign(&cell("    keep-answers \"2KB\"\n"));
    scratch.run(&path, &[], 0);
    let result = scratch.stored_json(&path, "c", "result.json");
    let kept = result["answers"]["kept"].as_u64().unwrap();
    let dropped = result["answers"]["dropped"].as_u64().unwrap();
    assert_eq!(kept + dropped, 20, "{result}");
    assert!(kept > 0 && dropped > 0, "2KB holds some answers, not all: {kept} kept");
    assert!(result["answers"]["bytes"].as_u64().unwrap() <= 2000);
    assert!(result.get("accuracy").is_none(), "synthetic prompts are not scored");
    let lines = answers(&scratch, &path, "c");
    assert_eq!(lines.len() as u64, kept);
    for line in &lines {
        let text = line["text"].as_str().unwrap();
        let digest = format!("blake3:{}", blake3::hash(text.as_bytes()).to_hex());
        assert_eq!(line["text_blake3"], digest.as_str());
        assert!(line.get("item").is_none());
    }
    let with = scratch.plan(&path, &[]).fingerprint("c");
    let without = scratch.write("q.kdl", &format!("campaign \"q\" {{ seed 11; }}\n{}", cell("")));
    assert_ne!(scratch.plan(&without, &[]).fingerprint("c"), with, "keeping answers changes what is stored");
}
