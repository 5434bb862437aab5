//! How a server's replicas are launched: the command line (with run-time
//! placeholders filled), its environment, readiness and stop grace; or the
//! simulated twin, which is this very binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anvil_proc::{LaunchSpec, ReadySpec};
use serde_json::Value;

use crate::document::ServerExec;
use crate::document::launch::{CommandEngine, Readiness};
use crate::placeholders::render;

fn ready_spec(ready: &Readiness, default_timeout: Duration) -> ReadySpec {
    let mut spec = ReadySpec { timeout: ready.timeout.unwrap_or(default_timeout), ..ReadySpec::default() };
    if let Some(path) = &ready.http {
        spec.http_path = Some(path.clone());
    }
    if let Some(status) = ready.status {
        spec.expect_status = status;
    }
    if let Some(pattern) = &ready.log {
        spec.log_pattern = Some(pattern.clone());
        // A log line alone is the signal unless an HTTP probe is asked for too.
        if ready.http.is_none() {
            spec.http_path = None;
        }
    }
    spec
}

/// The simulated twin: this very binary, `anvil sim`, with the `sim { … }` block.
pub(super) fn sim_launch(
    launch: &ServerExec,
    name: &str,
    port: u16,
    log_path: PathBuf,
    recipe_dir: &Path,
) -> Result<LaunchSpec, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the anvil binary: {e}"))?;
    let mut args = vec!["sim".to_string(), "--port".into(), port.to_string()];
    if let Some(model) = &launch.model {
        args.extend(["--set".to_string(), format!("model={model}")]);
    }
    for (key, value) in flatten_sim_block(launch.sim.as_ref()) {
        // A file the sim reads is named relative to the recipe, as every file is.
        let value =
            if key == "answers.dataset" { recipe_dir.join(value).display().to_string() } else { value };
        args.extend(["--set".to_string(), format!("{key}={value}")]);
    }
    Ok(LaunchSpec {
        name: name.to_string(),
        program: exe.display().to_string(),
        args,
        env: Vec::new(),
        cwd: None,
        port,
        ready: ReadySpec { timeout: Duration::from_secs(30), ..ReadySpec::default() },
        log_path,
        grace: Duration::from_secs(2),
        registry_dir: PathBuf::new(),
    })
}

/// `sim { decode-step-ms 12; faults { http-500-rate 0.1 } }` → `decode-step-ms=12`, `faults.http-500-rate=0.1`.
fn flatten_sim_block(block: Option<&Value>) -> Vec<(String, String)> {
    fn walk(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&key, v, out);
                }
            }
            Value::String(s) => out.push((prefix.to_string(), s.clone())),
            other => out.push((prefix.to_string(), other.to_string())),
        }
    }
    let mut out = Vec::new();
    if let Some(v) = block {
        walk("", v, &mut out);
    }
    out
}

pub(super) fn command_launch(
    command: &CommandEngine,
    name: &str,
    port: u16,
    vars: &BTreeMap<&str, String>,
    recipe_dir: &Path,
    log_path: PathBuf,
) -> Result<LaunchSpec, String> {
    let mut argv: Vec<String> =
        command.command.iter().chain(&command.args).map(|a| render(a, vars)).collect();
    if argv.is_empty() {
        return Err(format!("server `{name}` has no command"));
    }
    let program = argv.remove(0);
    let env = command.env.iter().map(|(k, v)| (k.clone(), render(v, vars))).collect();
    Ok(LaunchSpec {
        name: name.to_string(),
        program,
        args: argv,
        env,
        cwd: Some(
            command
                .cwd
                .as_ref()
                .map_or_else(|| recipe_dir.to_path_buf(), |c| recipe_dir.join(render(c, vars))),
        ),
        port,
        ready: ready_spec(&command.ready, Duration::from_secs(600)),
        log_path,
        grace: command.grace,
        registry_dir: PathBuf::new(),
    })
}
