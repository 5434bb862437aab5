//! The kinds of declaration a recipe may hold.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Server,
    Workload,
    Cell,
    Check,
    Gate,
    Task,
    Screen,
    Decision,
    Finally,
    Search,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Server,
        Kind::Workload,
        Kind::Cell,
        Kind::Check,
        Kind::Gate,
        Kind::Task,
        Kind::Screen,
        Kind::Decision,
        Kind::Finally,
        Kind::Search,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Server => "server",
            Kind::Workload => "workload",
            Kind::Cell => "cell",
            Kind::Check => "check",
            Kind::Gate => "gate",
            Kind::Task => "task",
            Kind::Screen => "screen",
            Kind::Decision => "decision",
            Kind::Finally => "finally",
            Kind::Search => "search",
        }
    }

    pub fn parse(word: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == word)
    }

    /// Workloads are settings that cells take in; they are not steps of the DAG.
    pub fn is_step(self) -> bool {
        self != Kind::Workload
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
