//! The files a step's fingerprint hashed, hashed again right before the step
//! runs: a trace edited between `anvil plan` (or the run's start) and its
//! cell would otherwise be measured and stored under the old file's
//! fingerprint.

use std::path::Path;

use super::outcome::Failure;
use crate::executor::interface::ReadyStep;
use crate::plan::file_digest;

/// Fail the step when a file it reads no longer hashes as its fingerprint says.
pub(super) fn check(job: &ReadyStep, recipe_dir: &Path) -> Result<(), Failure> {
    let preimage = &job.document.key;
    let Some(files) = preimage.get("files").and_then(|f| f.as_object()) else { return Ok(()) };
    for (file, planned) in files {
        // A server's tokenizer is its server's input, hashed when that started.
        if file.starts_with("tokenizer ") {
            continue;
        }
        let now = file_digest(&recipe_dir.join(file));
        if &now != planned {
            return Err(Failure::new(format!(
                "{file} changed after the plan fingerprinted it (planned {}, now {}): nothing was measured; run again to plan it anew",
                short(planned),
                short(&now)
            ))
            .with_fault(crate::executor::interface::Fault::InputChanged));
        }
    }
    Ok(())
}

fn short(digest: &serde_json::Value) -> String {
    let text = digest.as_str().unwrap_or_default();
    match text.strip_prefix("blake3:") {
        Some(hex) => format!("blake3:{}…", &hex[..hex.len().min(12)]),
        None => text.to_string(),
    }
}
