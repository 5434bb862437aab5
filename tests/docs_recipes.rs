//! Every recipe in docs/recipes.md must be one that anvil accepts, and every
//! error shown there must be the error anvil prints.
//!
//! Conventions of the document:
//! - ```kdl        a complete recipe: `anvil plan` must exit 0.
//! - ```kdl,error  a broken recipe: `anvil plan` must exit 2 and print, on
//!   stderr, exactly the ```text block that follows it.
//! - A ```kdl block whose first line is `// file: NAME` is a file that other
//!   examples include; it is written as NAME next to every example and is
//!   not planned on its own.
//!
//! Each example is written as `recipe.kdl` in a fresh temporary directory and
//! planned from there, so error messages name `recipe.kdl`.

use std::path::Path;

use assert_cmd::Command;

const DOC: &str = include_str!("../docs/recipes.md");

#[derive(Debug)]
enum Expect {
    Success,
    /// Exit status 2 and this text on stderr.
    Error(String),
}

#[derive(Debug)]
struct Example {
    /// 1-based line of the opening fence, for failure messages.
    line: usize,
    recipe: String,
    expect: Expect,
}

/// An included file: `// file: NAME` on its first line.
struct IncludedFile {
    name: String,
    text: String,
}

struct Fenced {
    line: usize,
    info: String,
    body: String,
}

/// Every fenced block of the document, with its info string.
fn fenced_blocks(doc: &str) -> Vec<Fenced> {
    let mut blocks = Vec::new();
    let mut lines = doc.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let mut body = String::new();
        let mut closed = false;
        for (_, inner) in lines.by_ref() {
            if inner.trim_start().starts_with("```") {
                closed = true;
                break;
            }
            body.push_str(inner);
            body.push('\n');
        }
        assert!(closed, "docs/recipes.md:{}: code block is never closed", i + 1);
        blocks.push(Fenced { line: i + 1, info: info.trim().to_string(), body });
    }
    blocks
}

fn examples(doc: &str) -> (Vec<Example>, Vec<IncludedFile>) {
    let blocks = fenced_blocks(doc);
    let mut examples = Vec::new();
    let mut files = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        match block.info.as_str() {
            "kdl" => {
                match block.body.lines().next().and_then(|first| first.trim().strip_prefix("// file:")) {
                    Some(name) => {
                        files.push(IncludedFile { name: name.trim().to_string(), text: block.body.clone() })
                    }
                    None => examples.push(Example {
                        line: block.line,
                        recipe: block.body.clone(),
                        expect: Expect::Success,
                    }),
                }
            }
            "kdl,error" => {
                let shown = blocks.get(i + 1).filter(|next| next.info == "text").unwrap_or_else(|| {
                    panic!("docs/recipes.md:{}: a ```kdl,error block must be followed by the ```text block of its error", block.line)
                });
                examples.push(Example {
                    line: block.line,
                    recipe: block.body.clone(),
                    expect: Expect::Error(shown.body.clone()),
                });
            }
            _ => {}
        }
    }
    (examples, files)
}

/// Trailing spaces and surrounding blank lines are not part of an error's meaning.
fn normalized(text: &str) -> String {
    text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n").trim_matches('\n').to_string()
}

/// The files the examples name (`reads`, a CA bundle, tokenizers): the plan
/// reads every input before it runs, so each example gets them next to it,
/// and a Hugging Face cache that holds `hf:Qwen/Qwen3-8B` (SmolLM2's
/// tokenizer standing in: only its being there and loading is checked).
fn write_named_inputs(dir: &Path) -> std::path::PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    copy_tree(&fixtures.join("docs-inputs"), dir);
    copy_tree(&fixtures.join("tokenizers"), &dir.join("tokenizers"));
    let hub = dir.join("hf-hub");
    let model = hub.join("models--Qwen--Qwen3-8B");
    let snapshot = model.join("snapshots/0000000");
    std::fs::create_dir_all(&snapshot).expect("hub snapshot");
    std::fs::create_dir_all(model.join("refs")).expect("hub refs");
    std::fs::write(model.join("refs/main"), "0000000").expect("hub ref");
    std::fs::copy(fixtures.join("tokenizers/smollm2-135m/tokenizer.json"), snapshot.join("tokenizer.json"))
        .expect("hub tokenizer");
    hub
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a fixture folder");
    for entry in std::fs::read_dir(from).expect("read a fixture folder") {
        let path = entry.expect("a fixture").path();
        let target = to.join(path.file_name().expect("a name"));
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy a fixture");
        }
    }
}

/// Plan one example; `None` when it behaves as the document says.
fn check(example: &Example, files: &[IncludedFile]) -> Option<String> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let hub = write_named_inputs(dir.path());
    for file in files {
        write(dir.path(), &file.name, &file.text);
    }
    write(dir.path(), "recipe.kdl", &example.recipe);
    let output = Command::cargo_bin("anvil")
        .expect("the anvil binary is built")
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("HF_HUB_CACHE", &hub)
        .env_remove("ANVIL_STORE")
        .args(["plan", "recipe.kdl", "--store"])
        .arg(dir.path().join("store"))
        .output()
        .expect("anvil runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code();
    let place = format!("docs/recipes.md:{}", example.line);
    match &example.expect {
        Expect::Success if code == Some(0) => None,
        Expect::Success => Some(format!("{place}: expected exit 0, got {code:?}\n{stderr}")),
        Expect::Error(shown) => {
            if code != Some(2) {
                return Some(format!("{place}: expected exit 2, got {code:?}\n{stderr}"));
            }
            let (printed, shown) = (normalized(&stderr), normalized(shown));
            (printed != shown).then(|| format!("{place}: the error shown differs from what anvil prints.\n--- shown:\n{shown}\n--- printed:\n{printed}"))
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create include directory");
    }
    std::fs::write(&path, text).expect("write example");
}

#[test]
fn every_recipe_in_the_docs_plans_and_every_error_is_the_one_shown() {
    let (examples, files) = examples(DOC);
    // Guard against a parser that silently finds nothing.
    let errors = examples.iter().filter(|e| matches!(e.expect, Expect::Error(_))).count();
    assert!(
        examples.len() - errors >= 20,
        "expected at least 20 recipes in docs/recipes.md, found {}",
        examples.len() - errors
    );
    assert!(errors >= 3, "expected at least 3 error examples, found {errors}");
    assert!(!files.is_empty(), "expected at least one `// file:` block for the include example");

    let failures: Vec<String> = examples.iter().filter_map(|example| check(example, &files)).collect();
    assert!(
        failures.is_empty(),
        "{} of {} examples disagree with anvil:\n\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n\n")
    );
}

/// `anvil plan --json` of a recipe: step name → fingerprint.
fn fingerprints(recipe: &str) -> std::collections::BTreeMap<String, String> {
    let dir = tempfile::tempdir().expect("temporary directory");
    write(dir.path(), "recipe.kdl", recipe);
    let output = Command::cargo_bin("anvil")
        .expect("the anvil binary is built")
        .current_dir(dir.path())
        .args(["plan", "recipe.kdl", "--json", "--store"])
        .arg(dir.path().join("store"))
        .output()
        .expect("anvil runs");
    assert!(output.status.success(), "plan --json failed: {}", String::from_utf8_lossy(&output.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).expect("plan --json prints JSON");
    plan["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap_or_default().to_string(),
                n["fingerprint"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The fingerprint section claims two differently written recipes plan alike.
#[test]
fn the_two_equivalent_recipes_have_the_same_fingerprints() {
    const CLAIM: &str = "These two recipes plan to the same fingerprints";
    let at = DOC.find(CLAIM).expect("the fingerprint section states its claim");
    let line = DOC[..at].lines().count();
    let (examples, _) = examples(DOC);
    let pair: Vec<&Example> = examples.iter().filter(|e| e.line > line).take(2).collect();
    assert_eq!(pair.len(), 2, "two examples follow the claim");
    let (a, b) = (fingerprints(&pair[0].recipe), fingerprints(&pair[1].recipe));
    for step in ["t", "sim", "c"] {
        assert!(a.contains_key(step), "step `{step}` in the first recipe");
        assert_eq!(a.get(step), b.get(step), "step `{step}` has the same fingerprint in both recipes");
    }
}

#[test]
fn included_files_are_included_by_some_example() {
    let (examples, files) = examples(DOC);
    for file in &files {
        let needle = format!("include \"{}\"", file.name);
        assert!(
            examples.iter().any(|e| e.recipe.contains(&needle)),
            "`// file: {}` is included by no example",
            file.name
        );
    }
}

#[test]
fn the_parser_sees_fences_and_error_pairs() {
    let doc = "text\n```kdl\ntask \"a\" { run \"true\"; }\n```\n```kdl,error\nbad\n```\n\n```text\n  × oops\n```\n```kdl\n// file: x.kdl\ntask \"b\" { run \"true\"; }\n```\n";
    let (examples, files) = examples(doc);
    assert_eq!(examples.len(), 2);
    assert!(matches!(examples[0].expect, Expect::Success));
    assert_eq!(examples[0].line, 2);
    match &examples[1].expect {
        Expect::Error(text) => assert_eq!(normalized(text), "  × oops"),
        other => panic!("expected an error example, got {other:?}"),
    }
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].name, "x.kdl");
}
