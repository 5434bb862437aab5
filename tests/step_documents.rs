//! Step documents (`anvil plan --emit`): each step as a file holding the
//! key its fingerprint hashes and what an executor needs to run it, and a
//! cell run from its document alone (`anvil worker --document`) with the
//! recipe moved away, stored as the entry the recipe's own run would find.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::Scratch;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

/// `plan.json`'s steps by `kind.name`: (fingerprint, document file).
fn emitted(dir: &Path) -> BTreeMap<String, (String, String)> {
    let plan = read_json(&dir.join("plan.json"));
    plan["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            let key = format!("{}.{}", s["kind"].as_str().unwrap(), s["name"].as_str().unwrap());
            (key, (s["fingerprint"].as_str().unwrap().into(), s["document"].as_str().unwrap().into()))
        })
        .collect()
}

#[test]
fn the_qwen38_documents_hash_to_the_golden_fingerprints() {
    let scratch = Scratch::new();
    let recipe = repo("recipes/qwen38-possibility.kdl");
    let dir = scratch.path().join("docs");
    scratch
        .anvil(&["plan", recipe.to_str().unwrap(), "--sim", "--emit", dir.to_str().unwrap()])
        .expect_code(0);
    let golden = std::fs::read_to_string(repo("tests/fixtures/golden-fingerprints.txt")).expect("golden");
    let pinned: BTreeMap<&str, &str> = golden
        .lines()
        .filter_map(|l| l.strip_prefix("recipes/qwen38-possibility.kdl sim "))
        .filter_map(|l| l.split_once(' '))
        .collect();
    let steps = emitted(&dir);
    assert!(
        pinned.len() > 20 && steps.len() == pinned.len(),
        "{} pinned, {} emitted",
        pinned.len(),
        steps.len()
    );
    for (step, (fingerprint, file)) in &steps {
        assert_eq!(pinned.get(step.as_str()), Some(&fingerprint.as_str()), "{step}");
        let document = read_json(&dir.join(file));
        assert_eq!(document["fingerprint"], fingerprint.as_str(), "{step}");
        assert_eq!(document["format"], "anvil-step/v1");
        let runs = document["exec"]["runs"].as_str().unwrap();
        match step.split('.').next().unwrap() {
            // A cell's document holds the cell as the load generator runs it, and names its server.
            "cell" => {
                assert_eq!(runs, "cell", "{step}");
                assert!(document["exec"]["cell"]["requests"].as_u64().unwrap() > 0, "{step}");
                let server = document["exec"]["server"].as_str().unwrap();
                assert!(dir.join(format!("{server}.json")).is_file(), "{step}: its server's document");
            }
            // A check's holds the check as the checker runs it, and names its server.
            "check" => {
                assert_eq!(runs, "check", "{step}");
                assert!(document["exec"]["check"]["type"].is_string(), "{step}");
                let server = document["exec"]["server"].as_str().unwrap();
                assert!(dir.join(format!("{server}.json")).is_file(), "{step}: its server's document");
            }
            // A task's (or finally step's) holds its command and the absolute folder it runs in.
            "task" | "finally" => {
                assert_eq!(runs, "task", "{step}");
                assert!(!document["exec"]["argv"].as_array().unwrap().is_empty(), "{step}");
                assert!(Path::new(document["exec"]["cwd"].as_str().unwrap()).is_absolute(), "{step}");
            }
            "server" => assert_eq!(runs, "server", "{step}"),
            // A gate's, screen's or decision's holds what it judges, as text parsed again on reading.
            kind @ ("gate" | "screen" | "decision") => assert_eq!(runs, kind, "{step}"),
            _ => assert_eq!(runs, "declared", "{step}"),
        }
    }
}

const RECIPE: &str = r#"
campaign "documents" { seed 7; }
server "sim" { engine "sim"; sim { decode-step-ms 2; prefill-tok-s 200000; } }
cell "small" { server "sim"; concurrency 2; requests 12; context-tokens 64; max-tokens 8; }
check "hello" { server "sim"; type "smoke"; }
gate "fast" { require "cell.small.canaries_passed == cell.small.requests"; }
"#;

#[test]
fn a_cell_and_a_check_run_from_their_documents_alone_into_the_entries_the_recipe_finds() {
    let scratch = Scratch::new();
    let recipe = scratch.write("campaign/documents.kdl", RECIPE);
    let docs = scratch.path().join("docs");
    scratch.anvil(&["plan", recipe.to_str().unwrap(), "--emit", docs.to_str().unwrap()]).expect_code(0);
    let (fingerprint, file) = emitted(&docs)["cell.small"].clone();
    let (check_fingerprint, check_file) = emitted(&docs)["check.hello"].clone();
    // Nothing of the recipe is left where it was planned.
    std::fs::rename(scratch.path().join("campaign"), scratch.path().join("moved")).expect("move");

    let (cell_doc, check_doc) = (docs.join(&file), docs.join(&check_file));
    let out = scratch
        .anvil(&[
            "worker",
            "--document",
            cell_doc.to_str().unwrap(),
            "--document",
            check_doc.to_str().unwrap(),
        ])
        .expect_code(0);
    assert!(out.stdout.contains("small: 12 ok"), "{}", out.transcript());
    assert!(out.stdout.contains("hello: passed"), "{}", out.transcript());
    let check_entry = scratch.store().join("entries").join(&check_fingerprint[..2]).join(&check_fingerprint);
    assert_eq!(read_json(&check_entry.join("result.json"))["passed"], true);
    let entry = scratch.store().join("entries").join(&fingerprint[..2]).join(&fingerprint);
    let preimage = read_json(&entry.join("preimage.json"));
    assert_eq!(preimage, read_json(&docs.join(&file))["key"], "stored under the document's key");
    let benchmark = read_json(&entry.join("benchmark.json"));
    assert_eq!(benchmark["completed"], 12);
    // The run record names the document, and nothing is left in the temporary folder.
    let run = scratch.runs().into_iter().find(|r| r["nodes"][0]["name"] == "small");
    let run_id = run.expect("a run record")["run_id"].as_str().unwrap().to_string();
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(&run_id))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    // The recipe back where it was: its run finds the cell stored and measures nothing again.
    std::fs::rename(scratch.path().join("moved"), scratch.path().join("campaign")).expect("move back");
    let run = scratch.run(&recipe, &["--json"], 0).json();
    let small = run["steps"].as_array().unwrap().iter().find(|s| s["name"] == "small").unwrap().clone();
    assert_eq!(small["status"], "cached", "{small}");
    assert_eq!(small["fingerprint"], fingerprint.as_str());
    let hello = run["steps"].as_array().unwrap().iter().find(|s| s["name"] == "hello").unwrap().clone();
    assert_eq!(hello["status"], "cached", "{hello}");

    // A second worker on the same document finds it stored.
    let again = scratch.anvil(&["worker", "--document", docs.join(&file).to_str().unwrap()]).expect_code(0);
    assert!(again.stdout.contains("stored"), "{}", again.transcript());
}

#[test]
fn a_run_keeps_its_steps_documents_and_a_step_runs_again_from_one_with_the_recipe_gone() {
    let scratch = Scratch::new();
    let recipe = scratch.write("campaign/documents.kdl", RECIPE);
    let run = scratch.run(&recipe, &["--json"], 0).json();
    let run_id = run["run_id"].as_str().expect("run_id");
    let record = read_json(&scratch.store().join("runs").join(format!("{run_id}.json")));
    let documents = record["extra"]["documents"].as_object().expect("the record names its documents").clone();
    let steps = run["steps"].as_array().unwrap();
    let fingerprint_of =
        |name: &str| steps.iter().find(|s| s["name"] == name).unwrap()["fingerprint"].clone();
    for (step, name) in [("cell.small", "small"), ("check.hello", "hello"), ("gate.fast", "fast")] {
        assert_eq!(documents[step], fingerprint_of(name), "{step}");
    }
    let folder = scratch.store().join("documents");
    let document = |step: &str| folder.join(format!("{}.json", documents[step].as_str().unwrap()));
    // The gate's document holds what it judges; the cell's, the cell as measured.
    let gate = read_json(&document("gate.fast"));
    assert_eq!(gate["exec"]["runs"], "gate");
    assert_eq!(gate["exec"]["require"][0], "cell.small.canaries_passed == cell.small.requests");
    assert_eq!(read_json(&document("cell.small"))["exec"]["cell"]["requests"], 12);
    assert!(folder.join(format!("{}.json", documents["server.sim"].as_str().unwrap())).is_file());

    // The recipe gone, the cell measured again from the run's document alone, under its fingerprint.
    std::fs::rename(scratch.path().join("campaign"), scratch.path().join("moved")).expect("move");
    let cell = document("cell.small");
    let again =
        scratch.anvil(&["worker", "--document", cell.to_str().unwrap(), "--force", "small"]).expect_code(0);
    assert!(again.stdout.contains("small: 12 ok"), "{}", again.transcript());
    let fingerprint = documents["cell.small"].as_str().unwrap();
    let entry = scratch.store().join("entries").join(&fingerprint[..2]).join(fingerprint);
    assert_eq!(read_json(&entry.join("preimage.json")), read_json(&cell)["key"]);
}

const TASK_RECIPE: &str = r#"
campaign "task-documents" { seed 3; }
task "stamp" { run "sh" "-c" "echo stamped > stamp.txt"; outputs "stamp.txt"; reads "notes.txt"; }
"#;

#[test]
fn a_task_runs_from_its_document_with_the_recipe_file_gone_into_the_entry_the_recipe_finds() {
    let scratch = Scratch::new();
    let recipe = scratch.write("campaign/tasks.kdl", TASK_RECIPE);
    scratch.write("campaign/notes.txt", "as planned");
    let docs = scratch.path().join("docs");
    scratch.anvil(&["plan", recipe.to_str().unwrap(), "--emit", docs.to_str().unwrap()]).expect_code(0);
    let (fingerprint, file) = emitted(&docs)["task.stamp"].clone();
    // The recipe file is gone; the folder the task runs in stays.
    let kept = scratch.path().join("tasks.kdl.away");
    std::fs::rename(&recipe, &kept).expect("move the recipe away");

    let document = docs.join(&file);
    let out = scratch.anvil(&["worker", "--document", document.to_str().unwrap()]).expect_code(0);
    assert!(out.stdout.contains("stamp"), "{}", out.transcript());
    let entry = scratch.store().join("entries").join(&fingerprint[..2]).join(&fingerprint);
    assert_eq!(read_json(&entry.join("preimage.json")), read_json(&document)["key"], "stored under its key");
    let stamped =
        std::fs::read_to_string(entry.join("outputs").join("stamp.txt")).expect("its output stored");
    assert_eq!(stamped.trim(), "stamped");

    // A file its key names, changed since planning: the document is refused, nothing runs.
    scratch.write("campaign/notes.txt", "edited");
    let forced = scratch
        .anvil(&["worker", "--document", document.to_str().unwrap(), "--force", "stamp"])
        .expect_code(2);
    assert!(forced.stderr.contains("notes.txt"), "{}", forced.transcript());
    scratch.write("campaign/notes.txt", "as planned");

    // The recipe back: its run finds the task stored and runs nothing again.
    std::fs::rename(&kept, &recipe).expect("move the recipe back");
    let run = scratch.run(&recipe, &["--json"], 0).json();
    let stamp = run["steps"].as_array().unwrap().iter().find(|s| s["name"] == "stamp").unwrap().clone();
    assert_eq!(stamp["status"], "cached", "{stamp}");
    assert_eq!(stamp["fingerprint"], fingerprint.as_str());
}

#[test]
fn a_document_whose_key_was_edited_is_refused_and_two_documents_diff() {
    let scratch = Scratch::new();
    let recipe = scratch.write("documents.kdl", RECIPE);
    let docs = scratch.path().join("docs");
    scratch.anvil(&["plan", recipe.to_str().unwrap(), "--emit", docs.to_str().unwrap()]).expect_code(0);
    let (_, file) = emitted(&docs)["cell.small"].clone();
    let path = docs.join(&file);
    let mut document = read_json(&path);
    document["key"]["settings"]["requests"] = serde_json::json!(13);
    let edited = scratch.path().join("edited.json");
    std::fs::write(&edited, serde_json::to_string(&document).unwrap()).unwrap();
    let out = scratch.anvil(&["worker", "--document", edited.to_str().unwrap()]).expect_code(2);
    assert!(out.stderr.contains("refused"), "{}", out.transcript());
    assert!(
        !scratch.store().join("entries").exists()
            || std::fs::read_dir(scratch.store().join("entries")).unwrap().count() == 0
    );

    // The same cell with 24 requests: `diff` of the two documents names the setting.
    let recipe24 = scratch.write("documents24.kdl", &RECIPE.replace("requests 12", "requests 24"));
    let docs24 = scratch.path().join("docs24");
    scratch.anvil(&["plan", recipe24.to_str().unwrap(), "--emit", docs24.to_str().unwrap()]).expect_code(0);
    let (_, file24) = emitted(&docs24)["cell.small"].clone();
    let diff = scratch
        .anvil(&["diff", path.to_str().unwrap(), docs24.join(&file24).to_str().unwrap()])
        .expect_code(0);
    assert!(
        diff.stdout.contains("requests") && diff.stdout.contains("12") && diff.stdout.contains("24"),
        "{}",
        diff.transcript()
    );
}
