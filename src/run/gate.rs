//! `gate` steps: every `require` expression must hold.

use anvil_expr::{Evaluation, JsonResolver};
use serde_json::{Value, json};

use super::outcome::{Failure, Produced};
use crate::recipe::decls::GateDecl;

pub fn evaluate_gate(gate: &GateDecl, inputs: &Value) -> Result<Produced, Failure> {
    let resolver = JsonResolver::new(inputs);
    let mut requirements = Vec::new();
    let mut rejected = false;
    let mut missing = Vec::new();
    for requirement in &gate.require {
        let text = &requirement.text;
        let evaluation = requirement.parsed.eval(&resolver);
        match &evaluation {
            Evaluation::Passed { .. } => {}
            Evaluation::Rejected { .. } => rejected = true,
            Evaluation::Missing { missing: m, .. } => missing.extend(m.iter().cloned()),
            Evaluation::Error { detail } => {
                return Err(Failure::new(format!("require \"{text}\": {detail}")));
            }
        }
        requirements
            .push(json!({"require": text, "status": evaluation.status(), "detail": evaluation.detail()}));
    }
    if !missing.is_empty() {
        // An absent input is not a verdict: never stored, reported as missing.
        missing.sort();
        missing.dedup();
        return Err(Failure::new(format!("missing inputs: {}", missing.join(", "))).with_detail(
            requirements
                .iter()
                .map(|r| r["detail"].as_str().unwrap_or("").to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        ));
    }
    let status = if rejected { "rejected" } else { "passed" };
    let detail = requirements
        .iter()
        .map(|r| r["detail"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("; ");
    Ok(Produced {
        result: json!({"status": status, "passed": !rejected, "requirements": requirements, "detail": detail}),
        files: Vec::new(),
        rejected,
        summary: format!("{status}: {detail}"),
    })
}
