//! `check` steps: functional checks (smoke, strict JSON, tool calls,
//! Responses API, canary isolation) with their evidence stored.

use anvil_checks::{CheckSpec, CheckType, Target};
use serde_json::{Value, json};

use super::outcome::{Failure, Produced, ProducedFile};
use super::servers::ServerInfo;
use crate::recipe::Decl;

fn check_type(word: &str) -> Option<CheckType> {
    Some(match word {
        "smoke" => CheckType::Smoke,
        "json-schema" => CheckType::JsonSchema,
        "tool-call" => CheckType::ToolCall,
        "responses" => CheckType::Responses,
        "canary-isolation" => CheckType::CanaryIsolation,
        _ => return None,
    })
}

pub async fn run_check(step: &Decl, server: &ServerInfo, seed: u64) -> Result<Produced, Failure> {
    let kind = step.str("type").and_then(check_type).ok_or_else(|| Failure::new("unknown check type"))?;
    let mut spec = CheckSpec::new(step.name.clone(), kind, server.model.clone());
    spec.prompt = step.str("prompt").map(str::to_string);
    spec.schema = step.get("schema").cloned();
    spec.tool = step.get("tool").cloned();
    if let Some(n) = step.u64("requests") {
        spec.requests = n.clamp(1, u32::MAX as u64) as u32;
    }
    if let Some(n) = step.u64("concurrency") {
        spec.concurrency = n.clamp(1, u32::MAX as u64) as u32;
    }
    if let Some(n) = step.u64("max-tokens") {
        spec.max_tokens = n.clamp(1, u32::MAX as u64) as u32;
    }
    spec.thinking = match step.str("thinking") {
        Some("on") => Some(true),
        Some("off") => Some(false),
        _ => None,
    };
    if let Some(ms) = step.u64("timeout") {
        spec.timeout_ms = ms;
    }
    spec.shared_prefix_tokens = step.u64("shared-prefix-tokens").unwrap_or(0);
    spec.seed = seed;
    // Every replica must pass: a check of a DP group checks each member.
    let mut outcomes = Vec::new();
    for target in &server.targets {
        let target = Target { base_url: target.base_url.clone(), api_key: target.api_key.clone() };
        let outcome = anvil_checks::run_check(&spec, &target)
            .await
            .map_err(|e| Failure::new(format!("check could not run: {e:#}")))?;
        outcomes.push(outcome);
    }
    let passed = outcomes.iter().all(|o| o.passed);
    let detail = outcomes.iter().map(|o| o.detail.clone()).collect::<Vec<_>>().join(" | ");
    let evidence: Vec<Value> = outcomes.iter().map(|o| o.evidence.clone()).collect();
    let result = json!({
        "type": step.str("type"),
        "passed": passed,
        "status": if passed { "passed" } else { "rejected" },
        "detail": detail,
        "attempts": outcomes.iter().map(|o| o.attempts).sum::<u32>(),
        "failures": outcomes.iter().map(|o| o.failures).sum::<u32>(),
        "simulated": server.simulated,
    });
    Ok(Produced {
        summary: format!("{}: {detail}", if passed { "passed" } else { "FAILED" }),
        result,
        files: vec![ProducedFile::Bytes {
            name: "evidence.json".into(),
            bytes: serde_json::to_vec_pretty(&evidence).unwrap_or_default(),
        }],
        // A failed check is a verdict, stored like a rejected gate.
        rejected: !passed,
    })
}
