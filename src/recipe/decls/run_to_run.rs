//! `run-to-run 0.05 ttft=0.3`: how far runs of a cell's configuration
//! differ (σ, the log-sd of a metric's factor between runs; 0.05 is about
//! 5%), for every headline metric, with a value of its own for a family
//! (`throughput`, `ttft`, `tpot`, `e2e`, `decode`). `reproduce` judges a
//! cell measured once on a side against it (`anvil_evidence::run_to_run`).
//! A statement about judging, not about what is measured: it is not in the
//! cell's fingerprint, and the bundle's manifest carries it.

use std::collections::BTreeMap;

use anvil_evidence::headline::HEADLINE_ROWS;
use anvil_evidence::run_to_run::{RunSpread, SpreadSource, Spreads};
use serde_json::Value;

use super::super::problem::Problems;
use super::super::settings::Draft;

/// `run-to-run` as declared.
#[derive(Debug, Clone, PartialEq)]
pub struct RunToRunDecl {
    /// σ of every headline metric without one of its own.
    pub every: f64,
    /// σ by metric family (`ttft`, …).
    pub by_family: BTreeMap<String, f64>,
}

impl RunToRunDecl {
    /// The declared spread of each headline metric, by its row name.
    pub fn spreads(&self) -> Spreads {
        HEADLINE_ROWS
            .iter()
            .map(|(metric, family)| {
                let sigma = self.by_family.get(*family).copied().unwrap_or(self.every);
                (metric.to_string(), RunSpread { sigma, from: SpreadSource::Declared, repeats: None })
            })
            .collect()
    }
}

/// A spread written as a number (0.05, or "0.05" from a param) or a
/// share ("5%"): positive, below 2.
fn sigma(value: &Value) -> Option<f64> {
    let number = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => match s.trim().strip_suffix('%') {
            Some(share) => share.trim().parse::<f64>().ok()? / 100.0,
            None => s.trim().parse::<f64>().ok()?,
        },
        _ => return None,
    };
    (number.is_finite() && number > 0.0 && number < 2.0).then_some(number)
}

/// The declaration's `run-to-run` (None without one); a bad value or an
/// unknown family is a problem.
pub(super) fn build(draft: &Draft, key: &str, problems: &mut Problems) -> Option<RunToRunDecl> {
    let declared = draft.settings.get(key)?.as_object()?;
    let mut fail = |message: String| {
        problems.push(
            draft
                .problem_at(key, message)
                .label("run-to-run spread")
                .help("e.g. run-to-run 0.05 ttft=0.3: σ between runs, 0 < σ < 2, for every headline metric, then per family (throughput, ttft, tpot, e2e, decode)"),
        );
    };
    let mut decl = RunToRunDecl { every: 0.0, by_family: BTreeMap::new() };
    for (name, value) in declared {
        let Some(sigma) = sigma(value) else {
            fail(format!(
                "`run-to-run` takes a spread above 0 and below 2 (0.05 or \"5%\"), not {value} for `{name}`"
            ));
            return None;
        };
        if name == "value" {
            decl.every = sigma;
        } else if HEADLINE_ROWS.iter().any(|(_, family)| family == name) {
            decl.by_family.insert(name.clone(), sigma);
        } else {
            fail(format!("`run-to-run` has no metric family `{name}`"));
            return None;
        }
    }
    Some(decl)
}
