//! Bad input: every class of recipe error exits with code 2 and points at
//! the place in the file (`recipe.kdl:LINE:COL`) with a labelled span; and
//! no input, however broken, makes anvil panic.

use crate::common::{Rng, Scratch};

/// Write `text` as recipe.kdl, plan it, and expect a rejection that points
/// at `location` ("LINE:COL") and says each of `says`.
fn assert_rejected(text: &str, location: &str, says: &[&str]) -> String {
    assert_rejected_with(text, &[], location, says)
}

fn assert_rejected_with(text: &str, extra: &[&str], location: &str, says: &[&str]) -> String {
    let scratch = Scratch::new();
    scratch.write("recipe.kdl", text);
    let mut args = vec!["plan", "recipe.kdl"];
    args.extend_from_slice(extra);
    let outcome = scratch.anvil(&args).expect_code(2);
    let stderr = &outcome.stderr;
    assert!(
        stderr.contains(&format!("[recipe.kdl:{location}]")) || stderr.contains(&format!("[{location}]")),
        "expected a span at {location}:\n{stderr}"
    );
    assert!(stderr.contains('×'), "rendered as a diagnostic:\n{stderr}");
    assert!(stderr.contains("╰──"), "the span carries a label:\n{stderr}");
    for needle in says {
        assert!(stderr.contains(needle), "expected {needle:?} in:\n{stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    outcome.stderr
}

#[test]
fn kdl_syntax_error() {
    assert_rejected(
        "task \"a\" {\n    run \"sh\" \"-c\" \"true\"\n\ntask \"b\" { run \"x\"; }\n",
        "1:10",
        &["No closing '}'"],
    );
}

#[test]
fn bare_true_hints_at_hash_true() {
    assert_rejected("workload \"w\" {\n    canaries true\n}\n", "2:14", &["#true"]);
}

#[test]
fn unknown_declaration_kind_suggests_the_near_one() {
    assert_rejected(
        "tsak \"a\" {\n    run \"x\"\n}\n",
        "1:1",
        &["unknown declaration `tsak`", "did you mean `task`?"],
    );
}

#[test]
fn unknown_setting_suggests_the_near_one() {
    assert_rejected(
        "task \"a\" {\n    run \"x\"\n    timeoutt \"5s\"\n}\n",
        "3:5",
        &["unknown setting `timeoutt`", "did you mean `timeout`?"],
    );
}

#[test]
fn unknown_property_on_the_declaration_line_suggests_the_near_one() {
    assert_rejected(
        "task \"a\" runn=\"x\" {\n    run \"x\"\n}\n",
        "1:10",
        &["unknown setting `runn`", "did you mean `run`?"],
    );
}

#[test]
fn wrong_type() {
    assert_rejected(
        "workload \"w\" {\n    requests \"many\"\n}\n",
        "2:14",
        &["`requests` expects an integer", "the string \"many\""],
    );
}

#[test]
fn missing_required_setting() {
    assert_rejected("task \"a\" {\n    timeout \"5s\"\n}\n", "1:6", &["task `a` needs `run`"]);
}

#[test]
fn unknown_server_reference() {
    let text = "server \"sim\" {\n    engine \"sim\"\n}\ncell \"c\" server=\"nope\"\n";
    assert_rejected(text, "4:10", &["unknown server `nope`"]);
}

#[test]
fn unknown_after_reference() {
    let text = "task \"first\" { run \"x\"; }\ntask \"b\" after=\"frist\" { run \"y\"; }\n";
    assert_rejected(text, "2:10", &["unknown step `frist`", "did you mean `first`?"]);
}

#[test]
fn dependency_cycle_through_after() {
    let text = "task \"a\" after=\"b\" { run \"x\"; }\ntask \"b\" after=\"a\" { run \"y\"; }\n";
    assert_rejected(text, "1:6", &["dependency cycle", "task.a → task.b → task.a"]);
}

#[test]
fn duplicate_name() {
    let text = "task \"a\" { run \"x\"; }\ntask \"a\" { run \"y\"; }\n";
    assert_rejected(text, "2:6", &["duplicate name `a`", "first declared at recipe.kdl:1:6"]);
}

#[test]
fn bad_duration() {
    assert_rejected(
        "task \"a\" {\n    run \"x\"\n    timeout \"5 parsecs\"\n}\n",
        "3:13",
        &["bad duration \"5 parsecs\""],
    );
}

#[test]
fn plain_number_is_not_a_duration() {
    assert_rejected("task \"a\" {\n    run \"x\"\n    timeout 5\n}\n", "3:13", &["expects a duration"]);
}

#[test]
fn unknown_placeholder() {
    let text = "param \"depth\" 8\ntask \"a\" {\n    run \"echo\" \"{dpeth}\"\n}\n";
    assert_rejected(text, "3:16", &["unknown placeholder `{dpeth}`", "did you mean `depth`?"]);
}

#[test]
fn bad_gate_expression() {
    let text = "task \"a\" { run \"x\"; }\ngate \"g\" {\n    require \"task.a.exit_code ==\"\n}\n";
    assert_rejected(text, "3:33", &["in gate `g`", "end of expression"]);
}

#[test]
fn gate_reading_an_unknown_step() {
    let text = "task \"a\" { run \"x\"; }\ngate \"g\" {\n    require \"task.b.exit_code == 0\"\n}\n";
    // The span is the expression itself, inside the quotes.
    assert_rejected(text, "3:14", &["there is no task `b`"]);
}

#[test]
fn unknown_set_param() {
    let text = "param \"depth\" 8\ntask \"a\" { run \"echo\" \"{depth}\"; }\n";
    let stderr = assert_rejected_with(
        text,
        &["--set", "detph=12"],
        "--set:1:1",
        &["no param `detph`", "did you mean `depth`?"],
    );
    assert!(stderr.contains("[--set:1:1]"), "{stderr}");
}

#[test]
fn set_value_of_the_wrong_type() {
    let text = "param \"depth\" 8\ntask \"a\" { run \"echo\" \"{depth}\"; }\n";
    assert_rejected_with(text, &["--set", "depth=deep"], "--set:1:7", &["param `depth`"]);
}

#[test]
fn several_problems_are_reported_together() {
    let text = "\
task \"a\" {
    run \"x\"
    timeoutt \"5s\"
}
task \"b\" {
    run \"y\"
    timeout \"soon\"
}
cell \"c\" server=\"nope\"
";
    let stderr = assert_rejected(
        text,
        "3:5",
        &["has 3 problems", "unknown setting `timeoutt`", "bad duration \"soon\"", "unknown server `nope`"],
    );
    for location in ["recipe.kdl:7:13", "recipe.kdl:9:10"] {
        assert!(stderr.contains(location), "expected {location}:\n{stderr}");
    }
}

#[test]
fn a_missing_recipe_file_is_bad_input() {
    let scratch = Scratch::new();
    let outcome = scratch.anvil(&["plan", "no-such-recipe.kdl"]).expect_code(2);
    assert!(outcome.stderr.contains("no-such-recipe.kdl"), "{}", outcome.transcript());
}

#[test]
fn run_rejects_a_bad_recipe_before_executing_anything() {
    let scratch = Scratch::new();
    let text = "task \"a\" { run \"sh\" \"-c\" \"echo a > ran.txt\"; }\ntask \"b\" { run \"y\"; timeout \"never\"; }\n";
    let recipe = scratch.write("recipe.kdl", text);
    scratch.run(&recipe, &[], 2);
    assert!(!scratch.path().join("ran.txt").exists(), "a bad recipe runs nothing");
    assert!(scratch.runs().is_empty());
}

#[test]
fn unknown_flags_are_bad_input() {
    let scratch = Scratch::new();
    scratch.anvil(&["run", "--no-such-flag", "x.kdl"]).expect_code(2);
    scratch.anvil(&["frobnicate"]).expect_code(2);
}

/// Plan `text` and check that anvil ends with an exit code, not a panic.
fn assert_no_panic(scratch: &Scratch, name: &str, bytes: &[u8]) {
    let path = scratch.path().join(name);
    std::fs::write(&path, bytes).expect("write fuzz input");
    let outcome = scratch.anvil(&["plan", name, "--json"]);
    let shown = String::from_utf8_lossy(bytes);
    assert!(
        matches!(outcome.code, Some(0..=2)),
        "exit {:?} for input:\n{shown}\n{}",
        outcome.code,
        outcome.transcript()
    );
    assert!(!outcome.stderr.contains("panicked"), "panic for input:\n{shown}\n{}", outcome.transcript());
}

#[test]
fn random_bytes_never_panic() {
    let scratch = Scratch::new();
    let mut rng = Rng::new(0x5eed_0001);
    // Biased towards KDL's own characters so the parser gets past byte one.
    let alphabet: &[u8] = b"{}\"=#;/\\\n ()*-.0123456789abcdefghijklmnopqrstuvwxyz_\t\r";
    for i in 0..150 {
        let len = rng.below(300) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(4) == 0 {
                    rng.next() as u8
                } else {
                    alphabet[rng.below(alphabet.len() as u64) as usize]
                }
            })
            .collect();
        assert_no_panic(&scratch, &format!("random-{i}.kdl"), &bytes);
    }
}

/// Pieces that tend to reach deeper code when spliced into a valid recipe.
const SPLICES: &[&str] = &[
    "{",
    "}",
    "\"",
    "#true",
    "true",
    "#null",
    ";",
    "\n",
    "=",
    "/*",
    "*/",
    "//",
    "\\",
    " after=\"fast\"",
    " extends=\"sim-base\"",
    " abstract=#true",
    "\nsweep \"d\" 1 2 3\n",
    "{concurrency}",
    "{d}",
    "{{",
    "}}",
    " server=\"sim-fast\"",
    " workload=\"short-chat\"",
    "-1",
    "99999999999999999999999",
    "1.5e308",
    "\"\"",
    "é",
    "🦀",
    "\u{0}",
    "\ngate \"x\" { require \"cell.fast.aggregate_tok_s > \"; }\n",
    "\ntask \"t\" after=\"t\" { run \"x\"; }\n",
    "include \"recipe.kdl\"\n",
];

fn mutate(rng: &mut Rng, text: &str) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(bytes.len() as u64 + 1) as usize;
        match rng.below(4) {
            0 => {
                let end = (at + rng.below(20) as usize).min(bytes.len());
                bytes.drain(at..end);
            }
            1 => {
                let splice = SPLICES[rng.below(SPLICES.len() as u64) as usize];
                bytes.splice(at..at, splice.bytes());
            }
            2 if !bytes.is_empty() => {
                let i = rng.below(bytes.len() as u64) as usize;
                bytes[i] = rng.next() as u8;
            }
            _ => {
                // Duplicate a stretch (repeats names, settings, braces).
                let end = (at + rng.below(80) as usize).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                bytes.splice(end..end, copy);
            }
        }
    }
    bytes
}

#[test]
fn mutated_recipes_never_panic() {
    let scratch = Scratch::new();
    let mut rng = Rng::new(0x5eed_0002);
    let seeds = [
        include_str!("../recipes/quickstart.kdl"),
        include_str!("fixtures/recipes/cache.kdl"),
        include_str!("fixtures/recipes/sweeps.kdl"),
        include_str!("fixtures/recipes/gates.kdl"),
    ];
    for i in 0..200 {
        let seed = seeds[rng.below(seeds.len() as u64) as usize];
        let bytes = mutate(&mut rng, seed);
        assert_no_panic(&scratch, "recipe.kdl", &bytes);
        if i % 50 == 0 {
            // Keep the one store from growing: plans write nothing, but be sure.
            assert!(scratch.anvil(&["store", "verify"]).code == Some(0));
        }
    }
}

/// A recipe error that only a later wave can find (an upstream result fills
/// a setting with a value of the wrong type) exits 2 with its span, as at
/// plan time, not 1 with a bare message.
#[test]
fn a_recipe_error_found_in_a_later_wave_exits_2_with_its_span() {
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "wave.kdl",
        r#"server "sim" { model "m"; }
cell "v-{x}" server="sim" { sweep "x" "a" "b"; requests 4; max-tokens 8; context-tokens 16; }
screen "s" { over "cell.v-*"; metric "aggregate_tok_s"; }
cell "w" server="sim" { requests "{screen.s.winner}"; max-tokens 8; }
"#,
    );
    let outcome = scratch.run(&recipe, &[], 2);
    let text = outcome.transcript();
    assert!(text.contains("`requests` expects an integer"), "{text}");
    assert!(text.contains("wave.kdl:4:"), "{text}");
}
