//! `anvil export`, `anvil import`, `anvil verify`: campaigns as evidence
//! that travels.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::bundle::{self, ExportRequest, Invocation, signature};

use super::common::{Exit, failed, input, open_store};

/// `--sign KEY [--sign-password-env VAR]`.
pub struct Signing {
    pub key: PathBuf,
    pub password_env: Option<String>,
}

pub fn export(
    store_root: &Path,
    recipe: Option<&Path>,
    run_id: Option<&str>,
    out: Option<PathBuf>,
    signing: Option<Signing>,
) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    let run = match (run_id, recipe) {
        (Some(id), _) => {
            store.run(id)?.ok_or_else(|| input(format!("no run `{id}` in {}", store_root.display())))?
        }
        (None, Some(recipe)) => {
            let key = recipe.canonicalize().unwrap_or_else(|_| recipe.to_path_buf()).display().to_string();
            store.last_run_of(&key)?.ok_or_else(|| {
                input(format!(
                    "{} has no recorded run in {}: run it first",
                    recipe.display(),
                    store_root.display()
                ))
            })?
        }
        (None, None) => return Err(input("export takes a RECIPE or --run RUN_ID")),
    };
    let invocation: Invocation = crate::run_extra::RunExtra::of(&run).invocation;
    let recipe_path = recipe.map_or_else(|| PathBuf::from(&run.recipe_path), Path::to_path_buf);
    let recipe = crate::recipe::load(&recipe_path, &invocation.set)
        .map_err(|e| Exit::Input(miette::Report::new(e)))?;
    let out = out.unwrap_or_else(|| PathBuf::from(format!("{}.anvil", recipe.campaign.name)));
    let started = Instant::now();
    let request = ExportRequest { store: &store, run, recipe: &recipe, invocation, out };
    let summary = bundle::export(&request).map_err(|e| failed(format!("export: {e}")))?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "wrote {}: {} members ({} stored steps), {:.1} MB → {:.1} MB in {:.2}s",
        summary.path.display(),
        summary.members,
        summary.entries,
        summary.bytes_in as f64 / 1e6,
        summary.bytes_out as f64 / 1e6,
        seconds
    );
    println!("bundle {}", summary.digest);
    if let Some(signing) = signing {
        let password = match &signing.password_env {
            Some(var) => Some(
                std::env::var(var).map_err(|_| input(format!("--sign-password-env: ${var} is not set")))?,
            ),
            None => None,
        };
        let comment = format!("anvil bundle {} campaign {}", summary.digest, recipe.campaign.name);
        let signer = signature::sign(&summary.path, &signing.key, password, &comment)
            .map_err(|e| failed(format!("{e}")))?;
        println!("signed by key {} ({})", signer.key_id, signature::signature_path(&summary.path).display());
    }
    Ok(0)
}

pub fn keygen(key: &Path) -> Result<i32, Exit> {
    if key.exists() {
        return Err(input(format!("{} exists: choose another name", key.display())));
    }
    let id = signature::keygen(key).map_err(|e| failed(format!("{e}")))?;
    println!("wrote {} (secret) and {}.pub (public), key id {id}", key.display(), key.display());
    Ok(0)
}

pub fn import(store_root: &Path, bundle_path: &Path, into: Option<PathBuf>) -> Result<i32, Exit> {
    let store = open_store(store_root)?;
    let scratch = tempfile::tempdir().map_err(|e| failed(format!("temporary folder: {e}")))?;
    // The campaign name is known only from inside: unpack the recipe to a scratch place first.
    let started = Instant::now();
    let summary =
        bundle::import(bundle_path, &store, scratch.path()).map_err(|e| failed(format!("import: {e}")))?;
    let seconds = started.elapsed().as_secs_f64();
    let into = into.unwrap_or_else(|| PathBuf::from("imported").join(&summary.campaign));
    copy_tree(scratch.path(), &into)
        .map_err(|e| failed(format!("unpacking the recipe into {}: {e}", into.display())))?;
    let recipe = into.join(summary.recipe.strip_prefix(scratch.path()).unwrap_or(&summary.recipe));
    println!(
        "imported {} (run {}, {:.1} MB checked in {:.2}s): {} stored steps added, {} already present{}",
        summary.digest,
        summary.run_id,
        summary.bytes as f64 / 1e6,
        seconds,
        summary.added,
        summary.already_present,
        if summary.run_added { "" } else { "; the run was already recorded" }
    );
    println!("recipe unpacked: {}", recipe.display());
    println!("next: anvil plan {} --store {}", recipe.display(), store_root.display());
    Ok(0)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::create_dir_all(to)?;
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// `anvil verify FILE`: a bundle, or a lone `anvil-serving.benchmark/v1` artifact.
pub fn verify(target: &Path, as_json: bool, pubkey: Option<&Path>) -> Result<i32, Exit> {
    if target.extension().is_some_and(|e| e == "json") {
        return verify_artifact(target, as_json);
    }
    // Who signed it: a bad signature (or none, when a key is given) fails verification.
    let signer = signature::check(target, pubkey);
    let report = bundle::verify_bundle(target).map_err(|e| failed(format!("verify: {e}")))?;
    let signature_ok = signer.is_ok();
    if as_json {
        let signature = match &signer {
            Ok(signer) => serde_json::json!(signer),
            Err(err) => serde_json::json!({"error": err.to_string()}),
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"bundle": report, "signature": signature}))
                .unwrap_or_default()
        );
        return Ok(if report.is_clean() && signature_ok { 0 } else { 1 });
    }
    println!("bundle {}", report.digest);
    match &signer {
        Ok(Some(s)) if s.checked => {
            println!("  signature: good, by key {} (\"{}\")", s.key_id, s.trusted_comment)
        }
        Ok(Some(s)) => println!("  signature: by key {} (not checked: give --pubkey)", s.key_id),
        Ok(None) => println!("  signature: none"),
        Err(err) => println!("  SIGNATURE: {err}"),
    }
    println!("  {} members: sizes and blake3 match the manifest", report.members);
    println!("  {} stored steps: each preimage hashes to its fingerprint", report.entries);
    println!(
        "  {} benchmark artifacts: {} statistics re-derived from their per-request records",
        report.artifacts, report.fields_checked
    );
    println!("  {} stored steps planned again from the bundled recipe", report.steps_replanned);
    println!("  {} gates, screens and decisions evaluated again", report.verdicts_reevaluated);
    if report.answers_checked > 0 {
        println!(
            "  {} kept answers: each against its digest, every score derived again",
            report.answers_checked
        );
    }
    if report.summary_rebuilt {
        println!("  the decision summary rebuilt from the stored results");
    }
    print_findings(
        &report
            .findings
            .iter()
            .map(|f| (f.at.as_str(), f.path.as_str(), &f.claimed, &f.derived))
            .collect::<Vec<_>>(),
    );
    if !report.unchecked.is_empty() {
        println!("not re-derivable ({} shown):", report.unchecked.len());
        for line in report.unchecked.iter().take(5) {
            println!("  {line}");
        }
    }
    Ok(if report.is_clean() && signature_ok {
        println!("verified: clean");
        0
    } else if report.is_clean() {
        println!("NOT VERIFIED: the signature does not check out");
        1
    } else {
        println!("NOT VERIFIED: {} findings", report.findings.len());
        1
    })
}

fn verify_artifact(path: &Path, as_json: bool) -> Result<i32, Exit> {
    // Streamed: the file's head, then one record at a time.
    let report = anvil_evidence::rederive_file(path).map_err(|e| match e {
        anvil_evidence::RederiveError::File { .. } => input(e.to_string()),
        _ => input(format!("{}: {e}", path.display())),
    })?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        println!("{}: {}", path.display(), report.summary());
        let member = path.display().to_string();
        print_findings(
            &report
                .mismatches
                .iter()
                .map(|m| (member.as_str(), m.path.as_str(), &m.stored, &m.derived))
                .collect::<Vec<_>>(),
        );
        for unchecked in report.unchecked.iter().take(5) {
            println!("  not re-derivable: {}: {}", unchecked.path, unchecked.reason);
        }
        println!("{}", if report.is_clean() { "verified: clean" } else { "NOT VERIFIED" });
    }
    Ok(if report.is_clean() { 0 } else { 1 })
}

fn print_findings(findings: &[(&str, &str, &serde_json::Value, &serde_json::Value)]) {
    for (at, path, claimed, derived) in findings.iter().take(50) {
        let field = if path.is_empty() { String::new() } else { format!(" {path}") };
        println!("  MISMATCH {at}{field}: claims {claimed}, derives {derived}");
    }
    if findings.len() > 50 {
        println!("  … and {} more", findings.len() - 50);
    }
}
