//! `anvil export-data --format parquet`, read back by someone else's
//! reader: pyarrow reads the tables of a 10,000-request cell and a small
//! open-loop one, and every value equals the artifact's JSON record. The
//! test needs Python with pyarrow (scripts/test.sh installs it); without it
//! the test says it skipped, unless `ANVIL_REQUIRE_PYARROW=1` (CI).

use crate::common::Scratch;

fn pyarrow_available() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import pyarrow"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        if std::env::var("ANVIL_REQUIRE_PYARROW").is_ok_and(|v| v == "1") {
            panic!("ANVIL_REQUIRE_PYARROW=1 but python3 cannot import pyarrow");
        }
        eprintln!("NOTICE: export_data skipped: no pyarrow here (scripts/test.sh installs it)");
    }
    found
}

#[test]
fn parquet_tables_read_back_in_pyarrow_equal_to_the_json_records() {
    if !pyarrow_available() {
        return;
    }
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "tables.kdl",
        r#"
server "sim" { model "m"; sim { prefill-tok-s 2000000; decode-step-ms 1; max-running-seqs 256; } }
workload "many" { context-tokens 32; max-tokens 4; concurrency 64; requests 10000; warmup-requests 0; canaries #false; }
workload "paced" { context-tokens 64; max-tokens 8; arrival "poisson"; rate 200; requests 200; }
cell "big" server="sim" workload="many"
cell "open" server="sim" workload="paced"
"#,
    );
    scratch.run(&recipe, &[], 0);
    let out = scratch
        .anvil(&["export-data", recipe.to_str().unwrap(), "--format", "parquet", "-o", "data"])
        .expect_code(0);
    assert!(out.stdout.contains("(10200 rows)"), "{}", out.stdout);
    let mut args = vec![
        env!("CARGO_MANIFEST_DIR").to_string() + "/tests/fixtures/parquet_matches_json.py",
        scratch.path().join("data").display().to_string(),
    ];
    for cell in ["big", "open"] {
        let artifact = scratch.stored_path(&recipe, cell, "benchmark.json");
        args.push(format!("{cell}={}", artifact.display()));
    }
    let check = std::process::Command::new("python3").args(&args).output().expect("run python3");
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{stdout}{}", String::from_utf8_lossy(&check.stderr));
    assert!(stdout.starts_with("ok: 10200 request rows"), "{stdout}");
}

#[test]
fn a_target_without_cells_is_an_input_error() {
    let scratch = Scratch::new();
    let out = scratch.anvil(&["export-data", "no-such-run", "-o", "data"]).expect_code(2);
    assert!(out.stderr.contains("no-such-run"), "{}", out.stderr);
    assert!(!scratch.path().join("data").exists(), "nothing written for bad input");
}
