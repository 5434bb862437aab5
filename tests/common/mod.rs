//! Shared by the end-to-end tests: a scratch directory with its own store,
//! a way to run the real `anvil` binary in it, and readers for its output.
#![allow(dead_code)] // each test module uses a different part of this module

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

pub mod protocol;
pub mod test_code;

/// No single anvil invocation in these tests should take this long; the
/// limit only keeps a hung binary from hanging the suite.
const COMMAND_LIMIT: Duration = Duration::from_secs(180);

/// A temporary directory holding recipes, a store (`store/`) and whatever
/// the recipes' tasks write (they run with the recipe's directory as cwd).
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch { dir: tempfile::tempdir().expect("create a temporary directory") }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn store(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    /// Write a file (creating parent directories) and return its absolute path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent directory");
        }
        std::fs::write(&path, text).expect("write file");
        path
    }

    /// The text of a file in the scratch directory, or "" when it does not exist.
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    /// An `anvil` command with this scratch store, run from the scratch directory.
    pub fn command(&self) -> std::process::Command {
        let mut command = std::process::Command::new(anvil_binary());
        command.current_dir(self.dir.path()).env("ANVIL_STORE", self.store()).env("NO_COLOR", "1");
        command
    }

    /// Run `anvil ARGS…` to the end.
    pub fn anvil(&self, args: &[&str]) -> Outcome {
        self.anvil_within(args, COMMAND_LIMIT)
    }

    /// Run `anvil ARGS…` to the end, killed after `limit` (a real engine
    /// that takes minutes to start needs more than [`COMMAND_LIMIT`]).
    pub fn anvil_within(&self, args: &[&str], limit: Duration) -> Outcome {
        let mut command = assert_cmd::Command::new(anvil_binary());
        command
            .current_dir(self.dir.path())
            .env("ANVIL_STORE", self.store())
            .env("NO_COLOR", "1")
            .args(args)
            .timeout(limit);
        Outcome::from_output(args, command.output().expect("start anvil"))
    }

    /// `anvil plan RECIPE --json [extra…]`, which must succeed.
    pub fn plan(&self, recipe: &Path, extra: &[&str]) -> Plan {
        let recipe = recipe.to_str().expect("utf-8 path");
        let mut args = vec!["plan", recipe, "--json"];
        args.extend_from_slice(extra);
        Plan(self.anvil(&args).expect_code(0).json())
    }

    /// `anvil run RECIPE [extra…]` with the exit code it must end with.
    pub fn run(&self, recipe: &Path, extra: &[&str], code: i32) -> Outcome {
        let recipe = recipe.to_str().expect("utf-8 path");
        let mut args = vec!["run", recipe];
        args.extend_from_slice(extra);
        self.anvil(&args).expect_code(code)
    }

    /// The recorded runs, oldest first (`anvil runs --json`).
    pub fn runs(&self) -> Vec<Value> {
        match self.anvil(&["runs", "--json"]).expect_code(0).json() {
            Value::Array(runs) => runs,
            other => panic!("runs --json is not a list: {other}"),
        }
    }

    /// Node name → status in the newest recorded run.
    pub fn last_run_statuses(&self) -> BTreeMap<String, String> {
        let runs = self.runs();
        let last = runs.last().expect("at least one recorded run");
        node_map(&last["nodes"], "status")
    }
}

/// The binary under test, built by cargo for integration tests.
pub fn anvil_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_anvil"))
}

/// What one anvil invocation did.
pub struct Outcome {
    pub args: String,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub fn from_output(args: &[&str], output: Output) -> Outcome {
        Outcome {
            args: args.join(" "),
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Fail the test, showing everything anvil printed, unless it exited with `code`.
    pub fn expect_code(self, code: i32) -> Outcome {
        assert_eq!(
            self.code,
            Some(code),
            "`anvil {}` exited with {:?}, expected {code}\n{}",
            self.args,
            self.code,
            self.transcript()
        );
        self
    }

    pub fn transcript(&self) -> String {
        format!("--- stdout ---\n{}\n--- stderr ---\n{}", self.stdout, self.stderr)
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|err| {
            panic!("`anvil {}` did not print JSON ({err})\n{}", self.args, self.transcript())
        })
    }

    /// The counts of the run's last line: "ok: 2 ran, 1 cached, 0 failed, …".
    pub fn summary(&self) -> Summary {
        let line = self
            .stdout
            .lines()
            .rev()
            .find(|l| l.contains(" ran, ") && l.contains(" cached, "))
            .unwrap_or_else(|| {
                panic!("no summary line in the output of `anvil {}`\n{}", self.args, self.transcript())
            });
        let count = |word: &str| -> usize {
            let before = line.split(&format!(" {word}")).next().unwrap_or("");
            before
                .rsplit(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no `{word}` count in {line:?}"))
        };
        Summary {
            ok: line.starts_with("ok:"),
            ran: count("ran"),
            cached: count("cached"),
            failed: count("failed"),
            rejected: count("rejected"),
            skipped: count("skipped"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub ok: bool,
    pub ran: usize,
    pub cached: usize,
    pub failed: usize,
    pub rejected: usize,
    pub skipped: usize,
}

/// `plan --json`.
pub struct Plan(pub Value);

impl Plan {
    pub fn nodes(&self) -> &Vec<Value> {
        self.0["nodes"].as_array().expect("plan has nodes")
    }

    /// Step name → "cached" | "pending".
    pub fn statuses(&self) -> BTreeMap<String, String> {
        node_map(&self.0["nodes"], "status")
    }

    pub fn fingerprints(&self) -> BTreeMap<String, String> {
        node_map(&self.0["nodes"], "fingerprint")
    }

    pub fn names(&self) -> Vec<String> {
        self.nodes().iter().map(|n| n["name"].as_str().unwrap_or_default().to_string()).collect()
    }

    pub fn fingerprint(&self, name: &str) -> String {
        self.fingerprints()
            .remove(name)
            .unwrap_or_else(|| panic!("no step `{name}` in the plan: {:?}", self.names()))
    }

    /// Names of steps (servers and finally steps aside) that a run would execute.
    pub fn pending(&self) -> Vec<String> {
        self.nodes()
            .iter()
            .filter(|n| n["status"] == "pending" && n["kind"] != "server" && n["kind"] != "finally")
            .map(|n| n["name"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

fn node_map(nodes: &Value, key: &str) -> BTreeMap<String, String> {
    nodes
        .as_array()
        .map(|list| {
            list.iter()
                .map(|n| {
                    (
                        n["name"].as_str().unwrap_or_default().to_string(),
                        n[key].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The directory of a stored entry: `<store>/entries/<first two hex>/<fingerprint>`.
pub fn entry_dir(store: &Path, fingerprint: &str) -> PathBuf {
    store.join("entries").join(&fingerprint[..2]).join(fingerprint)
}

impl Scratch {
    /// A stored step's JSON file (`benchmark.json`, `result.json`), found by
    /// planning `recipe` for its fingerprint.
    pub fn stored_json(&self, recipe: &Path, step: &str, file: &str) -> serde_json::Value {
        let path = self.stored_path(recipe, step, file);
        let bytes =
            std::fs::read(&path).unwrap_or_else(|e| panic!("{step} has no {file} ({}): {e}", path.display()));
        serde_json::from_slice(&bytes).unwrap()
    }

    /// Where a step of the recipe's plan keeps one of its stored files.
    pub fn stored_path(&self, recipe: &Path, step: &str, file: &str) -> PathBuf {
        let fp = self.plan(recipe, &[]).fingerprint(step);
        entry_dir(&self.store(), &fp).join(file)
    }
}

/// A small deterministic generator (xorshift64*), so random-input tests
/// are reproducible from their seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
