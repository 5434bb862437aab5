//! How a server is launched or reached, as a server's step document
//! holds it: the engine (simulated, a command line, an external
//! endpoint), its readiness check and warm-up. The recipe's `server`
//! declaration builds these; an executor launches from them.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::engines::{EngineName, EnginePreset};
use crate::words::EngineKind;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Engine {
    /// anvil's simulated engine.
    Sim,
    /// Boxed: a launched engine's settings (and its preset) are far larger
    /// than the other kinds'.
    Command(Box<CommandEngine>),
    External {
        url: String,
        api_key_env: Option<String>,
    },
}

impl Engine {
    pub fn kind(&self) -> EngineKind {
        match self {
            Engine::Sim => EngineKind::Sim,
            Engine::Command(command) => match command.preset.as_ref().map(|p| p.name) {
                None => EngineKind::Command,
                Some(EngineName::Vllm) => EngineKind::Vllm,
                Some(EngineName::Sglang) => EngineKind::Sglang,
                Some(EngineName::LlamaCpp) => EngineKind::LlamaCpp,
            },
            Engine::External { .. } => EngineKind::External,
        }
    }

    /// The engine preset of a server launched by engine name.
    pub fn preset(&self) -> Option<&EnginePreset> {
        match self {
            Engine::Command(command) => command.preset.as_ref(),
            Engine::Sim | Engine::External { .. } => None,
        }
    }
}

/// A server anvil launches: `command` + `args`, with `{port}`, `{host}`,
/// `{gpus}` and `{replica}` filled at launch.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CommandEngine {
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub port: Option<u16>,
    pub ready: Readiness,
    /// How long a stop waits between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// How to ask the engine binary its version (for the fingerprint).
    pub version_args: Vec<String>,
    /// Launched by engine name: what anvil knows of it (`command` is then
    /// the preset's command line).
    pub preset: Option<EnginePreset>,
}

/// `ready http="/health" status=200 timeout="10m" log="…"`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Readiness {
    pub http: Option<String>,
    pub status: Option<u16>,
    pub timeout: Option<Duration>,
    pub log: Option<String>,
}

/// `warmup requests=4 max-tokens=16`: short unmeasured requests before the
/// server's first step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Warmup {
    pub requests: u64,
    pub max_tokens: u64,
}
