//! Files a recipe names, broken: each of the corpus in
//! `tests/fixtures/broken-inputs/` (listed with what is wrong in `cases.tsv`)
//! is named from a recipe, and `anvil plan` exits 2 pointing at the
//! recipe's setting *and* the file's line, before anything starts. A file
//! that changes between the plan and its cell fails that cell, unmeasured.

use std::path::Path;

use crate::common::Scratch;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/broken-inputs");

struct Case {
    file: String,
    setting: String,
    format: String,
    /// The file's line the message names (`None`: a problem of the whole file).
    line: Option<u32>,
    says: String,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(Path::new(CORPUS).join("cases.tsv")).expect("cases.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "cases.tsv: five tab-separated fields: {l}");
            Case {
                file: f[0].into(),
                setting: f[1].into(),
                format: f[2].into(),
                line: f[3].parse().ok(),
                says: f[4].into(),
            }
        })
        .collect()
}

/// A recipe naming `case.file` where its setting goes, and the recipe's
/// line:column of that setting.
fn recipe_for(case: &Case) -> (String, &'static str) {
    let (file, format) = (&case.file, &case.format);
    match case.setting.as_str() {
        "trace" | "dataset" => (
            format!(
                "server \"sim\" engine=\"sim\"\ncell \"c\" server=\"sim\" {{\n    {} \"{file}\" format=\"{format}\"\n}}\n",
                case.setting
            ),
            "3:5",
        ),
        "ca-bundle" => (
            format!(
                "server \"ext\" {{\n    url \"https://127.0.0.1:9\"\n    ca-bundle \"{file}\"\n}}\ncell \"c\" server=\"ext\" {{ requests 1; }}\n"
            ),
            "3:5",
        ),
        "tokenizer" => (
            format!(
                "server \"sim\" {{\n    model \"m\"\n    tokenizer \"{file}\"\n}}\ncell \"c\" server=\"sim\" {{ requests 1; }}\n"
            ),
            "3:5",
        ),
        "reads" => (format!("task \"t\" {{\n    run \"true\"\n    reads \"{file}\"\n}}\n"), "3:5"),
        other => panic!("cases.tsv: unknown setting {other}"),
    }
}

/// miette wraps long messages; the words, joined again.
fn unwrapped(stderr: &str) -> String {
    stderr.split_whitespace().filter(|w| *w != "│").collect::<Vec<_>>().join(" ")
}

/// `run --json`'s classification of a step's failure.
pub fn fault_of(run: &serde_json::Value, step: &str) -> String {
    let steps = run["steps"].as_array().expect("steps");
    let found = steps.iter().find(|s| s["name"] == step).unwrap_or_else(|| panic!("no step {step}: {run}"));
    found["fault"].as_str().unwrap_or("none").to_string()
}

#[test]
fn every_broken_input_of_the_corpus_stops_the_plan_at_both_places() {
    let cases = cases();
    assert!(cases.len() >= 20, "a corpus of at least 20 broken files, found {}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let scratch = Scratch::new();
        let source = Path::new(CORPUS).join(&case.file);
        // `absent-*` files are named but not there.
        if source.exists() {
            std::fs::copy(&source, scratch.path().join(&case.file)).expect("copy the broken file");
        }
        let (recipe, at) = recipe_for(case);
        scratch.write("recipe.kdl", &recipe);
        let outcome = scratch.anvil(&["plan", "recipe.kdl"]);
        let text = unwrapped(&outcome.stderr);
        let mut wrong = Vec::new();
        if outcome.code != Some(2) {
            wrong.push(format!("exit {:?}, not 2", outcome.code));
        }
        if !outcome.stderr.contains(&format!("[recipe.kdl:{at}]")) {
            wrong.push(format!("no span at recipe.kdl:{at}"));
        }
        if !text.contains(&case.says) {
            wrong.push(format!("does not say {:?}", case.says));
        }
        if !text.contains(&case.file) {
            wrong.push("does not name the file".into());
        }
        if let Some(line) = case.line
            && !text.contains(&format!("{}, line {line}", case.file))
        {
            wrong.push(format!("does not name line {line} of the file"));
        }
        if text.contains("panicked") {
            wrong.push("panicked".into());
        }
        if !wrong.is_empty() {
            failures.push(format!("{}: {}\n{}", case.file, wrong.join("; "), outcome.stderr));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

#[test]
fn a_broken_trace_stops_the_run_before_its_server_starts() {
    let scratch = Scratch::new();
    std::fs::copy(Path::new(CORPUS).join("mooncake-time-goes-back.jsonl"), scratch.path().join("t.jsonl"))
        .unwrap();
    // The server's command would leave a mark if it were ever started.
    let recipe = scratch.write(
        "recipe.kdl",
        r#"
server "launched" {
    engine "command"
    command "sh" "-c" "touch started; sleep 30"
    ready http="/health" timeout="2s"
}
cell "replay" server="launched" {
    trace "t.jsonl" format="mooncake"
}
"#,
    );
    let outcome = scratch.run(&recipe, &[], 2);
    assert!(unwrapped(&outcome.stderr).contains("t.jsonl, line 3"), "{}", outcome.stderr);
    assert!(!scratch.path().join("started").exists(), "the server was started");
    assert!(scratch.runs().is_empty(), "no run was recorded");
}

#[test]
fn a_trace_changed_after_the_plan_fails_its_cell_unmeasured() {
    let scratch = Scratch::new();
    let line = |at: u32| format!("{{\"timestamp\": {at}, \"input_length\": 16, \"output_length\": 2}}\n");
    scratch.write("t.jsonl", &format!("{}{}", line(0), line(10)));
    scratch.write("more.jsonl", &line(20));
    // A step before the cell appends to its trace: the cell's fingerprint
    // hashed the file as it was when the run planned it.
    let recipe = scratch.write(
        "recipe.kdl",
        r#"
server "sim" engine="sim"
task "append" {
    run "sh" "-c" "cat more.jsonl >> t.jsonl"
}
cell "replay" server="sim" after="append" {
    trace "t.jsonl" format="mooncake" block-tokens=16
}
"#,
    );
    let outcome = scratch.run(&recipe, &["--json"], 1);
    let transcript = outcome.transcript();
    assert!(transcript.contains("t.jsonl changed after the plan fingerprinted it"), "{transcript}");
    assert_eq!(fault_of(&outcome.json(), "replay"), "input-changed", "{transcript}");
    assert_eq!(scratch.last_run_statuses().get("replay").map(String::as_str), Some("failed"));
    // Run again: planned anew from the file as it is, the cell is measured.
    scratch.run(&recipe, &[], 0);
    assert_eq!(scratch.last_run_statuses().get("replay").map(String::as_str), Some("ran"));
}

#[test]
fn a_line_that_says_two_things_stops_the_plan_and_the_run() {
    let scratch = Scratch::new();
    std::fs::copy(
        Path::new(CORPUS).join("jsonl-prompt-and-input-tokens.jsonl"),
        scratch.path().join("t.jsonl"),
    )
    .unwrap();
    let recipe = scratch.write(
        "recipe.kdl",
        "server \"sim\" engine=\"sim\"\ncell \"c\" server=\"sim\" {\n    trace \"t.jsonl\" format=\"jsonl\"\n}\n",
    );
    let says = "trace t.jsonl, line 2: holds both `input_tokens` and `prompt`, which exclude each other";
    let plan = scratch.anvil(&["plan", "recipe.kdl"]).expect_code(2);
    assert!(unwrapped(&plan.stderr).contains(says), "{}", plan.stderr);
    assert!(plan.stderr.contains("[recipe.kdl:3:5]"), "{}", plan.stderr);
    let run = scratch.run(&recipe, &[], 2);
    assert!(unwrapped(&run.stderr).contains(says), "{}", run.stderr);
    assert!(scratch.runs().is_empty(), "no run was recorded");
}

#[test]
fn an_unknown_key_is_a_warning_at_its_first_line_and_the_plan_goes_on() {
    let scratch = Scratch::new();
    // `promt` (a typo) on lines 3 and 4, `user` (a field of the source's own) on line 4.
    scratch.write(
        "t.jsonl",
        concat!(
            "{\"timestamp_ms\": 0, \"input_tokens\": 16, \"output_tokens\": 2}\n",
            "\n",
            "{\"timestamp_ms\": 10, \"input_tokens\": 16, \"promt\": \"hello\", \"output_tokens\": 2}\n",
            "{\"timestamp_ms\": 20, \"input_tokens\": 16, \"promt\": \"again\", \"output_tokens\": 2, \"user\": 7}\n",
        ),
    );
    scratch.write(
        "d.json",
        "[\n {\"id\": \"a\",\n  \"conversations\": [{\"from\": \"human\", \"value\": \"hi\", \"lang\": \"en\"}]}\n]\n",
    );
    let recipe = scratch.write(
        "recipe.kdl",
        concat!(
            "server \"sim\" engine=\"sim\"\n",
            "cell \"replay\" server=\"sim\" {\n    trace \"t.jsonl\" format=\"jsonl\"\n}\n",
            "cell \"again\" server=\"sim\" {\n    trace \"t.jsonl\" format=\"jsonl\" time-scale=0.5\n}\n",
            "cell \"prompts\" server=\"sim\" {\n    dataset \"d.json\" format=\"sharegpt\"\n    requests 2\n}\n",
        ),
    );
    let expected = [
        "warning: trace t.jsonl, line 3: unknown key `promt`, ignored (did you mean `prompt`?)\n",
        "warning: trace t.jsonl, line 4: unknown key `user`, ignored (a line reads `timestamp_ms`, \
         `input_tokens`, `prompt`, `output_tokens`, `session`, `prefix`, `prefix_tokens`)\n",
        "warning: dataset d.json, line 3: unknown key `lang`, ignored (a turn reads `from`, `value`)\n",
    ];
    // Warnings go to stderr: `plan --json` still prints its JSON alone.
    let plan = scratch.anvil(&["plan", "recipe.kdl", "--json"]).expect_code(0);
    plan.json();
    for warning in expected {
        assert_eq!(
            plan.stderr.matches(warning).count(),
            1,
            "once per key per file: {warning}\n{}",
            plan.stderr
        );
    }
    assert_eq!(plan.stderr.matches("warning:").count(), expected.len(), "{}", plan.stderr);
    let run = scratch.run(&recipe, &[], 0);
    assert_eq!(run.summary().failed, 0);
    assert!(run.stderr.contains(expected[0]), "{}", run.transcript());
}
