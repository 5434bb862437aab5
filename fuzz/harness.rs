//! The driver shared by anvil's property tests (the "fuzz targets"). Each
//! crate includes this file with `#[path = ".../fuzz/harness.rs"] mod harness;`
//! from its tests, so one runner serves every target.
//!
//! [`check`] runs a proptest strategy against a property in batches:
//! - `PROPTEST_CASES` sets how many cases to run (each test has a moderate
//!   default, so `cargo test` stays fast);
//! - `ANVIL_FUZZ_SECONDS` bounds the whole test process: once that many
//!   seconds have passed since the first target started, every target
//!   stops after its current batch (`scripts/fuzz.sh --explore` sets both);
//! - `PROPTEST_RNG_SEED` fixes the seed. Without it every run uses a fixed
//!   seed (batch `b` of a test uses `seed + b`), so a given case count runs
//!   the same inputs on every machine: a gate that decides a landing answers
//!   the same twice. Only an exploring run (`ANVIL_FUZZ_EXPLORE` set, by
//!   `scripts/fuzz.sh --explore`) draws a fresh seed, printed with any
//!   failure; what it finds joins `fuzz/corpus/` as a regression.
//!
//! Every run prints one `fuzz-stat target=... test=... cases=N ...` line on
//! stderr (seen with `--nocapture`), and a failure prints `fuzz-fail` with
//! the shrunk input and how to replay it, then panics.
//!
//! [`corpus`] reads the checked-in seed corpus, `fuzz/corpus/<target>/`,
//! which the tests replay as fixed cases and mutate as seeds.

#![allow(dead_code)]

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngSeed, TestCaseResult, TestError, TestRunner};

/// Cases per runner: the deadline is looked at between batches.
const BATCH: u32 = 64;

/// The seed a plain `cargo test` uses.
const FIXED_SEED: u64 = 0x616e_7669_6c21;

/// How many cases to run: `PROPTEST_CASES`, else `default_cases`.
pub fn cases(default_cases: u32) -> u32 {
    match std::env::var("PROPTEST_CASES").ok().and_then(|v| v.trim().parse::<u32>().ok()) {
        Some(n) => n,
        None => default_cases,
    }
}

/// When every target of this process stops (`ANVIL_FUZZ_SECONDS` after the
/// first call), if a time bound is set.
fn deadline() -> Option<Instant> {
    static DEADLINE: OnceLock<Option<Instant>> = OnceLock::new();
    *DEADLINE.get_or_init(|| {
        let seconds = std::env::var("ANVIL_FUZZ_SECONDS").ok()?.trim().parse::<f64>().ok()?;
        Some(Instant::now() + Duration::from_secs_f64(seconds.max(0.0)))
    })
}

fn base_seed(name: &str) -> u64 {
    if let Ok(seed) = std::env::var("PROPTEST_RNG_SEED")
        && let Ok(seed) = seed.trim().parse::<u64>()
    {
        return seed;
    }
    if std::env::var_os("ANVIL_FUZZ_EXPLORE").is_none() {
        return FIXED_SEED;
    }
    // An exploring run: a fresh seed per test, from the clock and the name.
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    name.bytes().fold(nanos ^ 0x9E37_79B9_7F4A_7C15, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// Runs `test` on values of `strategy`, `cases(default_cases)` times or until
/// the deadline; panics with the shrunk failing input on a failure.
pub fn check<S>(
    target: &str,
    name: &str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> TestCaseResult,
) where
    S: Strategy,
    S::Value: Debug,
{
    let total = cases(default_cases);
    let seed = base_seed(name);
    let started = Instant::now();
    let mut done: u64 = 0;
    let mut batch: u64 = 0;
    while done < u64::from(total) {
        if done > 0 && deadline().is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let n = (u64::from(total) - done).min(u64::from(BATCH)) as u32;
        let batch_seed = seed.wrapping_add(batch);
        let config = Config {
            cases: n,
            failure_persistence: None,
            // A failure is worth the time to shrink it well.
            max_shrink_iters: 16_384,
            rng_seed: RngSeed::Fixed(batch_seed),
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        match runner.run(&strategy, &test) {
            Ok(()) => done += u64::from(n),
            Err(TestError::Fail(why, input)) => {
                report(&format!(
                    "fuzz-stat target={target} test={name} cases={done} seconds={:.1} seed={seed} failed=1",
                    started.elapsed().as_secs_f64()
                ));
                report(&format!(
                    "fuzz-fail target={target} test={name} replay: PROPTEST_RNG_SEED={batch_seed} PROPTEST_CASES={n}"
                ));
                let why = why.to_string().replace('\n', " | ");
                report(&format!("fuzz-fail target={target} test={name} reason: {why}"));
                report(&format!("fuzz-fail target={target} test={name} minimal input: {input:?}"));
                panic!("{target}/{name}: property failed: {why}\nminimal input: {input:?}");
            }
            Err(TestError::Abort(why)) => panic!("{target}/{name}: proptest aborted: {why}"),
        }
        batch += 1;
    }
    report(&format!(
        "fuzz-stat target={target} test={name} cases={done} seconds={:.1} seed={seed} failed=0",
        started.elapsed().as_secs_f64()
    ));
}

/// Prints `line` on stderr and appends it to `$ANVIL_FUZZ_STATS` when set
/// (where `scripts/fuzz.sh` collects them, apart from the test output).
fn report(line: &str) {
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("ANVIL_FUZZ_STATS") {
        use std::io::Write;
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
        if let Ok(mut file) = file {
            let _ = file.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// The folder holding `fuzz/corpus`, found upwards from the crate under test.
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|dir| dir.join("fuzz/corpus").is_dir())
        .unwrap_or_else(|| panic!("no fuzz/corpus above {}", manifest.display()))
        .to_path_buf()
}

/// The seed corpus of `target`: (file name, bytes), sorted by name. Panics
/// when it is missing or empty, so a moved corpus cannot pass silently.
pub fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = workspace_root().join("fuzz/corpus").join(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .filter(|path| path.is_file())
        .map(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            (name, bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the corpus {} is empty", dir.display());
    files
}

/// Byte-level mutations of a seed, for hostile variants of valid inputs.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Deletes `len` bytes at `at` (both taken modulo the input's length).
    Delete { at: usize, len: usize },
    /// Copies `len` bytes at `from` to `to`.
    Duplicate { from: usize, len: usize, to: usize },
    /// Swaps the bytes at two positions.
    Swap { a: usize, b: usize },
    /// Replaces the byte at `at`.
    Set { at: usize, byte: u8 },
    /// Inserts `bytes` at `at`.
    Insert { at: usize, bytes: Vec<u8> },
    /// Cuts the input at `at`.
    Truncate { at: usize },
}

impl Mutation {
    pub fn apply(&self, input: &mut Vec<u8>) {
        let len = input.len();
        let pos = |p: usize| if len == 0 { 0 } else { p % (len + 1) };
        match self {
            Mutation::Delete { at, len: n } => {
                let start = pos(*at).min(len);
                let end = (start + n).min(len);
                input.drain(start..end);
            }
            Mutation::Duplicate { from, len: n, to } => {
                let start = pos(*from).min(len);
                let end = (start + n).min(len);
                let copy = input[start..end].to_vec();
                let to = pos(*to).min(input.len());
                input.splice(to..to, copy);
            }
            Mutation::Swap { a, b } => {
                if len > 0 {
                    input.swap(a % len, b % len);
                }
            }
            Mutation::Set { at, byte } => {
                if len > 0 {
                    input[at % len] = *byte;
                }
            }
            Mutation::Insert { at, bytes } => {
                let at = pos(*at).min(len);
                input.splice(at..at, bytes.iter().copied());
            }
            Mutation::Truncate { at } => input.truncate(pos(*at)),
        }
    }
}

/// A mutation whose inserted bytes come from `insert`.
pub fn mutation(insert: impl Strategy<Value = Vec<u8>> + 'static) -> impl Strategy<Value = Mutation> {
    use proptest::prelude::*;
    prop_oneof![
        (any::<usize>(), 1usize..8).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 1usize..16, any::<usize>()).prop_map(|(from, len, to)| Mutation::Duplicate {
            from,
            len,
            to
        }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap { a, b }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        (any::<usize>(), insert).prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

/// A seed from `seeds`, mutated up to `max_mutations` times.
pub fn mutated(
    seeds: Vec<Vec<u8>>,
    insert: impl Strategy<Value = Vec<u8>> + 'static,
    max_mutations: usize,
) -> impl Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    (proptest::sample::select(seeds), proptest::collection::vec(mutation(insert), 0..=max_mutations))
        .prop_map(|(mut input, mutations)| {
            for m in &mutations {
                m.apply(&mut input);
            }
            input
        })
}
