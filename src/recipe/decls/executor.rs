//! `executor "slurm" { … }`: where a run's cells, checks and tasks may run
//! (in the recipe or an included site file). It configures the executor
//! `anvil run --executor slurm` uses; it is not a step and enters no
//! fingerprint.
//!
//! Each executor's settings are one struct here, read from its block and
//! handed as they are to the executor (`src/executor/`), which gives them
//! their meaning: the recipe and the executor share one definition.

use std::path::PathBuf;

use kdl::{KdlNode, KdlValue};

use super::super::problem::{Problem, Problems, SourceText, did_you_mean};

/// An executor block: its kind and that kind's settings.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutorDecl {
    Slurm(SlurmSettings),
}

/// The kinds an executor block can name.
pub const KINDS: &[&str] = &["slurm"];

pub use crate::executor::slurm::settings::SlurmSettings;

impl SlurmSettings {
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

    fn set(&mut self, name: &str, strings: &[String]) -> Setting {
        let one = || strings.first().cloned();
        match name {
            "partition" => self.partition = one(),
            "account" => self.account = one(),
            "qos" => self.qos = one(),
            "time-limit" => self.time_limit = one(),
            "constraint" => self.constraint = one(),
            "sbatch-args" => self.sbatch_args.extend(strings.iter().cloned()),
            "anvil-binary" => self.anvil_binary = one().map(PathBuf::from),
            "mem" => self.mem = one(),
            "cpus" => match one().and_then(|s| s.parse().ok()) {
                Some(n) => self.cpus = Some(n),
                None => return Setting::Invalid("cpus must be a positive integer".into()),
            },
            _ => return Setting::Unknown,
        }
        Setting::Set
    }
}

/// What reading one setting of a block did.
enum Setting {
    Set,
    /// A known setting with a value it cannot take.
    Invalid(String),
    Unknown,
}

impl ExecutorDecl {
    /// A block of `kind` with nothing set; None for a kind there is no executor of.
    fn empty(kind: &str) -> Option<ExecutorDecl> {
        match kind {
            "slurm" => Some(ExecutorDecl::Slurm(SlurmSettings::default())),
            _ => None,
        }
    }

    /// The settings a block of this kind takes.
    pub fn settings(&self) -> &'static [&'static str] {
        match self {
            ExecutorDecl::Slurm(_) => SlurmSettings::SETTINGS,
        }
    }

    fn set(&mut self, name: &str, strings: &[String]) -> Setting {
        match self {
            ExecutorDecl::Slurm(settings) => settings.set(name, strings),
        }
    }
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
    let Some(mut decl) = ExecutorDecl::empty(kind) else {
        problems.push(
            Problem::new(source, node.span(), format!("unknown executor `{kind}`"))
                .help(format!("executors: {}", KINDS.join(", "))),
        );
        return None;
    };
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
        match decl.set(name, &strings) {
            Setting::Set => {}
            Setting::Invalid(why) => problems.push(Problem::new(source, child.span(), why)),
            Setting::Unknown => {
                let settings = decl.settings();
                problems.push(
                    Problem::new(source, child.name().span(), format!("unknown executor setting `{name}`"))
                        .maybe_help(
                            did_you_mean(name, settings.iter().copied())
                                .or(Some(format!("an executor takes: {}", settings.join(", ")))),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_read_into_the_struct() {
        let mut decl = ExecutorDecl::empty("slurm").unwrap();
        assert!(matches!(decl.set("time-limit", &["4:00:00".into()]), Setting::Set));
        assert!(matches!(decl.set("cpus", &["many".into()]), Setting::Invalid(_)));
        assert!(matches!(decl.set("partitoin", &["gpu".into()]), Setting::Unknown));
        let ExecutorDecl::Slurm(settings) = decl;
        assert_eq!(settings.time_limit.as_deref(), Some("4:00:00"));
        assert!(ExecutorDecl::empty("kubernetes").is_none());
    }
}
