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
    let artifact = scratch.stored_json(&path, "a", "benchmark.json");
    let temperature = &artifact["sampling"]["temperature"];
    assert_eq!(
        (&temperature["requested"], &temperature["sent"]),
        (&Value::from(0.0), &Value::from(true)),
        "greedy"
    );
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

/// The requirement a gate stored for its one comparison.
fn compared(scratch: &Scratch, recipe: &std::path::Path, gate: &str) -> (String, Value) {
    let result = scratch.stored_json(recipe, gate, "result.json");
    let requirement = &result["requirements"][0];
    (requirement["status"].as_str().unwrap().to_string(), requirement["compared"].clone())
}

/// Arms on the same 200 items, paired by item (McNemar): two arms that
/// answer at the same accuracy (0.6, independent draws: seeds 1 and 2)
/// show no difference, which a false "differs" would contradict at most
/// 5% of the time; 0.5 against 0.9 differs, so the weaker arm as the
/// candidate is rejected and the stronger one passes within its margin.
#[test]
fn arms_on_the_same_items_differ_only_when_their_accuracies_do() {
    let recipe = [
        sim_server("s-ctl", 0.6, 1, 0.0),
        sim_server("s-equal", 0.6, 2, 0.0),
        sim_server("s-weak", 0.5, 3, 0.0),
        sim_server("s-strong", 0.9, 4, 0.0),
        scored_cell("control", "s-ctl", ""),
        scored_cell("equal", "s-equal", ""),
        scored_cell("weak", "s-weak", ""),
        scored_cell("strong", "s-strong", ""),
        "gate \"g-equal\" { accuracy-not-worse arm=\"equal\" control=\"control\" margin=0.05; blocking #false; }\n"
            .into(),
        "gate \"g-weak\" { accuracy-not-worse arm=\"weak\" control=\"strong\" margin=0.05; blocking #false; }\n"
            .into(),
        "gate \"g-strong\" { accuracy-not-worse arm=\"strong\" control=\"weak\" margin=0.05; confidence 0.95; }\n"
            .into(),
        "decision \"d\" { rule label=\"strong\" when=\"gate.g-strong.passed\"; }\n".into(),
    ]
    .concat();
    let (scratch, path) = campaign(&recipe);
    let outcome = scratch.run(&path, &["--report"], 0);
    let (_, equal) = compared(&scratch, &path, "g-equal");
    assert_eq!(equal["mcnemar"], "no-difference", "{equal}\n{}", outcome.transcript());
    assert_eq!(equal["n"], 200);
    let (status, weak) = compared(&scratch, &path, "g-weak");
    assert_eq!((status.as_str(), &weak["mcnemar"]), ("rejected", &Value::from("control-better")), "{weak}");
    assert!(weak["difference_high"].as_f64().unwrap() < 0.0);
    let disagreements = weak["disagreements"].as_array().unwrap();
    assert!(!disagreements.is_empty() && disagreements.len() <= 20);
    let only = weak["only_arm"].as_u64().unwrap() + weak["only_control"].as_u64().unwrap();
    assert!(only > 20, "the items the arms disagree on are counted in full, shown in part");
    let (status, strong) = compared(&scratch, &path, "g-strong");
    assert_eq!((status.as_str(), &strong["mcnemar"]), ("passed", &Value::from("arm-better")), "{strong}");
    let gate = scratch.stored_json(&path, "g-strong", "result.json");
    assert_eq!(
        (gate["passed_error_at_most"].as_f64(), gate["rejected_error_at_most"].as_f64()),
        (Some(0.05), Some(0.05))
    );

    // The decision summary and the report show each arm's accuracy with its
    // interval and the items the arms disagree on.
    let summary: Value =
        serde_json::from_str(&scratch.read("results/q/decision-summary.json")).expect("summary");
    let accuracy = summary["quality"]["accuracy"].as_array().expect("per-arm accuracy");
    assert_eq!(accuracy.len(), 4, "{accuracy:?}");
    for arm in accuracy {
        let stored = scratch.stored_json(&path, arm["cell"].as_str().unwrap(), "result.json");
        assert_eq!(arm["share_ci95_low"], stored["accuracy"]["share_ci95_low"]);
        assert_eq!(arm["share_ci95_high"], stored["accuracy"]["share_ci95_high"]);
    }
    let rows = summary["quality"]["comparisons"].as_array().expect("comparisons");
    let weak_row = rows.iter().find(|r| r["gate"] == "g-weak").expect("the weak arm's comparison");
    assert_eq!(weak_row["compared"]["disagreements"], weak["disagreements"]);
    let page = scratch.read("results/q/report.html");
    let section = &page[page.find("<section id=\"quality\"").expect("a Quality section")..];
    let first = weak["disagreements"][0]["item"].as_str().unwrap();
    assert!(
        section.contains("Items they disagree on") && section.contains(first),
        "the first disagreement, {first}, shown"
    );
}

/// `lossless`: an arm whose replies equal the control's passes; one that
/// diverges on a fifth of the prompts (from their middle word) is
/// rejected, its first divergence shown, against a control whose rerun
/// is identical (the sim is deterministic).
#[test]
fn lossless_passes_identical_arms_and_shows_where_a_lossy_one_diverged() {
    let recipe = [
        sim_server("s-ctl", 0.7, 1, 0.0),
        sim_server("s-same", 0.7, 1, 0.0),
        sim_server("s-lossy", 0.7, 1, 0.2),
        scored_cell("control", "s-ctl", "    repeat 2\n"),
        scored_cell("same", "s-same", ""),
        scored_cell("lossy", "s-lossy", ""),
        "gate \"g-same\" { lossless arm=\"same\" control=\"control\"; }\n".into(),
        "gate \"g-lossy\" { lossless arm=\"lossy\" control=\"control\"; blocking #false; }\n".into(),
        "decision \"d\" { rule label=\"lossless\" when=\"gate.g-same.passed\"; }\n".into(),
    ]
    .concat();
    let (scratch, path) = campaign(&recipe);
    let outcome = scratch.run(&path, &["--report"], 0);
    let (status, same) = compared(&scratch, &path, "g-same");
    assert_eq!((status.as_str(), &same["cause"]), ("passed", &Value::from("identical")), "{same}");
    assert_eq!(same["arm_vs_control"]["identical"], 200);
    assert_eq!(same["control_vs_rerun"]["identical"], 200, "the engine's own nondeterminism: none");
    let (status, lossy) = compared(&scratch, &path, "g-lossy");
    assert_eq!(status, "rejected", "{lossy}\n{}", outcome.transcript());
    assert_eq!(lossy["cause"], "exceeds-nondeterminism");
    let differing = 200 - lossy["arm_vs_control"]["identical"].as_u64().unwrap();
    let (low, high) = (20, 60); // a fifth of 200 is 40; a binomial draw stays within these
    assert!((low..=high).contains(&differing), "{differing} differ");
    let first = &lossy["diverged"][0];
    assert_eq!(first["unit"], "char");
    assert!(first["excerpt_arm"].as_str().unwrap().contains("otherwise"), "{first}");
    assert!(!first["excerpt_control"].as_str().unwrap().contains("otherwise"));
    let result = scratch.stored_json(&path, "g-lossy", "result.json");
    assert!(result["detail"].as_str().unwrap().contains("first divergence"), "{result}");

    // Where the outputs diverged, in the decision summary and the report.
    let summary: Value =
        serde_json::from_str(&scratch.read("results/q/decision-summary.json")).expect("summary");
    let rows = summary["quality"]["comparisons"].as_array().expect("comparisons");
    let row = rows.iter().find(|r| r["gate"] == "g-lossy").expect("the lossy arm's comparison");
    assert_eq!((&row["status"], &row["compared"]["diverged"][0]), (&Value::from("rejected"), first));
    let page = scratch.read("results/q/report.html");
    let section = &page[page.find("<section id=\"quality\"").expect("a Quality section")..];
    let excerpt = first["excerpt_arm"].as_str().unwrap().replace('"', "&quot;");
    assert!(section.contains(&excerpt), "the first divergence's excerpt, {excerpt}, shown");
}

/// Where the engine sends token ids (vLLM's `return_token_ids`, asked for
/// with `extra-body`; the sim answers it the same way), each kept answer
/// holds them and a lossless comparison is by token: identical arms pass,
/// and a lossy arm's first divergence is a token index with the ids around it.
#[test]
fn with_token_ids_kept_lossless_compares_by_token() {
    let ids = "    extra-body { return_token_ids #true; }\n";
    let recipe = [
        sim_server("s-ctl", 0.7, 1, 0.0),
        sim_server("s-same", 0.7, 1, 0.0),
        sim_server("s-lossy", 0.7, 1, 0.2),
        scored_cell("control", "s-ctl", &format!("{ids}    repeat 2\n")),
        scored_cell("same", "s-same", ids),
        scored_cell("lossy", "s-lossy", ids),
        "gate \"g-same\" { lossless arm=\"same\" control=\"control\"; }\n".into(),
        "gate \"g-lossy\" { lossless arm=\"lossy\" control=\"control\"; blocking #false; }\n".into(),
    ]
    .concat();
    let (scratch, path) = campaign(&recipe);
    let outcome = scratch.run(&path, &[], 0);
    for cell in ["control", "same", "lossy"] {
        for answer in answers(&scratch, &path, cell) {
            let ids =
                answer["token_ids"].as_array().unwrap_or_else(|| panic!("{cell}: no token ids: {answer}"));
            assert!(!ids.is_empty() && ids.iter().all(Value::is_u64), "{cell}: {answer}");
        }
    }
    let (status, same) = compared(&scratch, &path, "g-same");
    assert_eq!(status, "passed", "{same}\n{}", outcome.transcript());
    assert_eq!(same["arm_vs_control"]["identical"], 200);
    let (status, lossy) = compared(&scratch, &path, "g-lossy");
    assert_eq!(status, "rejected", "{lossy}");
    let first = &lossy["diverged"][0];
    assert_eq!(first["unit"], "token", "{first}");
    // The ids around it, the first differing one in brackets, differ between the sides.
    let (arm, control) = (first["excerpt_arm"].as_str().unwrap(), first["excerpt_control"].as_str().unwrap());
    assert!(arm.contains('[') && arm != control, "{first}");
}

/// An error's text as one line: the terminal's wrapping and frame undone.
fn flat(text: &str) -> String {
    text.replace('│', " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A bad comparison is a recipe error at its line, naming what is wrong.
#[test]
fn bad_comparisons_are_recipe_errors_at_their_line() {
    let servers = [sim_server("s-a", 0.7, 1, 0.0), sim_server("s-b", 0.7, 1, 0.0)].concat();
    let synthetic = "cell \"plain\" server=\"s-a\" { requests 4; }\n";
    let cases: &[(&str, &str)] = &[
        (
            "gate \"g\" { lossless arm=\"a\" control=\"b\"; }\n",
            "the control `b` is measured once: add `repeat 2`",
        ),
        ("gate \"g\" { accuracy-not-worse arm=\"a\" control=\"b\"; }\n", "needs margin="),
        ("gate \"g\" { accuracy-not-worse arm=\"a\" control=\"b\" margin=1.5; }\n", "needs margin="),
        ("gate \"g\" { lossless arm=\"a\" control=\"nope\"; }\n", "there is no cell `nope`"),
        ("gate \"g\" { lossless arm=\"a\" control=\"a\"; }\n", "compares two different cells"),
        ("gate \"g\" { lossless arm=\"a\" versus=\"b\"; }\n", "not `versus`"),
        (
            "gate \"g\" { accuracy-not-worse arm=\"plain\" control=\"b\" margin=0.02; }\n",
            "cell `plain` sends no scored dataset",
        ),
        ("gate \"g\" { lossless arm=\"plain\" control=\"b\"; }\n", "cell `plain` keeps no answers"),
        ("gate \"g\" { lossless arm=\"plain\" control=\"b\"; }\n", "cell `plain` sends no dataset"),
        (
            "gate \"g\" { blocking #false; }\n",
            "needs `require` (an expression that must hold), `lossless` or `accuracy-not-worse`",
        ),
    ];
    for (gate, expected) in cases {
        let recipe = format!(
            "{servers}{}{}{synthetic}{gate}",
            scored_cell("a", "s-a", ""),
            scored_cell("b", "s-b", "")
        );
        let (scratch, path) = campaign(&recipe);
        let outcome = scratch.anvil(&["plan", path.to_str().unwrap()]).expect_code(2);
        let text = outcome.transcript();
        assert!(flat(&text).contains(expected), "{gate}: expected `{expected}` in\n{text}");
        let line = recipe.lines().position(|l| l == gate.trim_end()).unwrap() + 2; // after the campaign line
        assert!(text.contains(&format!("q.kdl:{line}:")), "{gate}: the error points at line {line}:\n{text}");
    }
    let bad_budget = format!("{servers}cell \"c\" server=\"s-a\" {{ keep-answers \"lots\"; }}\n");
    let (scratch, path) = campaign(&bad_budget);
    let text = scratch.anvil(&["plan", path.to_str().unwrap()]).expect_code(2).transcript();
    assert!(flat(&text).contains("`keep-answers` `lots` is not a size"), "{text}");
    let bad_dataset = format!("{servers}{}", scored_cell("c", "s-a", ""));
    let (scratch, path) = campaign(&bad_dataset);
    scratch.write(
        "arith-v1.jsonl",
        "{\"id\":\"x\",\"prompt\":\"1+1?\",\"reference\":\"two\",\"scorer\":\"number\"}\n",
    );
    let text = scratch.anvil(&["plan", path.to_str().unwrap()]).expect_code(2).transcript();
    assert!(text.contains("line 1") && text.contains("reference"), "{text}");
}

/// Every member of a bundle, in order, with its bytes.
fn members(bundle: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    use std::io::Read as _;
    let file = std::fs::File::open(bundle).expect("open bundle");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut out = Vec::new();
    for entry in archive.entries().expect("a tar archive") {
        let mut entry = entry.expect("an entry");
        let name = entry.path().expect("a path").to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read member");
        out.push((name, bytes));
    }
    out
}

/// `members` written as a bundle again, the manifest's hash of each
/// changed member fixed up (as a forger would).
fn repack_fixed(members: &mut [(String, Vec<u8>)], changed: &str, out: &std::path::Path) {
    let bytes = members.iter().find(|(name, _)| name == changed).expect("the changed member").1.clone();
    let mut manifest: Value = serde_json::from_slice(&members[0].1).expect("manifest");
    for m in manifest["members"].as_array_mut().expect("members") {
        if m["path"] == changed {
            m["bytes"] = serde_json::json!(bytes.len());
            m["blake3"] = serde_json::json!(blake3::hash(&bytes).to_hex().to_string());
        }
    }
    members[0].1 = serde_json::to_vec_pretty(&manifest).expect("json");
    let file = std::fs::File::create(out).expect("create bundle");
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(file, flate2::Compression::fast()));
    for (name, bytes) in members.iter() {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        builder.append_data(&mut header, name, &bytes[..]).expect("append");
    }
    builder.into_inner().expect("finish tar").finish().expect("finish gzip");
}

/// A bundle carries the kept answers; `verify` scores them again and
/// evaluates the comparisons again from them. An answer edited in the
/// bundle (its hashes fixed up) is caught at its line; one whose own
/// digest was fixed up too is caught by the file's digest, its score and
/// the accuracy.
#[test]
fn a_bundle_with_answers_verifies_and_a_doctored_answer_is_caught() {
    let recipe = [
        sim_server("s-ctl", 0.7, 1, 0.0),
        sim_server("s-arm", 0.7, 1, 0.0),
        scored_cell("control", "s-ctl", "    repeat 2\n"),
        scored_cell("arm", "s-arm", ""),
        "gate \"g-lossless\" { lossless arm=\"arm\" control=\"control\"; }\n".into(),
        "gate \"g-accuracy\" { accuracy-not-worse arm=\"arm\" control=\"control\" margin=0.05; }\n".into(),
    ]
    .concat();
    let (scratch, path) = campaign(&recipe);
    scratch.run(&path, &[], 0);
    scratch.anvil(&["export", "q.kdl", "-o", "q.anvil"]).expect_code(0);
    let bundle = scratch.path().join("q.anvil");
    let outcome = scratch.anvil(&["verify", bundle.to_str().unwrap()]).expect_code(0);
    assert!(outcome.stdout.contains("verified: clean"), "{}", outcome.transcript());
    assert!(
        outcome.stdout.contains("600 kept answers"),
        "two runs of one cell, one of another: {}",
        outcome.stdout
    );

    let fingerprint = scratch.plan(&path, &[]).fingerprint("arm");
    let member = format!("entries/{fingerprint}/answers.jsonl");
    let original = members(&bundle);
    let at = original.iter().position(|(name, _)| *name == member).expect("the answers travel");
    let text = String::from_utf8(original[at].1.clone()).unwrap();
    let mut lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let right = lines.iter().position(|l| l["correct"] == true).expect("a right answer");
    let number = lines[right]["extracted"].as_str().unwrap().parse::<i64>().unwrap();
    lines[right]["text"] = Value::from(format!("The answer is {}", number + 1));
    let write = |lines: &[Value]| lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes();

    // Edited, the bundle's hashes fixed up: the answer's own digest says so.
    let mut doctored = original.clone();
    doctored[at].1 = write(&lines);
    let out = scratch.path().join("edited.anvil");
    repack_fixed(&mut doctored, &member, &out);
    let outcome = scratch.anvil(&["verify", out.to_str().unwrap()]).expect_code(1);
    let finding = format!("{member} line {}.text_blake3", right + 1);
    assert!(outcome.stdout.contains(&finding), "{finding} in\n{}", outcome.transcript());

    // Its digest fixed up too: the file's digest, its score and the accuracy.
    let digest =
        format!("blake3:{}", blake3::hash(lines[right]["text"].as_str().unwrap().as_bytes()).to_hex());
    lines[right]["text_blake3"] = Value::from(digest);
    let mut doctored = original.clone();
    doctored[at].1 = write(&lines);
    let out = scratch.path().join("forged.anvil");
    repack_fixed(&mut doctored, &member, &out);
    let outcome = scratch.anvil(&["verify", out.to_str().unwrap()]).expect_code(1);
    for expected in [
        format!("{member} blake3"),
        format!("{member} line {}.correct", right + 1),
        format!("{member} result.accuracy.correct"),
    ] {
        assert!(outcome.stdout.contains(&expected), "{expected} in\n{}", outcome.transcript());
    }
}
