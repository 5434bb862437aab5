//! Evidence bundles end to end: a campaign exported, imported into a fresh
//! store elsewhere (every step then plans as cached), verified by
//! re-derivation; a damaged bundle refused with the member named; a doctored
//! figure whose hashes were fixed up still caught; no secret exported.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::common::Scratch;
use serde_json::Value;

const QUICKSTART: &str = include_str!("../recipes/quickstart.kdl");

/// A scratch folder with the quickstart run once and exported.
fn exported() -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    let recipe = scratch.write("recipes/quickstart.kdl", QUICKSTART);
    scratch.run(&recipe, &[], 0);
    let outcome = scratch.anvil(&["export", "recipes/quickstart.kdl", "-o", "campaign.anvil"]).expect_code(0);
    assert!(outcome.stdout.contains("bundle blake3:"), "{}", outcome.transcript());
    let bundle = scratch_path(&scratch, "campaign.anvil");
    (scratch, bundle)
}

fn scratch_path(scratch: &Scratch, name: &str) -> PathBuf {
    scratch.path().join(name)
}

/// Every member of a bundle, in order, with its bytes.
fn members(bundle: &Path) -> Vec<(String, Vec<u8>)> {
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

fn repack(members: &[(String, Vec<u8>)], out: &Path) {
    let file = std::fs::File::create(out).expect("create bundle");
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(file, flate2::Compression::fast()));
    for (name, bytes) in members {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        builder.append_data(&mut header, name, &bytes[..]).expect("append");
    }
    builder.into_inner().expect("finish tar").finish().expect("finish gzip");
}

#[test]
fn a_campaign_round_trips_into_a_fresh_store_elsewhere() {
    let (_scratch, bundle) = exported();
    let elsewhere = Scratch::new();
    let bundle_arg = bundle.to_str().expect("utf-8");
    let imported = elsewhere.anvil(&["import", bundle_arg, "--into", "theirs"]).expect_code(0);
    assert!(
        imported.stdout.contains("10 stored steps added, 0 already present"),
        "{}",
        imported.transcript()
    );

    let plan = elsewhere.plan(&elsewhere.path().join("theirs/quickstart.kdl"), &[]);
    let statuses = plan.statuses();
    assert!(
        statuses.values().all(|s| s == "cached" || s == "idle"),
        "imported steps plan as cached: {statuses:?}"
    );

    let again = elsewhere.anvil(&["import", bundle_arg, "--into", "theirs"]).expect_code(0);
    assert!(again.stdout.contains("0 stored steps added, 10 already present"), "{}", again.transcript());
    assert!(again.stdout.contains("the run was already recorded"), "{}", again.transcript());

    let verified = elsewhere.anvil(&["verify", bundle_arg]).expect_code(0);
    assert!(verified.stdout.contains("verified: clean"), "{}", verified.transcript());
    assert!(
        verified.stdout.contains("5 gates, screens and decisions evaluated again"),
        "{}",
        verified.transcript()
    );
}

#[test]
fn a_flipped_byte_in_any_member_is_refused_with_the_member_named() {
    let (scratch, bundle) = exported();
    let original = members(&bundle);
    // One member of each kind: recipe, run record, a stored result, a campaign output.
    let targets: Vec<usize> = ["recipe/", "run.json", "/result.json", "outputs/"]
        .iter()
        .map(|needle| {
            original.iter().position(|(name, _)| name.contains(needle)).expect("member kind present")
        })
        .collect();
    for index in targets {
        let mut damaged = original.clone();
        let name = damaged[index].0.clone();
        let bytes = &mut damaged[index].1;
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
        let path = scratch_path(&scratch, "damaged.anvil");
        repack(&damaged, &path);
        let elsewhere = Scratch::new();
        let outcome = elsewhere.anvil(&["import", path.to_str().expect("utf-8")]).expect_code(1);
        // miette wraps long lines: join them before looking for the name.
        let said: String = outcome
            .stderr
            .lines()
            .map(|line| line.trim_start().trim_start_matches(['│', '|']).trim_start())
            .collect();
        assert!(said.contains(&format!("member `{name}`")), "{name}: {}", outcome.transcript());
        assert!(
            !elsewhere.store().join("entries").exists()
                || std::fs::read_dir(elsewhere.store().join("entries")).map(|d| d.count()).unwrap_or(0) == 0,
            "nothing becomes visible from a damaged bundle"
        );
    }
}

#[test]
fn a_doctored_p50_with_fixed_up_hashes_is_caught_by_re_derivation() {
    let (scratch, bundle) = exported();
    let mut doctored = members(&bundle);
    let index = doctored.iter().position(|(name, _)| name.ends_with("/benchmark.json")).expect("an artifact");
    let mut artifact: Value = serde_json::from_slice(&doctored[index].1).expect("json");
    let p50 = artifact["metrics"]["ttft_p50_ms"].as_f64().expect("a p50");
    artifact["metrics"]["ttft_p50_ms"] = serde_json::json!(p50 * 0.9);
    doctored[index].1 = serde_json::to_vec_pretty(&artifact).expect("json");
    // Fix up the manifest so every hash matches again.
    let member = doctored[index].0.clone();
    let mut manifest: Value = serde_json::from_slice(&doctored[0].1).expect("manifest");
    for m in manifest["members"].as_array_mut().expect("members") {
        if m["path"] == member.as_str() {
            m["bytes"] = serde_json::json!(doctored[index].1.len());
            m["blake3"] = serde_json::json!(blake3::hash(&doctored[index].1).to_hex().to_string());
        }
    }
    doctored[0].1 = serde_json::to_vec_pretty(&manifest).expect("json");
    let path = scratch_path(&scratch, "doctored.anvil");
    repack(&doctored, &path);

    let path = path.to_str().expect("utf-8");
    Scratch::new().anvil(&["import", path]).expect_code(0); // the hashes are consistent…
    let outcome = scratch.anvil(&["verify", path]).expect_code(1); // …the figure is not
    assert!(outcome.stdout.contains(&format!("{member} metrics.ttft_p50_ms")), "{}", outcome.transcript());
}

#[test]
fn a_lone_artifact_verifies_and_an_edited_figure_does_not() {
    let scratch = Scratch::new();
    let reference = include_str!("fixtures/reference/benchmark-v1.example.json");
    scratch.write("reference.json", reference);
    let outcome = scratch.anvil(&["verify", "reference.json"]).expect_code(0);
    assert!(outcome.stdout.contains("verified: clean"), "{}", outcome.transcript());

    let mut edited: Value = serde_json::from_str(reference).expect("json");
    let p95 = edited["metrics"]["e2e_p95_ms"].as_f64().expect("a p95");
    edited["metrics"]["e2e_p95_ms"] = serde_json::json!(p95 + 1.0);
    scratch.write("edited.json", &serde_json::to_string(&edited).expect("json"));
    let outcome = scratch.anvil(&["verify", "edited.json"]).expect_code(1);
    assert!(outcome.stdout.contains("metrics.e2e_p95_ms"), "{}", outcome.transcript());
}

#[test]
fn no_secret_enters_a_bundle() {
    let scratch = Scratch::new();
    // An external endpoint with an API key from the environment: anvil's own simulated engine.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("address").port()
    };
    let mut sim = scratch.command();
    sim.args(["sim", "--port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut sim = KillOnDrop(sim.spawn().expect("start anvil sim"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "anvil sim did not listen");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let recipe = scratch.write(
        "secret.kdl",
        &format!(
            "campaign \"secret\"\nserver \"remote\" {{ url \"http://127.0.0.1:{port}\"; api-key-env \"ANVIL_TEST_API_KEY\"; }}\n\
             cell \"c\" server=\"remote\" {{ requests 4; concurrency 2; max-tokens 16; }}\n"
        ),
    );
    let secret = "sk-do-not-publish-4b1d9e";
    let mut run = scratch.command();
    run.args(["run", recipe.to_str().expect("utf-8")]).env("ANVIL_TEST_API_KEY", secret);
    assert!(run.output().expect("run").status.success());
    let mut export = scratch.command();
    export.args(["export", "secret.kdl", "-o", "secret.anvil"]).env("ANVIL_TEST_API_KEY", secret);
    assert!(export.output().expect("export").status.success());
    for (name, bytes) in members(&scratch.path().join("secret.anvil")) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(secret), "the API key leaked into member {name}");
    }
    sim.0.kill().ok();
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_bundle_reproduces_on_its_simulated_twins() {
    let (_scratch, bundle) = exported();
    let elsewhere = Scratch::new();
    // The headline cell is one run of 24 requests: judged against the
    // run-to-run spread the quickstart states, its p95s lack the samples
    // (40 a side) and its medians the precision to show equivalence, so the
    // answer is inconclusive (exit 3), never waved through.
    let outcome = elsewhere.anvil(&["reproduce", bundle.to_str().expect("utf-8"), "--sim"]).expect_code(3);
    let text = &outcome.stdout;
    assert!(text.contains("every decision label reproduced"), "{}", outcome.transcript());
    assert!(
        text.contains(
            "headline metrics of the decision's headline cells (headline) at ±10%: 0 reproduced, 0 differs, 1 inconclusive"
        ),
        "{}",
        outcome.transcript()
    );
    assert!(
        !text.contains("no run-to-run spread stated"),
        "the quickstart states one: {}",
        outcome.transcript()
    );
    assert!(text.contains("reproduction INCONCLUSIVE"), "{}", outcome.transcript());
    assert!(!text.contains("none differs"), "{}", outcome.transcript());
    assert!(text.contains("decode-step                      same"), "{}", outcome.transcript());
    // Metric verdicts depend on this machine's noise (tests run side by side):
    // the labels, the screen's winner and the gates are what must hold.
    assert!(text.contains("gate fast-is-faster              same"), "{}", outcome.transcript());
}

#[test]
fn a_slower_twin_differs_where_it_is_slower_and_names_the_changed_setting() {
    // The published campaign ran on a twin with a 10x slower prefill; the
    // quickstart states a generous run-to-run spread for its once-measured
    // headline cell (TTFT's 0.5).
    assert!(QUICKSTART.contains("run-to-run 0.08 ttft=0.5"), "the quickstart states its spread");
    let publisher = Scratch::new();
    let published = QUICKSTART.replace("prefill-tok-s 20000", "prefill-tok-s 2000");
    let recipe = publisher.write("recipes/quickstart.kdl", &published);
    publisher.run(&recipe, &[], 0);
    publisher.anvil(&["export", "recipes/quickstart.kdl", "-o", "slow.anvil"]).expect_code(0);

    // Here: the campaign as written, compared with the published one.
    let here = Scratch::new();
    let ours = here.write("recipes/quickstart.kdl", QUICKSTART);
    here.run(&ours, &[], 0);
    let slow = publisher.path().join("slow.anvil");
    let outcome = here
        .anvil(&["compare", slow.to_str().expect("utf-8"), "recipes/quickstart.kdl", "--json"])
        .expect_code(0);
    let report = outcome.json();
    let cells = report["cells"].as_array().expect("cells");
    let headline = cells.iter().find(|c| c["name"] == "headline").expect("the headline cell");
    let ttft = headline["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["metric"] == "ttft_p50_ms")
        .expect("ttft");
    assert_eq!(ttft["verdict"], "differs", "prefill 10x faster here: {ttft}");
    assert_eq!(ttft["spread"], "stated", "judged against the stated spread: {ttft}");
    let cause = headline["configuration"]
        .as_array()
        .expect("configuration")
        .iter()
        .map(|c| c.as_str().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("; ");
    assert!(cause.contains("prefill-tok-s"), "the changed setting is named: {cause}");
}

#[test]
fn a_signed_bundle_names_its_signer_and_a_wrong_key_fails() {
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", "campaign \"signed\"\ntask \"t\" { run \"true\"; }\n");
    scratch.run(&recipe, &[], 0);
    let made = scratch.anvil(&["keygen", "publisher.key"]).expect_code(0);
    assert!(made.stdout.contains("key id"), "{}", made.transcript());
    scratch.anvil(&["keygen", "someone-else.key"]).expect_code(0);
    let exported = scratch
        .anvil(&["export", "recipe.kdl", "-o", "signed.anvil", "--sign", "publisher.key"])
        .expect_code(0);
    assert!(exported.stdout.contains("signed by key"), "{}", exported.transcript());

    let good = scratch.anvil(&["verify", "signed.anvil", "--pubkey", "publisher.key.pub"]).expect_code(0);
    assert!(good.stdout.contains("signature: good, by key"), "{}", good.transcript());
    assert!(
        good.stdout.contains("campaign signed"),
        "the trusted comment names the campaign: {}",
        good.transcript()
    );
    let unchecked = scratch.anvil(&["verify", "signed.anvil"]).expect_code(0);
    assert!(unchecked.stdout.contains("not checked: give --pubkey"), "{}", unchecked.transcript());
    let wrong = scratch.anvil(&["verify", "signed.anvil", "--pubkey", "someone-else.key.pub"]).expect_code(1);
    assert!(wrong.stdout.contains("SIGNATURE"), "{}", wrong.transcript());
}

#[test]
fn comparing_unlike_workloads_says_so_before_any_verdict() {
    // The published reference cell (C1, 24,576-token contexts, 12 requests)
    // against a quick-start cell here: not one measurement twice.
    let here = Scratch::new();
    let ours = here.write("recipes/quickstart.kdl", QUICKSTART);
    here.run(&ours, &[], 0);
    let reference =
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/reference/benchmark-v1.example.json");
    let fp = here.plan(&ours, &[]).fingerprint("headline");
    let outcome = here.anvil(&["compare", reference, &fp[..12]]).expect_code(0);
    let text = &outcome.stdout;
    let unlike = text.find("NOT ALIKE").unwrap_or_else(|| panic!("{}", outcome.transcript()));
    assert!(text.contains("context tokens 24576 vs"), "{}", outcome.transcript());
    assert!(text.contains("engine ninfer vs"), "{}", outcome.transcript());
    let verdicts = text.find("\ncells (").expect("a cells table");
    assert!(unlike < verdicts, "the workloads come before the verdicts: {text}");
    let json = here.anvil(&["compare", reference, &fp[..12], "--json"]).expect_code(0).json();
    assert_eq!(json["cells"][0]["workload"]["alike"], false, "{json}");
}

/// One simulated cell measured three times, no decision: its decode step a
/// param, so `reproduce --set step=…` makes a slower twin of it. Chosen so
/// that an unchanged rerun rarely differs by chance on a loaded machine:
/// 20 ms steps (a few ms of scheduling noise stay well inside ±10%), and
/// 3 × 12 = 36 requests per side, below the 40 a p95 row needs to be
/// judged, so only the p50s, the mean decode speed and the throughput of
/// the repeats are (a p95's tail moved by one stall was the usual
/// chance `differs` with 48).
const ONE_CELL: &str = r#"campaign "one-cell"
param "step" 20
server "sim" {
    model "m"
    sim { prefill-tok-s 20000; decode-step-ms "{step}"; max-running-seqs 16; }
}
cell "c" server="sim" {
    context-tokens 128
    max-tokens 12
    concurrency 4
    requests 12
    repeat 3
    canaries #false
    thinking "off"
}
"#;

fn one_cell_bundle() -> (Scratch, PathBuf) {
    let publisher = Scratch::new();
    let recipe = publisher.write("one-cell.kdl", ONE_CELL);
    publisher.run(&recipe, &[], 0);
    publisher.anvil(&["export", "one-cell.kdl", "-o", "one-cell.anvil"]).expect_code(0);
    let bundle = scratch_path(&publisher, "one-cell.anvil");
    (publisher, bundle)
}

#[test]
fn a_slowed_twin_without_a_decision_fails_and_names_what_differs() {
    let (_publisher, bundle) = one_cell_bundle();
    let elsewhere = Scratch::new();
    // Every decode step 4x slower here: throughput down, latencies up.
    let outcome = elsewhere
        .anvil(&["reproduce", bundle.to_str().expect("utf-8"), "--sim", "--set", "step=80"])
        .expect_code(1);
    let text = &outcome.stdout;
    assert!(
        !text.contains("every decision label reproduced"),
        "no decision to reproduce: {}",
        outcome.transcript()
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("differs: cell c: "))
        .unwrap_or_else(|| panic!("the differing cell is named: {}", outcome.transcript()));
    for metric in ["throughput_tok_s -", "e2e_p50_ms +", "tpot_p50_ms +"] {
        assert!(line.contains(metric), "{metric} in {line:?}: {}", outcome.transcript());
    }
    assert!(text.contains("reproduction DIFFERS"), "{}", outcome.transcript());
}

#[test]
fn the_same_one_cell_recipe_reproduced_unchanged_does_not_differ() {
    let (_publisher, bundle) = one_cell_bundle();
    let elsewhere = Scratch::new();
    // 12 requests a repeat carry no per-repeat p95 and 36 pooled no p95 at
    // all (40 needed): those rows stay open, so the cell is inconclusive.
    let outcome = elsewhere.anvil(&["reproduce", bundle.to_str().expect("utf-8"), "--sim"]).expect_code(3);
    let text = &outcome.stdout;
    assert!(
        text.contains("headline metrics of every cell (c) at ±10%: 0 reproduced, 0 differs, 1 inconclusive"),
        "{}",
        outcome.transcript()
    );
    assert!(
        text.contains("ttft_p95_ms, tpot_p95_ms, e2e_p95_ms: too few samples"),
        "{}",
        outcome.transcript()
    );
    assert!(!text.contains("decision label"), "{}", outcome.transcript());
}

/// The quick start's shape: one cell measured once (`repeat 1`), 24
/// requests after 2 warm-up ones, its decode step a param so
/// `reproduce --set step=60` makes a 3× slower twin. `{spread}` is its
/// `run-to-run` line. The stated spread is honest for this machine's
/// simulated engine with room to spare: 12 fresh runs of it, measured
/// while other tests ran, moved throughput by a log-sd of 0.007, TPOT,
/// E2E and decode speed by at most 0.021 and the TTFT p50 by 0.076.
const ONCE: &str = r#"campaign "once"
param "step" 20
server "sim" {
    model "m"
    sim { prefill-tok-s 20000; decode-step-ms "{step}"; max-running-seqs 16; }
}
cell "c" server="sim" {
    context-tokens 128
    max-tokens 12
    concurrency 4
    requests 24
    warmup-requests 2
    canaries #false
    thinking "off"
    {spread}
}
"#;

const STATED: &str = "run-to-run 0.03 ttft=0.25";

/// The ONCE recipe with `spread`, run and exported by a publisher.
fn once_bundle(spread: &str) -> (Scratch, PathBuf) {
    let publisher = Scratch::new();
    let recipe = publisher.write("once.kdl", &ONCE.replace("{spread}", spread));
    publisher.run(&recipe, &[], 0);
    publisher.anvil(&["export", "once.kdl", "-o", "once.anvil"]).expect_code(0);
    let bundle = scratch_path(&publisher, "once.anvil");
    (publisher, bundle)
}

#[test]
fn a_once_measured_slower_twin_differs_against_the_spread_its_bundle_states() {
    let (_publisher, bundle) = once_bundle(STATED);
    let manifest: Value =
        serde_json::from_slice(&members(&bundle).into_iter().next().expect("the manifest").1).expect("json");
    let stated = &manifest["run_to_run"]["c"];
    assert_eq!(stated["tpot_p50_ms"]["sigma"], 0.03, "{manifest}");
    assert_eq!(stated["ttft_p95_ms"]["sigma"], 0.25, "{manifest}");
    assert_eq!(stated["throughput_tok_s"]["from"], "declared", "{manifest}");
    let elsewhere = Scratch::new();
    let outcome = elsewhere
        .anvil(&["reproduce", bundle.to_str().expect("utf-8"), "--sim", "--set", "step=60"])
        .expect_code(1);
    let text = &outcome.stdout;
    let line = text
        .lines()
        .find(|l| l.starts_with("differs: cell c: "))
        .unwrap_or_else(|| panic!("the differing cell is named: {}", outcome.transcript()));
    for metric in ["throughput_tok_s -", "tpot_p50_ms +", "e2e_p50_ms +", "decode_tok_s_mean -"] {
        assert!(line.contains(metric), "{metric} in {line:?}: {}", outcome.transcript());
    }
    assert!(text.contains("reproduction DIFFERS"), "{}", outcome.transcript());
    let json = elsewhere
        .anvil(&["reproduce", bundle.to_str().expect("utf-8"), "--sim", "--set", "step=60", "--json"])
        .expect_code(1)
        .json();
    assert_eq!(json["reproduction"]["answer"], "differs", "{json}");
    let tpot = json["cells"][0]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["metric"] == "tpot_p50_ms")
        .expect("tpot");
    assert_eq!(
        (&tpot["spread"], &tpot["verdict"]),
        (&Value::from("stated"), &Value::from("differs")),
        "{tpot}"
    );
}

#[test]
fn a_once_measured_unchanged_twin_is_never_called_differs() {
    let (_publisher, bundle) = once_bundle(STATED);
    let elsewhere = Scratch::new();
    let outcome = elsewhere.anvil(&["reproduce", bundle.to_str().expect("utf-8"), "--sim"]);
    assert!(matches!(outcome.code, Some(0 | 3)), "reproduced or inconclusive: {}", outcome.transcript());
    let text = &outcome.stdout;
    assert!(text.contains("(c) at ±10%: ") && text.contains(" 0 differs,"), "{}", outcome.transcript());
    assert!(!text.contains("differs: cell"), "{}", outcome.transcript());
}

#[test]
fn a_once_measured_twin_with_no_stated_spread_is_inconclusive_however_slow() {
    let (_publisher, bundle) = once_bundle("");
    let elsewhere = Scratch::new();
    let outcome = elsewhere
        .anvil(&["reproduce", bundle.to_str().expect("utf-8"), "--sim", "--set", "step=60"])
        .expect_code(3);
    let text = &outcome.stdout;
    assert!(text.contains("0 reproduced, 0 differs, 1 inconclusive"), "{}", outcome.transcript());
    assert!(
        text.contains(
            "measured once on a side and no run-to-run spread stated (declare `run-to-run` on the cell"
        ),
        "{}",
        outcome.transcript()
    );
    assert!(text.contains("reproduction INCONCLUSIVE"), "{}", outcome.transcript());
}

#[test]
fn the_stated_spread_judges_and_measures_nothing() {
    // Not in the cell's fingerprint: stating it reuses the stored cell.
    let scratch = Scratch::new();
    let bare = scratch.write("bare.kdl", &ONCE.replace("{spread}", ""));
    let stated = scratch.write("stated.kdl", &ONCE.replace("{spread}", STATED));
    assert_eq!(scratch.plan(&bare, &[]).fingerprint("c"), scratch.plan(&stated, &[]).fingerprint("c"));
    let bad = scratch.write("bad.kdl", &ONCE.replace("{spread}", "run-to-run 0.03 ttfb=0.2"));
    let refused = scratch.anvil(&["plan", bad.to_str().expect("utf-8")]).expect_code(2);
    assert!(refused.stderr.contains("no metric family `ttfb`"), "{}", refused.transcript());
}

#[test]
fn a_reproduction_that_cannot_be_done_exits_4_apart_from_differs() {
    let (_publisher, bundle) = once_bundle(STATED);
    let mut damaged = members(&bundle);
    let last = damaged.last_mut().expect("a member");
    last.1.push(b'!');
    let elsewhere = Scratch::new();
    let out = elsewhere.path().join("damaged.anvil");
    repack(&damaged, &out);
    let outcome = elsewhere.anvil(&["reproduce", out.to_str().expect("utf-8"), "--sim"]).expect_code(4);
    assert!(outcome.stderr.contains("damaged bundle"), "{}", outcome.transcript());
}

#[test]
fn the_manifest_states_the_measured_spread_and_verify_derives_it_again() {
    let (_publisher, bundle) = one_cell_bundle();
    let mut parts = members(&bundle);
    let mut manifest: Value = serde_json::from_slice(&parts[0].1).expect("the manifest");
    let throughput = &manifest["run_to_run"]["c"]["throughput_tok_s"];
    assert_eq!((&throughput["from"], &throughput["repeats"]), (&Value::from("measured"), &Value::from(3)));
    assert!(throughput["sigma"].as_f64().is_some_and(|s| s > 0.0), "{manifest}");
    let elsewhere = Scratch::new();
    elsewhere.anvil(&["verify", bundle.to_str().expect("utf-8")]).expect_code(0);
    // A wider spread edited into the manifest (to keep a slower twin from `differs`).
    manifest["run_to_run"]["c"]["throughput_tok_s"]["sigma"] = Value::from(0.5);
    parts[0].1 = serde_json::to_vec_pretty(&manifest).expect("json");
    let doctored = elsewhere.path().join("doctored.anvil");
    repack(&parts, &doctored);
    let outcome = elsewhere.anvil(&["verify", doctored.to_str().expect("utf-8")]).expect_code(1);
    assert!(
        outcome.stdout.contains("MANIFEST.json run_to_run.c.throughput_tok_s.sigma"),
        "{}",
        outcome.transcript()
    );
}
