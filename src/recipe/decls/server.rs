//! `server`: an inference server, launched by command line, simulated, or
//! an external endpoint.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anvil_net::TlsSettings;

use serde_json::Value;

use super::super::decl::Draft;
use super::super::problem::Problems;
use super::super::schema::{FieldSpec, Shape, field, many, note};
use super::super::words::EngineKind;

pub const FIELDS: &[FieldSpec] = &[
    field("engine", Shape::OneOf(EngineKind::WORDS)),
    field("command", Shape::Strings),
    many("args", Shape::Strings),
    many("env", Shape::Props),
    field("cwd", Shape::Str),
    field("model", Shape::Str),
    many("identity", Shape::Props),
    field("gpus", Shape::Int),
    note("gpu-label"),
    field("replicas", Shape::Int),
    field("port", Shape::Int),
    field("ready", Shape::Props),
    field("grace", Shape::Duration),
    many("sim", Shape::Block),
    field("url", Shape::Str),
    note("api-key-env"),
    // How to trust an https server. Neither enters the fingerprint: they
    // decide whether a connection is made, not what a result is.
    unhashed("ca-bundle", Shape::Str),
    unhashed("tls-insecure", Shape::Bool),
    many("reads", Shape::Strings),
    field("version-args", Shape::Strings),
    many("warmup", Shape::Props),
];

/// A field that decides how a server is reached, not what it computes.
const fn unhashed(name: &'static str, shape: Shape) -> FieldSpec {
    FieldSpec { name, shape, required: false, hashed: false, accumulates: false }
}

/// Settings that a server's simulated twin keeps; the real command line
/// cannot change a simulated result, so it does not count there.
pub const TWIN_SETTINGS: &[&str] = &["sim", "model", "replicas", "gpus", "identity"];

#[derive(Debug, Clone)]
pub struct ServerDecl {
    pub engine: Engine,
    pub model: Option<String>,
    /// Pinned identities (model revision, image digest, …) for the decision summary.
    pub identity: BTreeMap<String, Value>,
    /// GPUs per replica (0: none).
    pub gpus: u64,
    pub gpu_label: Option<String>,
    /// At least 1.
    pub replicas: u64,
    /// The simulated engine's profile (`sim { decode-step-ms 12 }`), also
    /// used by a launched server's simulated twin.
    pub sim: Option<Value>,
    pub reads: Vec<String>,
    pub warmup: Warmup,
    /// `ca-bundle` (as written, relative to the recipe) and `tls-insecure`:
    /// how to trust an https `url`, or a launched server that serves https.
    pub tls: TlsSettings,
}

impl ServerDecl {
    /// Whether a launched server speaks https: it declared how to trust it.
    pub fn serves_https(&self) -> bool {
        !self.tls.is_default()
    }
}

#[derive(Debug, Clone)]
pub enum Engine {
    /// anvil's simulated engine.
    Sim,
    Command(CommandEngine),
    External {
        url: String,
        api_key_env: Option<String>,
    },
}

impl Engine {
    pub fn kind(&self) -> EngineKind {
        match self {
            Engine::Sim => EngineKind::Sim,
            Engine::Command(_) => EngineKind::Command,
            Engine::External { .. } => EngineKind::External,
        }
    }
}

/// A server anvil launches: `command` + `args`, with `{port}`, `{host}`,
/// `{gpus}` and `{replica}` filled at launch.
#[derive(Debug, Clone)]
pub struct CommandEngine {
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub port: Option<u16>,
    pub ready: ReadyDecl,
    /// How long a stop waits between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// How to ask the engine binary its version (for the fingerprint).
    pub version_args: Vec<String>,
}

/// `ready http="/health" status=200 timeout="10m" log="…"`.
#[derive(Debug, Clone, Default)]
pub struct ReadyDecl {
    pub http: Option<String>,
    pub status: Option<u16>,
    pub timeout: Option<Duration>,
    pub log: Option<String>,
}

/// `warmup requests=4 max-tokens=16`: short unmeasured requests before the
/// server's first step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Warmup {
    pub requests: u64,
    pub max_tokens: u64,
}

const DEFAULT_GRACE: Duration = Duration::from_secs(10);

pub(super) fn build(draft: &Draft, problems: &mut Problems) -> ServerDecl {
    let s = &draft.settings;
    // The loader has settled `engine` (declared, or inferred from url/command).
    let engine = match s.str("engine").and_then(EngineKind::from_word).unwrap_or(EngineKind::Sim) {
        EngineKind::Sim => Engine::Sim,
        EngineKind::External => Engine::External {
            url: s.string("url").unwrap_or_default(),
            api_key_env: s.string("api-key-env"),
        },
        EngineKind::Command => {
            let ready = s.props("ready");
            let text = |key: &str| ready.get(key).and_then(Value::as_str).map(str::to_string);
            let port = s.u64("port").and_then(|p| match u16::try_from(p) {
                Ok(port) => Some(port),
                Err(_) => {
                    problems.push(
                        draft
                            .problem_at("port", format!("port {p} is out of range (1 … 65535)"))
                            .label("port"),
                    );
                    None
                }
            });
            Engine::Command(CommandEngine {
                command: s.strings("command"),
                args: s.strings("args"),
                env: s.text_props("env"),
                cwd: s.string("cwd"),
                port,
                ready: ReadyDecl {
                    http: text("http"),
                    status: ready.get("status").and_then(Value::as_u64).and_then(|v| u16::try_from(v).ok()),
                    timeout: text("timeout").and_then(|t| super::super::parse_duration(&t).ok()),
                    log: text("log"),
                },
                grace: s.duration("grace").unwrap_or(DEFAULT_GRACE),
                version_args: if s.contains("version-args") {
                    s.strings("version-args")
                } else {
                    vec!["--version".to_string()]
                },
            })
        }
    };
    let warmup = s.props("warmup");
    let tls = TlsSettings {
        ca_bundle: s.string("ca-bundle").map(PathBuf::from),
        insecure: s.bool("tls-insecure") == Some(true),
    };
    if tls.ca_bundle.is_some() && tls.insecure {
        problems.push(
            draft
                .problem_at(
                    "tls-insecure",
                    "`tls-insecure` turns verification off, so a `ca-bundle` would be ignored: keep one",
                )
                .label("tls-insecure"),
        );
    }
    if matches!(engine, Engine::Sim) && !tls.is_default() {
        let key = if tls.insecure { "tls-insecure" } else { "ca-bundle" };
        problems.push(
            draft
                .problem_at(key, "the simulated engine serves plain http; `ca-bundle` and `tls-insecure` are for external (`url`) and launched (`command`) servers")
                .label(key),
        );
    }
    ServerDecl {
        engine,
        model: s.string("model"),
        identity: s.props("identity"),
        gpus: s.u64("gpus").unwrap_or(0),
        gpu_label: s.string("gpu-label"),
        replicas: s.u64("replicas").unwrap_or(1).max(1),
        sim: s.get("sim").cloned(),
        reads: s.strings("reads"),
        warmup: Warmup {
            requests: warmup.get("requests").and_then(Value::as_u64).unwrap_or(0),
            max_tokens: warmup.get("max-tokens").and_then(Value::as_u64).unwrap_or(16),
        },
        tls,
    }
}
