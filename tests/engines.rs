//! Engines known by name (`engine "vllm"`), end to end, without vLLM: a
//! real venv whose `vllm` distribution is a stand-in, its
//! `vllm.entrypoints.openai.api_server` module exec'ing `anvil sim` on the
//! port and under the served name the preset's command line gave it. What
//! is under test is anvil's side: the command line, readiness, the
//! canary constraint in every request, and an identity made of the
//! installed packages and the weights' bytes, so that a new engine version
//! or new weights make the server and its cells pending, and `anvil diff`
//! names what moved. (The real vLLM's side is `tests/vllm.rs`.)

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Scratch, anvil_binary};

/// A venv at `dir` holding a stand-in `vllm` of `version`.
fn fake_vllm_venv(dir: &Path, version: &str) -> PathBuf {
    let status = Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(dir).status();
    assert!(status.is_ok_and(|s| s.success()), "python3 -m venv failed");
    let site = Command::new(dir.join("bin/python"))
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
        .output()
        .expect("venv python");
    let site = PathBuf::from(String::from_utf8_lossy(&site.stdout).trim());
    let module = site.join("vllm/entrypoints/openai");
    std::fs::create_dir_all(&module).unwrap();
    for init in ["vllm", "vllm/entrypoints", "vllm/entrypoints/openai"] {
        std::fs::write(site.join(init).join("__init__.py"), "").unwrap();
    }
    // The stand-in server: the simulated engine, on vLLM's command line.
    let server = format!(
        r#"import argparse, os
p = argparse.ArgumentParser()
p.add_argument("--model"); p.add_argument("--served-model-name"); p.add_argument("--host")
p.add_argument("--port"); p.add_argument("--speculative-config")
a, _ = p.parse_known_args()
os.execv({anvil:?}, ["anvil", "sim", "--port", a.port, "--set", "model=" + a.served_model_name])
"#,
        anvil = anvil_binary().display().to_string()
    );
    std::fs::write(module.join("api_server.py"), server).unwrap();
    set_version(&site, version);
    dir.join("bin/python")
}

/// Writes the stand-in's distribution metadata at `version`.
fn set_version(site: &Path, version: &str) {
    for old in std::fs::read_dir(site).unwrap().flatten() {
        if old.file_name().to_string_lossy().starts_with("vllm-") {
            std::fs::remove_dir_all(old.path()).unwrap();
        }
    }
    let info = site.join(format!("vllm-{version}.dist-info"));
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("METADATA"), format!("Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"))
        .unwrap();
    std::fs::write(
        info.join("RECORD"),
        format!("vllm/__init__.py,sha256=x,0\nvllm-{version}.dist-info/METADATA,,\n"),
    )
    .unwrap();
}

fn site_of(venv: &Path) -> PathBuf {
    let lib = venv.join("lib");
    let python = std::fs::read_dir(&lib).unwrap().flatten().next().expect("lib/pythonX.Y").path();
    python.join("site-packages")
}

fn recipe(scratch: &Scratch, python: &Path) -> PathBuf {
    scratch.write("weights/config.json", r#"{"architectures": ["LlamaForCausalLM"]}"#);
    scratch.write("weights/model.safetensors", "weights, version 1");
    scratch.write(
        "engines.kdl",
        &format!(
            r#"
server "vllm" {{
    engine "vllm"
    python "{python}"
    weights "weights"
    model "stand-in"
    ready timeout="60s"
}}
cell "c" server="vllm" {{
    requests 4
    concurrency 2
    max-tokens 16
    context-tokens 64
}}
"#,
            python = python.display()
        ),
    )
}

#[test]
fn an_engine_by_name_launches_from_its_preset_and_constrains_canaries() {
    let scratch = Scratch::new();
    let python = fake_vllm_venv(&scratch.path().join("venv"), "0.32.0");
    let recipe = recipe(&scratch, &python);
    scratch.run(&recipe, &[], 0);
    let artifact = scratch.stored_json(&recipe, "c", "benchmark.json");
    // What was launched: the preset's command line, as the artifact records it.
    let flags = artifact["serve_flags"].to_string();
    assert!(
        flags.contains("vllm.entrypoints.openai.api_server") && flags.contains("--served-model-name"),
        "{flags}"
    );
    assert_eq!(artifact["metrics"]["request_canary_passed"], 4, "{}", artifact["metrics"]);
    // Every request carried vLLM's constrained decoding with its own marker.
    let body = artifact["resolved_cell"]["extra_body"].to_string();
    assert!(body.contains("structured_outputs") && body.contains("{marker}"), "{body}");
    assert_eq!(artifact["engine"], "vllm", "{}", artifact["engine"]);
    // A second plan: everything cached.
    assert!(scratch.plan(&recipe, &[]).pending().is_empty());
}

#[test]
fn a_new_engine_version_or_new_weights_make_the_server_and_its_cells_pending() {
    let scratch = Scratch::new();
    let venv = scratch.path().join("venv");
    let python = fake_vllm_venv(&venv, "0.32.0");
    let recipe = recipe(&scratch, &python);
    scratch.run(&recipe, &[], 0);
    assert!(scratch.plan(&recipe, &[]).pending().is_empty());

    // Upgrade the engine: its cell is pending (the server starts for it),
    // and diff says what moved.
    set_version(&site_of(&venv), "0.33.0");
    let plan = scratch.plan(&recipe, &[]);
    assert_eq!(plan.pending(), ["c"], "{:?}", plan.pending());
    // The plan names what moved, not only that the server did.
    let cell = plan.nodes().iter().find(|n| n["name"] == "c").unwrap();
    let reason = cell["reason"].as_str().unwrap();
    assert!(
        reason.contains("distributions.vllm.version") && reason.contains(r#""0.32.0" → "0.33.0""#),
        "{reason}"
    );
    let recipe_arg = format!("{}:vllm", recipe.display());
    let diff = scratch.anvil(&["diff", &recipe_arg]).expect_code(0);
    assert!(diff.stdout.contains("0.32.0") && diff.stdout.contains("0.33.0"), "{}", diff.transcript());
    assert!(diff.stdout.contains("vllm"), "{}", diff.transcript());

    // Back to the version that ran: cached again.
    set_version(&site_of(&venv), "0.32.0");
    assert!(scratch.plan(&recipe, &[]).pending().is_empty());

    // New weights, same names: pending again, the weight file named.
    scratch.write("weights/model.safetensors", "weights, version 2");
    let pending = scratch.plan(&recipe, &[]).pending();
    assert_eq!(pending, ["c"], "{pending:?}");
    let diff = scratch.anvil(&["diff", &recipe_arg]).expect_code(0);
    assert!(diff.stdout.contains("model.safetensors"), "{}", diff.transcript());
}

#[test]
fn settings_an_engine_has_no_use_for_are_errors_at_their_span() {
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "wrong.kdl",
        r#"
server "llama" {
    engine "llama.cpp"
    weights "model.gguf"
    python "/usr/bin/python3"
    speculative-config "{{}}"
}
server "vllm" {
    engine "vllm"
}
"#,
    );
    let outcome = scratch.anvil(&["plan", recipe.to_str().unwrap()]).expect_code(2);
    let text = outcome.transcript();
    assert!(text.contains("is started by `binary`, not `python`"), "{text}");
    assert!(text.contains("`speculative-config` is vLLM's"), "{text}");
    assert!(text.contains("needs `weights`"), "{text}");
    assert!(text.contains("wrong.kdl:5"), "{text}");
}

/// The server's stored preimage holds the packages and the weights it was
/// fingerprinted by: the versions found and each weight file's digest.
#[test]
fn the_preimage_records_the_packages_and_weights_it_fingerprinted() {
    let scratch = Scratch::new();
    let python = fake_vllm_venv(&scratch.path().join("venv"), "0.32.0");
    let recipe = recipe(&scratch, &python);
    scratch.run(&recipe, &[], 0);
    // A server is not stored: its preimage is in the run's record.
    let record = std::fs::read_dir(scratch.store().join("runs")).unwrap().flatten().next().unwrap().path();
    let run: Value = serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    let server = run["nodes"].as_array().unwrap().iter().find(|n| n["name"] == "vllm").unwrap().clone();
    let preimage = &run["extra"]["preimages"][server["fingerprint"].as_str().unwrap()];
    let engine = preimage.pointer("/environment/engine").cloned().unwrap_or(Value::Null);
    assert_eq!(
        engine.pointer("/program/distributions/vllm/version"),
        Some(&Value::from("0.32.0")),
        "{engine}"
    );
    let files = engine.pointer("/weights/files").and_then(Value::as_object).cloned().unwrap_or_default();
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(names, ["config.json", "model.safetensors"], "{engine}");
    assert!(files.values().all(|f| f["blake3"].as_str().is_some_and(|h| h.len() == 64)), "{engine}");
}
