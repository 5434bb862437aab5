//! Servers are started lazily: the first step that needs one starts it,
//! every step that needs it shares it while it is warm, and the last one
//! to finish stops it. A server whose steps are all stored never starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anvil_loadgen::Target;
use anvil_net::TlsSettings;
use anvil_proc::{GpuLease, GpuPool, LaunchSpec, RunningServer};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::launch::{command_launch, sim_launch};
use super::server_info::ScrapeTarget;
pub use super::server_info::ServerInfo;
use super::warmup::warm_up;
use crate::document::ServerExec;
use crate::document::launch::{CommandEngine, Engine};
use crate::plan::EngineMode;
use crate::words::EngineKind;

#[allow(clippy::large_enum_variant)] // one slot per server: its size does not matter
enum Slot {
    Idle,
    Running { info: ServerInfo, processes: Vec<RunningServer>, _gpus: Vec<GpuLease> },
    Failed(String),
    Stopped,
}

/// Why a step has no running server to measure on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    /// The index names no server of the plan (a bug).
    #[error("not a server")]
    NotAServer,
    /// Its last user stopped it and nothing borrowed it again.
    #[error("server was already stopped")]
    Stopped,
    /// It did not start (TLS, GPUs, a port, its launch or its warm-up):
    /// its first user's error, which every later user gets too.
    #[error("{0}")]
    DidNotStart(String),
}

pub struct ServerPool {
    slots: BTreeMap<usize, Mutex<Slot>>,
    /// One measuring step per server at a time: two cells sharing a server
    /// would load each other and corrupt both measurements.
    turns: BTreeMap<usize, Mutex<()>>,
    /// Steps still to come that need each server.
    users: std::sync::Mutex<BTreeMap<usize, usize>>,
    launches: BTreeMap<usize, (String, ServerExec)>,
    mode: EngineMode,
    log_dir: PathBuf,
    registry_dir: PathBuf,
    recipe_dir: PathBuf,
    gpus: Arc<GpuPool>,
}

impl ServerPool {
    pub fn new(
        launches: BTreeMap<usize, (String, ServerExec)>,
        users: BTreeMap<usize, usize>,
        mode: EngineMode,
        log_dir: PathBuf,
        recipe_dir: PathBuf,
        gpus: GpuPool,
    ) -> ServerPool {
        ServerPool {
            slots: launches.keys().map(|&i| (i, Mutex::new(Slot::Idle))).collect(),
            turns: launches.keys().map(|&i| (i, Mutex::new(()))).collect(),
            users: std::sync::Mutex::new(users),
            launches,
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
    pub async fn acquire(&self, index: usize) -> Result<ServerInfo, ServerError> {
        let slot = self.slots.get(&index).ok_or(ServerError::NotAServer)?;
        let mut slot = slot.lock().await;
        match &*slot {
            Slot::Running { info, .. } => return Ok(info.clone()),
            Slot::Failed(why) => return Err(ServerError::DidNotStart(why.clone())),
            Slot::Stopped => return Err(ServerError::Stopped),
            Slot::Idle => {}
        }
        match self.start(index).await {
            Ok((info, processes, gpus)) => {
                *slot = Slot::Running { info: info.clone(), processes, _gpus: gpus };
                Ok(info)
            }
            Err(why) => {
                *slot = Slot::Failed(why.clone());
                Err(ServerError::DidNotStart(why))
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

    /// One more user, past the ones the plan counted: a gate's or screen's
    /// extra repeats. A server its cells already stopped starts again on
    /// the next `acquire`; [`release`](Self::release) ends the borrow.
    pub async fn borrow(&self, index: usize) {
        *self.users.lock().unwrap_or_else(|e| e.into_inner()).entry(index).or_default() += 1;
        let Some(slot) = self.slots.get(&index) else { return };
        let mut slot = slot.lock().await;
        if matches!(*slot, Slot::Stopped) {
            *slot = Slot::Idle;
        }
    }

    /// Stop a server that went silent (`stall-timeout`); the next step that
    /// needs it starts it again.
    pub async fn restart(&self, index: usize) {
        let Some(slot) = self.slots.get(&index) else { return };
        let mut slot = slot.lock().await;
        if let Slot::Running { processes, .. } = std::mem::replace(&mut *slot, Slot::Idle) {
            // Killed at once: a frozen process holds SIGTERM until it runs
            // again, so a graceful stop would only wait out its grace.
            drop(processes);
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

    /// The server's TLS settings with `ca-bundle` resolved against the
    /// recipe's directory, checked now: a bundle that cannot be read fails
    /// the server's start, not each of its requests.
    fn tls_of(&self, server_name: &str, launch: &ServerExec) -> Result<TlsSettings, String> {
        let mut tls = launch.tls.clone();
        tls.ca_bundle = tls.ca_bundle.map(|path| self.recipe_dir.join(path));
        if !tls.is_default() {
            anvil_net::tls_config(&tls).map_err(|e| format!("server `{server_name}`: {e:#}"))?;
        }
        Ok(tls)
    }

    pub async fn stop_all(&self) {
        for &index in self.slots.keys() {
            self.stop(index).await;
        }
    }

    /// Start every replica of server `index` (or reach an external one) and
    /// warm it up; GPUs it leased are held until it stops.
    async fn start(&self, index: usize) -> Result<(ServerInfo, Vec<RunningServer>, Vec<GpuLease>), String> {
        let (server_name, launch) = &self.launches[&index];
        // `--sim` runs every server as its simulated twin.
        let engine = if self.mode == EngineMode::SimulatedTwins { &Engine::Sim } else { &launch.engine };
        let simulated = matches!(engine, Engine::Sim);
        let mut info = declared_info(server_name, launch, engine);
        // A simulated twin serves plain http whatever the real server does.
        let tls = if simulated { TlsSettings::default() } else { self.tls_of(server_name, launch)? };
        info.scrape_targets = self.scrape_targets(server_name, launch, simulated)?;
        if let Engine::External { url, api_key_env } = engine {
            let api_key = api_key_env.as_ref().and_then(|var| std::env::var(var).ok());
            let base_url = url.trim_end_matches('/').to_string();
            info.targets.push(Target { base_url, api_key, label: server_name.clone(), tls });
            info.warmup = warm_up(launch.warmup.requests, launch.warmup.max_tokens, &info).await?;
            return Ok((info, Vec::new(), Vec::new()));
        }
        let replicas =
            Replicas { server_name, launch, engine, simulated, count: launch.replicas as usize, tls };
        let mut processes = Vec::new();
        let mut leases = Vec::new();
        for replica in 0..replicas.count {
            let (server, lease) = self.launch_replica(&replicas, replica, &mut info).await?;
            processes.push(server);
            leases.extend(lease);
        }
        info.warmup = warm_up(launch.warmup.requests, launch.warmup.max_tokens, &info).await?;
        Ok((info, processes, leases))
    }

    /// The metrics endpoints the server's cells read (`scrape`), trusted as
    /// the server is; none for a simulated twin, which uses no GPU an
    /// exporter watches.
    fn scrape_targets(
        &self,
        server_name: &str,
        launch: &ServerExec,
        simulated: bool,
    ) -> Result<Vec<ScrapeTarget>, String> {
        if simulated && launch.engine.kind() != EngineKind::Sim {
            return Ok(Vec::new());
        }
        // An https target is trusted as the server is (`ca-bundle`, `tls-insecure`).
        let scrape_tls = match launch.scrape.iter().any(|url| url.starts_with("https://")) {
            true => self.tls_of(server_name, launch)?,
            false => TlsSettings::default(),
        };
        Ok(super::server_metrics::scrape_targets(&launch.scrape, &scrape_tls))
    }

    /// Launch replica `replica` of a server on GPUs of its own (if it asks
    /// for any) and a port, and add it to `info`: its GPUs, start-up time,
    /// target and log.
    async fn launch_replica(
        &self,
        replicas: &Replicas<'_>,
        replica: usize,
        info: &mut ServerInfo,
    ) -> Result<(RunningServer, Option<GpuLease>), String> {
        let Replicas { server_name, launch, engine, simulated, count, ref tls } = *replicas;
        let lease = self.lease_gpus(replicas).await?;
        let declared_port = match engine {
            Engine::Command(command) => command.port,
            Engine::Sim | Engine::External { .. } => None,
        };
        // Replicas cannot share the declared port: each takes a free one.
        let port = match declared_port {
            Some(p) if count == 1 => p,
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
        let name = if count == 1 { server_name.clone() } else { format!("{server_name}#{replica}") };
        let log_path = self.log_dir.join(format!("{}.log", name.replace('#', "-r")));
        let spec = match engine {
            Engine::Command(command) => {
                command_launch(command, &name, port, &vars, &self.recipe_dir, log_path.clone())?
            }
            Engine::Sim | Engine::External { .. } => {
                sim_launch(launch, &name, port, log_path.clone(), &self.recipe_dir)?
            }
        };
        let mut spec = LaunchSpec { registry_dir: self.registry_dir.clone(), ..spec };
        let https = !simulated && launch.serves_https();
        if https {
            spec.ready.tls = Some(tls.clone());
        }
        if !gpu_ids.is_empty() {
            spec.env.push(("CUDA_VISIBLE_DEVICES".into(), gpu_ids));
        }
        let server =
            anvil_proc::launch(spec).await.map_err(|e| format!("server `{name}` did not start: {e}"))?;
        info.startup_ms.push(server.startup().as_millis() as u64);
        // A launched server that declared how to trust it serves https.
        let base_url = match https {
            true => format!("https://127.0.0.1:{}", server.port()),
            false => server.base_url(),
        };
        info.targets.push(Target { base_url, api_key: None, label: name, tls: tls.clone() });
        info.log_paths.push(log_path);
        Ok((server, lease))
    }

    /// The GPUs one replica runs on: `gpus` of them from the pool, none for
    /// a simulated twin.
    async fn lease_gpus(&self, replicas: &Replicas<'_>) -> Result<Option<GpuLease>, String> {
        match replicas.launch.gpus {
            n if n > 0 && !replicas.simulated => {
                Ok(Some(self.gpus.acquire_for(replicas.server_name, n as usize).await.map_err(|e| {
                    format!(
                        "{e}: name this machine's GPUs with `--gpus 0,1,…`, or rehearse on the servers' simulated twins with `--sim`"
                    )
                })?))
            }
            _ => Ok(None),
        }
    }
}

/// What every replica of one server is launched with.
struct Replicas<'a> {
    server_name: &'a String,
    launch: &'a ServerExec,
    /// The declared engine, or the simulated twin's under `--sim`.
    engine: &'a Engine,
    simulated: bool,
    count: usize,
    /// How its targets are reached (plain http for a twin).
    tls: TlsSettings,
}

/// The server as declared, before any replica runs: its engine, model and
/// the flags it serves with (`serve_flags`); targets, GPUs, logs and
/// warm-up are filled as it starts.
fn declared_info(server_name: &str, launch: &ServerExec, engine: &Engine) -> ServerInfo {
    let declared = launch.engine.kind();
    let simulated = matches!(engine, Engine::Sim);
    let model = launch.served_model().to_string();
    // A preset's own command line is part of what it was asked to run.
    let args: Vec<&String> = match &launch.engine {
        Engine::Command(command) if command.preset.is_some() => {
            command.command.iter().skip(1).chain(&command.args).collect()
        }
        Engine::Command(command) => command.args.iter().collect(),
        Engine::Sim | Engine::External { .. } => Vec::new(),
    };
    ServerInfo {
        name: server_name.to_string(),
        targets: Vec::new(),
        engine: match engine {
            Engine::Sim => "anvil-sim".into(),
            Engine::Command(command) => engine_label(command),
            Engine::External { .. } => "external".into(),
        },
        simulated,
        model,
        gpu_label: launch.gpu_label.clone(),
        startup_ms: Vec::new(),
        log_paths: Vec::new(),
        gpu_ids: Vec::new(),
        warmup: Value::Null,
        cache_block_tokens: match simulated {
            true => None,
            false => launch.engine.preset().map(crate::engines::EnginePreset::cache_block_tokens),
        },
        scrape_targets: Vec::new(),
        serve_flags: json!({
            "engine": engine.kind().as_str(),
            "replicas": launch.replicas as usize,
            "args": args,
            "simulated_twin_of": (simulated && declared != EngineKind::Sim).then_some(declared.as_str()),
        }),
    }
}

fn engine_label(command: &CommandEngine) -> String {
    if let Some(preset) = &command.preset {
        return preset.name.as_str().to_string();
    }
    let program = command.command.first().cloned().unwrap_or_default();
    Path::new(&program).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or(program)
}

/// Where live-server records go, so the next anvil can reap what a
/// `kill -9` left behind.
pub fn registry_dir() -> PathBuf {
    std::env::var_os("ANVIL_SERVER_REGISTRY")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("anvil-servers"))
}
