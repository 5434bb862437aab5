//! `executor "slurm" { … }`: where a run's cells, checks and tasks may run
//! (in the recipe or an included site file). It configures the executor
//! `anvil run --executor slurm` uses; it is not a step and enters no
//! fingerprint.

use kdl::{KdlNode, KdlValue};
use serde::{Deserialize, Serialize};

use super::super::problem::{Problem, Problems, SourceText, did_you_mean};

pub const SETTINGS: &[&str] = &[
    "partition",
    "account",
    "qos",
    "time-limit",
    "constraint",
    "sbatch-args",
    "anvil-binary",
    "cpus",
    "mem",
];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutorDecl {
    /// `slurm` (the only kind so far).
    pub kind: String,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub time_limit: Option<String>,
    pub constraint: Option<String>,
    pub sbatch_args: Vec<String>,
    pub anvil_binary: Option<String>,
    pub cpus: Option<u32>,
    pub mem: Option<String>,
}

pub fn read(node: &KdlNode, source: &SourceText, problems: &mut Problems) -> Option<ExecutorDecl> {
    let kind = node.entries().iter().find(|e| e.name().is_none()).and_then(|e| e.value().as_string());
    let Some(kind) = kind else {
        problems.push(
            Problem::new(source, node.span(), "an executor needs a kind")
                .help("write: executor \"slurm\" { … }"),
        );
        return None;
    };
    if kind != "slurm" {
        problems.push(
            Problem::new(source, node.span(), format!("unknown executor `{kind}`")).help("executors: slurm"),
        );
        return None;
    }
    let mut decl = ExecutorDecl { kind: kind.to_string(), ..ExecutorDecl::default() };
    for child in node.children().map(|d| d.nodes()).unwrap_or_default() {
        let name = child.name().value();
        let strings: Vec<String> = child
            .entries()
            .iter()
            .filter(|e| e.name().is_none())
            .filter_map(|e| match e.value() {
                KdlValue::String(s) => Some(s.clone()),
                KdlValue::Integer(i) => Some(i.to_string()),
                _ => None,
            })
            .collect();
        let one = || strings.first().cloned();
        match name {
            "partition" => decl.partition = one(),
            "account" => decl.account = one(),
            "qos" => decl.qos = one(),
            "time-limit" => decl.time_limit = one(),
            "constraint" => decl.constraint = one(),
            "sbatch-args" => decl.sbatch_args.extend(strings.iter().cloned()),
            "anvil-binary" => decl.anvil_binary = one(),
            "mem" => decl.mem = one(),
            "cpus" => match one().and_then(|s| s.parse().ok()) {
                Some(n) => decl.cpus = Some(n),
                None => problems.push(Problem::new(source, child.span(), "cpus must be a positive integer")),
            },
            other => {
                problems.push(
                    Problem::new(source, child.name().span(), format!("unknown executor setting `{other}`"))
                        .maybe_help(
                            did_you_mean(other, SETTINGS.iter().copied())
                                .or(Some(format!("an executor takes: {}", SETTINGS.join(", ")))),
                        ),
                );
                continue;
            }
        }
        if strings.is_empty() {
            problems.push(Problem::new(source, child.span(), format!("`{name}` needs a value")));
        }
    }
    Some(decl)
}
