//! `check` steps: functional checks (smoke, strict JSON, tool calls,
//! Responses API, canary isolation) with their evidence stored.

use anvil_checks::Target;
use serde_json::Value;

use super::outcome::{Failure, Produced, ProducedFile};
use super::servers::ServerInfo;
use crate::document::CheckExec;
use crate::results::{self, CheckResult, FailedCheck, Verdict};

pub async fn run_check(exec: &CheckExec, server: &ServerInfo) -> Result<Produced, Failure> {
    let spec = &exec.check;
    // Every replica must pass: a check of a DP group checks each member.
    let mut outcomes = Vec::new();
    for target in &server.targets {
        let target = Target {
            base_url: target.base_url.clone(),
            api_key: target.api_key.clone(),
            tls: target.tls.clone(),
        };
        match anvil_checks::run_check_keeping(spec, &target).await {
            Ok(outcome) => outcomes.push(outcome),
            Err(unfinished) => return Err(unfinished_check(spec, server, &target, &outcomes, unfinished)),
        }
    }
    let passed = outcomes.iter().all(|o| o.passed);
    let detail = outcomes.iter().map(|o| o.detail.clone()).collect::<Vec<_>>().join(" | ");
    let evidence: Vec<Value> = outcomes.iter().map(|o| o.evidence.clone()).collect();
    let summary = format!("{}: {detail}", if passed { "passed" } else { "FAILED" });
    let result = CheckResult {
        check_type: spec.check_type,
        passed,
        status: Verdict::from_passed(passed),
        detail,
        attempts: outcomes.iter().map(|o| o.attempts).sum(),
        failures: outcomes.iter().map(|o| o.failures).sum(),
        simulated: server.simulated,
    };
    Ok(Produced {
        summary,
        result: results::to_value(&result),
        files: vec![ProducedFile::Bytes {
            name: "evidence.json".into(),
            bytes: serde_json::to_vec_pretty(&evidence).unwrap_or_default(),
        }],
        // A failed check is a verdict, stored like a rejected gate.
        rejected: !passed,
        ..Produced::default()
    })
}

/// A check that could not complete: a failure, not a verdict. What it
/// judged before it stopped (every replica's evidence so far), why, and the
/// server's logs are kept with the run as its evidence.
fn unfinished_check(
    check: &anvil_checks::CheckSpec,
    server: &ServerInfo,
    target: &Target,
    completed: &[anvil_checks::CheckOutcome],
    unfinished: anvil_checks::Unfinished,
) -> Failure {
    let mut evidence: Vec<Value> = completed.iter().map(|o| o.evidence.clone()).collect();
    evidence.push(unfinished.partial.evidence);
    let error = format!("{:#}", unfinished.error);
    let failed = FailedCheck::new(check.check_type, unfinished.class, &error, &target.base_url, &evidence);
    let mut files = vec![
        ProducedFile::Bytes {
            name: "failed-check.json".into(),
            bytes: serde_json::to_vec_pretty(&failed).unwrap_or_default(),
        },
        ProducedFile::Bytes {
            name: "evidence.json".into(),
            bytes: serde_json::to_vec_pretty(&evidence).unwrap_or_default(),
        },
    ];
    // The server's logs as they stand, one file per replica: why it went away.
    let logs = server.log_paths.iter().enumerate().filter(|(_, log)| log.exists());
    files.extend(
        logs.map(|(i, log)| ProducedFile::Copy { name: format!("server-{i}.log"), from: log.clone() }),
    );
    Failure::new(failed.reason.clone())
        .with_detail(serde_json::to_string(&failed).unwrap_or_default())
        .with_evidence(files)
}
