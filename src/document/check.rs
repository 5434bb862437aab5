//! A check's document body: the functional check as anvil-checks runs it.

use anvil_checks::CheckSpec;
use serde::{Deserialize, Serialize};

use crate::recipe::decls::CheckDecl;
use crate::words::ThinkingMode;

/// What running a check needs besides its server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckExec {
    /// Every default applied; the model is its server's.
    pub check: CheckSpec,
    /// The fingerprint of its server's document.
    pub server: String,
    /// Whether its failure fails the run.
    #[serde(default = "blocking_by_default")]
    pub blocking: bool,
}

fn blocking_by_default() -> bool {
    true
}

impl CheckExec {
    /// The check `name` as declared, against a server serving `model`,
    /// its prompts drawn under `seed`.
    pub fn of(name: &str, decl: &CheckDecl, model: &str, seed: u64, server: String) -> CheckExec {
        let count = |n: u64| n.clamp(1, u64::from(u32::MAX)) as u32;
        let mut check = CheckSpec::new(name.to_string(), decl.check_type, model.to_string());
        check.prompt = decl.prompt.clone();
        check.schema = decl.schema.clone();
        check.tool = decl.tool.clone();
        if let Some(n) = decl.requests {
            check.requests = count(n);
        }
        if let Some(n) = decl.concurrency {
            check.concurrency = count(n);
        }
        if let Some(n) = decl.max_tokens {
            check.max_tokens = count(n);
        }
        check.thinking = match decl.thinking {
            ThinkingMode::On => Some(true),
            ThinkingMode::Off => Some(false),
            ThinkingMode::Default => None,
        };
        if let Some(timeout) = decl.timeout {
            check.timeout_ms = timeout.as_millis() as u64;
        }
        check.shared_prefix_tokens = decl.shared_prefix_tokens;
        check.seed = seed;
        CheckExec { check, server, blocking: decl.blocking }
    }
}
