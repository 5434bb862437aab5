//! Servers are started lazily: the first step that needs one starts it,
//! every step that needs it shares it while it is warm, and the last one
//! to finish stops it. A server whose steps are all stored never starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anvil_loadgen::Target;
use anvil_proc::{GpuLease, GpuPool, LaunchSpec, ReadySpec, RunningServer};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::plan::EngineMode;
use crate::recipe::Decl;

/// What a step needs to talk to a running server.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub targets: Vec<Target>,
    pub engine: String,
    pub simulated: bool,
    pub model: String,
    pub gpu_label: Option<String>,
    pub startup_ms: Vec<u64>,
    pub log_paths: Vec<PathBuf>,
    pub serve_flags: Value,
    /// GPU ids handed to the replicas (for telemetry).
    pub gpu_ids: Vec<String>,
    /// What the server's `warmup` did before its first step.
    pub warmup: Value,
}

#[allow(clippy::large_enum_variant)] // one slot per server: its size does not matter
enum Slot {
    Idle,
    Running { info: ServerInfo, processes: Vec<RunningServer>, _gpus: Vec<GpuLease> },
    Failed(String),
    Stopped,
}

pub struct ServerPool {
    slots: BTreeMap<usize, Mutex<Slot>>,
    /// One measuring step per server at a time: two cells sharing a server
    /// would load each other and corrupt both measurements.
    turns: BTreeMap<usize, Mutex<()>>,
    /// Steps still to come that need each server.
    users: std::sync::Mutex<BTreeMap<usize, usize>>,
    decls: BTreeMap<usize, Decl>,
    mode: EngineMode,
    log_dir: PathBuf,
    registry_dir: PathBuf,
    recipe_dir: PathBuf,
    gpus: Arc<GpuPool>,
}

impl ServerPool {
    pub fn new(
        decls: BTreeMap<usize, Decl>,
        users: BTreeMap<usize, usize>,
        mode: EngineMode,
        log_dir: PathBuf,
        recipe_dir: PathBuf,
        gpus: GpuPool,
    ) -> ServerPool {
        ServerPool {
            slots: decls.keys().map(|&i| (i, Mutex::new(Slot::Idle))).collect(),
            turns: decls.keys().map(|&i| (i, Mutex::new(()))).collect(),
            users: std::sync::Mutex::new(users),
            decls,
            mode,
            log_dir,
            registry_dir: registry_dir(),
            recipe_dir,
            gpus: Arc::new(gpus),
        }
    }

    /// Wait until no other step is measuring on this server.
    pub async fn turn(&self, index: usize) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        Some(self.turns.get(&index)?.lock().await)
    }

    /// The running server, started now if this is its first user.
    pub async fn acquire(&self, index: usize) -> Result<ServerInfo, String> {
        let slot = self.slots.get(&index).ok_or("not a server")?;
        let mut slot = slot.lock().await;
        match &*slot {
            Slot::Running { info, .. } => return Ok(info.clone()),
            Slot::Failed(why) => return Err(why.clone()),
            Slot::Stopped => return Err("server was already stopped".into()),
            Slot::Idle => {}
        }
        match self.start(index).await {
            Ok((info, processes, gpus)) => {
                *slot = Slot::Running { info: info.clone(), processes, _gpus: gpus };
                Ok(info)
            }
            Err(why) => {
                *slot = Slot::Failed(why.clone());
                Err(why)
            }
        }
    }

    /// Has a replica of this server exited on its own? (A crash mid-cell.)
    pub async fn crashed(&self, index: usize) -> Option<String> {
        let mut slot = self.slots.get(&index)?.lock().await;
        if let Slot::Running { processes, .. } = &mut *slot {
            for p in processes.iter_mut() {
                if let Some(status) = p.has_exited() {
                    return Some(format!(
                        "server `{}` exited during the step ({status}); log tail:\n{}",
                        p.name(),
                        p.log_tail(20)
                    ));
                }
            }
        }
        None
    }

    /// One user is done; the last one stops the server.
    pub async fn release(&self, index: usize) {
        let last = {
            let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
            let Some(count) = users.get_mut(&index) else { return };
            *count = count.saturating_sub(1);
            *count == 0
        };
        if last {
            self.stop(index).await;
        }
    }

    pub async fn stop(&self, index: usize) {
        let Some(slot) = self.slots.get(&index) else { return };
        let mut slot = slot.lock().await;
        if let Slot::Running { processes, .. } = std::mem::replace(&mut *slot, Slot::Stopped) {
            for p in processes {
                p.stop().await;
            }
        }
    }

    pub async fn stop_all(&self) {
        for &index in self.slots.keys() {
            self.stop(index).await;
        }
    }

    async fn start(&self, index: usize) -> Result<(ServerInfo, Vec<RunningServer>, Vec<GpuLease>), String> {
        let decl = &self.decls[&index];
        let declared_engine = decl.str("engine").unwrap_or("sim");
        let engine = if self.mode == EngineMode::SimulatedTwins { "sim" } else { declared_engine };
        let model = decl.str("model").unwrap_or("default").to_string();
        let replicas = decl.u64("replicas").unwrap_or(1).max(1) as usize;
        let mut info = ServerInfo {
            name: decl.name.clone(),
            targets: Vec::new(),
            engine: if engine == "sim" { "anvil-sim".into() } else { engine_label(decl) },
            simulated: engine == "sim",
            model: model.clone(),
            gpu_label: decl.str("gpu-label").map(str::to_string),
            startup_ms: Vec::new(),
            log_paths: Vec::new(),
            gpu_ids: Vec::new(),
            warmup: Value::Null,
            serve_flags: json!({"engine": engine, "replicas": replicas, "args": decl.strings("args"), "simulated_twin_of": (engine == "sim" && declared_engine != "sim").then_some(declared_engine)}),
        };
        if engine == "external" {
            let url = decl.str("url").unwrap_or_default().trim_end_matches('/').to_string();
            let api_key = decl.str("api-key-env").and_then(|var| std::env::var(var).ok());
            info.targets.push(Target { base_url: url, api_key, label: decl.name.clone() });
            info.warmup = warm_up(decl, &info).await?;
            return Ok((info, Vec::new(), Vec::new()));
        }
        let mut processes = Vec::new();
        let mut leases = Vec::new();
        for replica in 0..replicas {
            let lease = match decl.u64("gpus").filter(|&n| n > 0 && engine != "sim") {
                Some(n) => {
                    Some(self.gpus.acquire_for(&decl.name, n as usize).await.map_err(|e| e.to_string())?)
                }
                None => None,
            };
            let port = match decl.u64("port") {
                Some(p) if replicas == 1 => p as u16,
                _ => anvil_proc::free_port().map_err(|e| format!("no free port: {e}"))?,
            };
            let gpu_ids = lease.as_ref().map(|l| l.ids.join(",")).unwrap_or_default();
            info.gpu_ids.extend(lease.iter().flat_map(|l| l.ids.iter().cloned()));
            let vars = BTreeMap::from([
                ("port", port.to_string()),
                ("host", "127.0.0.1".to_string()),
                ("gpus", gpu_ids.clone()),
                ("replica", replica.to_string()),
            ]);
            let name = if replicas == 1 { decl.name.clone() } else { format!("{}#{replica}", decl.name) };
            let log_path = self.log_dir.join(format!("{}.log", name.replace('#', "-r")));
            let spec = if engine == "sim" {
                sim_launch(decl, &name, port, log_path.clone())?
            } else {
                command_launch(decl, &name, port, &vars, &self.recipe_dir, log_path.clone())?
            };
            let mut spec = LaunchSpec { registry_dir: self.registry_dir.clone(), ..spec };
            if !gpu_ids.is_empty() {
                spec.env.push(("CUDA_VISIBLE_DEVICES".into(), gpu_ids));
            }
            let server =
                anvil_proc::launch(spec).await.map_err(|e| format!("server `{name}` did not start: {e}"))?;
            info.startup_ms.push(server.startup().as_millis() as u64);
            info.targets.push(Target { base_url: server.base_url(), api_key: None, label: name });
            info.log_paths.push(log_path);
            processes.push(server);
            leases.extend(lease);
        }
        info.warmup = warm_up(decl, &info).await?;
        Ok((info, processes, leases))
    }
}

/// `warmup requests=4 max-tokens=16`: short requests to every replica once,
/// before the server's first step, so no cell measures a cold engine.
async fn warm_up(decl: &Decl, info: &ServerInfo) -> Result<Value, String> {
    let warmup = decl.props("warmup");
    let requests = warmup.get("requests").and_then(Value::as_u64).unwrap_or(0);
    if requests == 0 {
        return Ok(Value::Null);
    }
    let max_tokens = warmup.get("max-tokens").and_then(Value::as_u64).unwrap_or(16);
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(600))
        .build()
        .map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    for target in &info.targets {
        for i in 0..requests {
            let body = json!({
                "model": info.model,
                "messages": [{"role": "user", "content": format!("Warm-up request {i}. Reply with one short sentence.")}],
                "max_tokens": max_tokens,
                "stream": false,
            });
            let mut request = client.post(format!("{}/v1/chat/completions", target.base_url)).json(&body);
            if let Some(key) = &target.api_key {
                request = request.bearer_auth(key);
            }
            let response =
                request.send().await.map_err(|e| format!("warm-up of `{}` failed: {e}", target.label))?;
            if !response.status().is_success() {
                return Err(format!("warm-up of `{}` got HTTP {}", target.label, response.status()));
            }
        }
    }
    Ok(
        json!({"requests_per_replica": requests, "max_tokens": max_tokens, "duration_ms": started.elapsed().as_millis() as u64}),
    )
}

fn engine_label(decl: &Decl) -> String {
    let program = decl.strings("command").first().cloned().unwrap_or_default();
    Path::new(&program).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or(program)
}

/// Where live-server records go, so the next anvil can reap what a
/// `kill -9` left behind.
pub fn registry_dir() -> PathBuf {
    std::env::var_os("ANVIL_SERVER_REGISTRY")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("anvil-servers"))
}

fn ready_spec(decl: &Decl, default_timeout: Duration) -> ReadySpec {
    let ready = decl.props("ready");
    let mut spec = ReadySpec { timeout: default_timeout, ..ReadySpec::default() };
    if let Some(path) = ready.get("http").and_then(Value::as_str) {
        spec.http_path = Some(path.to_string());
    }
    if let Some(status) = ready.get("status").and_then(Value::as_u64) {
        spec.expect_status = status as u16;
    }
    if let Some(pattern) = ready.get("log").and_then(Value::as_str) {
        spec.log_pattern = Some(pattern.to_string());
        if !ready.contains_key("http") {
            spec.http_path = None;
        }
    }
    if let Some(timeout) =
        ready.get("timeout").and_then(Value::as_str).and_then(|t| crate::recipe::parse_duration(t).ok())
    {
        spec.timeout = timeout;
    }
    spec
}

fn grace_of(decl: &Decl) -> Duration {
    Duration::from_millis(decl.u64("grace").unwrap_or(10_000))
}

/// The simulated twin: this very binary, `anvil sim`, with the `sim { … }` block.
fn sim_launch(decl: &Decl, name: &str, port: u16, log_path: PathBuf) -> Result<LaunchSpec, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the anvil binary: {e}"))?;
    let mut args = vec!["sim".to_string(), "--port".into(), port.to_string()];
    if let Some(model) = decl.str("model") {
        args.extend(["--set".to_string(), format!("model={model}")]);
    }
    for (key, value) in flatten_sim_block(decl.get("sim")) {
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
pub fn flatten_sim_block(block: Option<&Value>) -> Vec<(String, String)> {
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

fn command_launch(
    decl: &Decl,
    name: &str,
    port: u16,
    vars: &BTreeMap<&str, String>,
    recipe_dir: &Path,
    log_path: PathBuf,
) -> Result<LaunchSpec, String> {
    let mut argv: Vec<String> =
        decl.strings("command").iter().chain(decl.strings("args").iter()).map(|a| render(a, vars)).collect();
    if argv.is_empty() {
        return Err(format!("server `{name}` has no command"));
    }
    let program = argv.remove(0);
    let env = decl
        .props("env")
        .into_iter()
        .map(|(k, v)| (k, render(v.as_str().map(str::to_string).as_deref().unwrap_or(&v.to_string()), vars)))
        .collect();
    Ok(LaunchSpec {
        name: name.to_string(),
        program,
        args: argv,
        env,
        cwd: Some(
            decl.str("cwd").map_or_else(|| recipe_dir.to_path_buf(), |c| recipe_dir.join(render(c, vars))),
        ),
        port,
        ready: ready_spec(decl, Duration::from_secs(600)),
        log_path,
        grace: grace_of(decl),
        registry_dir: PathBuf::new(),
    })
}

/// `{{`/`}}` → `{`/`}`, filling no placeholder.
pub fn unescape(text: &str) -> String {
    render(text, &BTreeMap::new())
}

/// Fill run-time placeholders: `{port}`, `{gpus}`, …; `{{` is a literal `{`.
pub fn render(text: &str, vars: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        // `{name}` with a known name is filled; anything else is kept as written.
        let known = tail
            .strip_prefix('{')
            .and_then(|inner| inner.find('}').map(|end| (end, &inner[..end])))
            .filter(|(_, name)| vars.contains_key(name));
        match known {
            Some((end, name)) => {
                out.push_str(&vars[name]);
                rest = &tail[end + 2..];
            }
            None => {
                out.push_str(&tail[..1]);
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_placeholders_and_escapes() {
        let vars = BTreeMap::from([("port", "8001".to_string())]);
        assert_eq!(render("--port={port} {{x}} {other}", &vars), "--port=8001 {x} {other}");
        assert_eq!(render("root ::= \"{marker} \" [^_]*", &vars), "root ::= \"{marker} \" [^_]*");
        assert_eq!(render("} { {port", &vars), "} { {port");
        assert_eq!(unescape("{\"a\": {marker}}}"), "{\"a\": {marker}}");
    }
}
