//! `server`: an inference server, launched by command line, simulated, or
//! an external endpoint.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anvil_net::TlsSettings;

use serde_json::Value;

use super::super::problem::Problems;
use super::super::settings::{Draft, settings};
use crate::engines::{EngineName, EnginePreset};
use crate::scrape_url::scrape_base_url;
use crate::words::EngineKind;

/// Settings that a server's simulated twin keeps; the real command line
/// cannot change a simulated result, so it does not count there.
/// The tokenizer stays: the twin's cells build their prompts with it too.
pub const TWIN_SETTINGS: &[&str] =
    &[key::sim, key::model, key::replicas, key::gpus, key::identity, key::tokenizer];

settings! {
    #[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
    pub struct ServerDecl {
        /// `sim`, `command`, `external`, or an engine anvil knows by name
        /// (`vllm`, `sglang`, `llama.cpp`); the loader infers it when unset.
        key engine = "engine" as Word(EngineKind),
        pub engine: Engine,
        /// A launched server's program and arguments.
        key command = "command" as Strings,
        key args = many "args" as Strings,
        key env = many "env" as TextProps,
        key cwd = "cwd" as Str,
        pub model: Option<String> = "model" as Str,
        /// The served model's own tokenizer: `"PATH"` (a tokenizer.json or
        /// its folder), `"hf:ORG/NAME"` (the local Hugging Face cache) or
        /// `"server"` (its tokenize endpoint); prompts are then token-exact.
        key tokenizer = "tokenizer" as Str,
        pub tokenizer: Option<anvil_loadgen::TokenizerSpec>,
        /// Pinned identities (model revision, image digest, …) for the decision summary.
        pub identity: BTreeMap<String, Value> = many "identity" as Props,
        /// GPUs per replica (0: none).
        pub gpus: u64 = "gpus" as Int or 0,
        pub gpu_label: Option<String> = unhashed "gpu-label" as Str,
        key replicas = "replicas" as Int,
        /// At least 1.
        pub replicas: u64,
        key port = "port" as Int,
        /// `ready http="/health" status=200 timeout="10m" log="…"`.
        key ready = "ready" as Props,
        key grace = "grace" as Duration,
        /// The simulated engine's profile (`sim { decode-step-ms 12 }`), also
        /// used by a launched server's simulated twin.
        pub sim: Option<Value> = many "sim" as Block,
        /// An external server's address.
        key url = "url" as Str,
        key api_key_env = unhashed "api-key-env" as Str,
        // How to trust an https server. Neither enters the fingerprint: they
        // decide whether a connection is made, not what a result is.
        key ca_bundle = unhashed "ca-bundle" as Str,
        key tls_insecure = unhashed "tls-insecure" as Bool,
        /// More Prometheus endpoints to read with the server's own `/metrics`
        /// (a DCGM exporter, a node exporter): `scrape "http://HOST:PORT/metrics"`,
        /// one or more. Unhashed: they decide what is observed, not what is measured.
        pub scrape: Vec<String> = unhashed many "scrape" as Strings,
        pub reads: Vec<String> = many "reads" as Strings,
        key version_args = "version-args" as Strings,
        // An engine known by name: its command line is made from these.
        key weights = "weights" as Str,
        key revision = "revision" as Str,
        key python = "python" as Str,
        key binary = "binary" as Str,
        key tensor_parallel = "tensor-parallel" as Int,
        key chunked_prefill = "chunked-prefill" as Int,
        key speculative_config = "speculative-config" as Str,
        /// `warmup requests=4 max-tokens=16`.
        key warmup = many "warmup" as Props,
        pub warmup: Warmup,
        /// `ca-bundle` (as written, relative to the recipe) and `tls-insecure`:
        /// how to trust an https `url`, or a launched server that serves https.
        pub tls: TlsSettings,
    }
    /// The fields `build` makes by hand.
    struct ServerRest;
}

impl ServerDecl {
    /// The model name its requests carry: as declared, else [`DEFAULT_MODEL`].
    pub fn served_model(&self) -> &str {
        self.model.as_deref().unwrap_or(DEFAULT_MODEL)
    }
}

pub use crate::document::launch::{CommandEngine, Engine, Readiness, Warmup};

const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// The model name a server's requests carry (and an engine by name serves)
/// when its declaration names none.
pub const DEFAULT_MODEL: &str = "default";

pub(super) fn build(draft: &Draft, problems: &mut Problems) -> ServerDecl {
    let s = &draft.settings;
    // The loader has settled `engine` (declared, or inferred from url/command).
    let kind = s.str(key::engine).and_then(EngineKind::from_word).unwrap_or(EngineKind::Sim);
    let engine = match kind {
        EngineKind::Sim => Engine::Sim,
        EngineKind::External => Engine::External {
            url: s.string(key::url).unwrap_or_default(),
            api_key_env: s.string(key::api_key_env),
        },
        EngineKind::Command => {
            Engine::Command(Box::new(command_engine(draft, problems, s.strings(key::command), None)))
        }
        EngineKind::Vllm | EngineKind::Sglang | EngineKind::LlamaCpp => {
            let preset = preset(draft, problems, kind);
            let argv = preset.command_line();
            Engine::Command(Box::new(command_engine(draft, problems, argv, Some(preset))))
        }
    };
    let warmup = s.props(key::warmup);
    let tls = TlsSettings {
        ca_bundle: s.string(key::ca_bundle).map(PathBuf::from),
        insecure: s.bool(key::tls_insecure) == Some(true),
    };
    if tls.ca_bundle.is_some() && tls.insecure {
        problems.push(
            draft
                .problem_at(
                    key::tls_insecure,
                    "`tls-insecure` turns verification off, so a `ca-bundle` would be ignored: keep one",
                )
                .label(key::tls_insecure),
        );
    }
    if matches!(engine, Engine::Sim) && !tls.is_default() {
        let setting = if tls.insecure { key::tls_insecure } else { key::ca_bundle };
        problems.push(
            draft
                .problem_at(setting, "the simulated engine serves plain http; `ca-bundle` and `tls-insecure` are for external (`url`) and launched (`command`) servers")
                .label(setting),
        );
    }
    for url in s.strings(key::scrape) {
        if let Err(why) = scrape_base_url(&url) {
            problems
                .push(draft.problem_at(key::scrape, format!("scrape \"{url}\": {why}")).label(key::scrape));
        }
    }
    let tokenizer = s.str(key::tokenizer).and_then(|word| match anvil_loadgen::TokenizerSpec::parse(word) {
        Ok(spec) => Some(spec),
        Err(problem) => {
            problems.push(draft.problem_at(key::tokenizer, problem.to_string()).label(key::tokenizer));
            None
        }
    });
    let rest = ServerRest {
        tokenizer,
        engine,
        replicas: s.u64(key::replicas).unwrap_or(1).max(1),
        warmup: Warmup {
            requests: warmup.get("requests").and_then(Value::as_u64).unwrap_or(0),
            max_tokens: warmup.get("max-tokens").and_then(Value::as_u64).unwrap_or(16),
        },
        tls,
    };
    let mut server = ServerDecl::from_settings(s, rest);
    // The sim's scored dataset: what it answers is read from it, so its content counts.
    let sim_dataset = server.sim.as_ref().and_then(|sim| sim.get("answers")?.get("dataset")?.as_str());
    if let Some(file) = sim_dataset.map(str::to_string).filter(|f| !server.reads.contains(f)) {
        server.reads.push(file);
    }
    server
}

/// The launch settings every launched server has, around its command line.
fn command_engine(
    draft: &Draft,
    problems: &mut Problems,
    command: Vec<String>,
    preset: Option<EnginePreset>,
) -> CommandEngine {
    let s = &draft.settings;
    let ready = s.props(key::ready);
    let text = |key: &str| ready.get(key).and_then(Value::as_str).map(str::to_string);
    let port = s.u64(key::port).and_then(|p| match u16::try_from(p) {
        Ok(port) => Some(port),
        Err(_) => {
            problems.push(
                draft.problem_at(key::port, format!("port {p} is out of range (1 … 65535)")).label("port"),
            );
            None
        }
    });
    // A preset knows its engine's readiness and stop; the recipe may still say.
    let ready_http = text("http").or_else(|| preset.as_ref().map(|p| p.ready_path().to_string()));
    let default_grace = preset.as_ref().map_or(DEFAULT_GRACE, EnginePreset::grace);
    CommandEngine {
        command,
        args: s.strings(key::args),
        env: s.text_props(key::env),
        cwd: s.string(key::cwd),
        port,
        ready: Readiness {
            http: ready_http,
            status: ready.get("status").and_then(Value::as_u64).and_then(|v| u16::try_from(v).ok()),
            timeout: text("timeout").and_then(|t| super::super::schema::parse_duration(&t).ok()),
            log: text("log"),
        },
        grace: s.duration(key::grace).unwrap_or(default_grace),
        version_args: if s.contains(key::version_args) {
            s.strings(key::version_args)
        } else if preset.as_ref().is_some_and(|p| p.name.is_python()) {
            // A Python engine is identified by its packages, not `python3 --version`.
            Vec::new()
        } else {
            vec!["--version".to_string()]
        },
        preset,
    }
}

/// An engine known by name, from its typed settings; a setting the engine
/// has no use for is a problem at its span.
fn preset(draft: &Draft, problems: &mut Problems, kind: EngineKind) -> EnginePreset {
    let s = &draft.settings;
    let name = match kind {
        EngineKind::Vllm => EngineName::Vllm,
        EngineKind::Sglang => EngineName::Sglang,
        _ => EngineName::LlamaCpp,
    };
    let (program_key, other_key) =
        if name.is_python() { (key::python, key::binary) } else { (key::binary, key::python) };
    let mut refuse = |setting: &str, why: String| {
        if s.contains(setting) {
            problems.push(draft.problem_at(setting, why).label(setting));
        }
    };
    refuse(other_key, format!("engine \"{kind}\" is started by `{program_key}`, not `{other_key}`"));
    refuse(key::command, format!("engine \"{kind}\" makes its own command line: put extra flags in `args`"));
    if name != EngineName::Vllm {
        refuse(
            key::speculative_config,
            format!("`speculative-config` is vLLM's; give engine \"{kind}\" its speculative flags in `args`"),
        );
    }
    if name == EngineName::LlamaCpp {
        refuse(key::tensor_parallel, "llama.cpp splits a model with `--split-mode` in `args`".into());
        refuse(key::revision, "llama.cpp loads a local GGUF file: `weights` is its path".into());
    }
    EnginePreset {
        name,
        program: s.string(program_key).unwrap_or_else(|| name.default_program().to_string()),
        weights: s.string(key::weights).unwrap_or_default(),
        revision: s.string(key::revision),
        served_name: s.string(key::model).unwrap_or_else(|| DEFAULT_MODEL.to_string()),
        tensor_parallel: s.u64(key::tensor_parallel),
        chunked_prefill: s.u64(key::chunked_prefill),
        speculative_config: s.string(key::speculative_config),
    }
}
