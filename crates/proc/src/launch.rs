//! Starting a server in its own process group and waiting until it is ready.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use regex::Regex;
use tokio::process::{Child, Command};
use tokio::sync::watch;

use crate::error::ProcError;
use crate::launch_spec::{LaunchSpec, ReadySpec};
use crate::live_servers::{self, LiveServer};
use crate::proc_table::{self, SERVER_TOKEN_VAR};
use crate::running_server::RunningServer;
use crate::server_log::ServerLog;
use crate::server_registry::{self, ServerRecord};

/// Lines of output quoted in launch errors.
const ERROR_TAIL_LINES: usize = 20;

/// Starts the server and returns once it is ready.
///
/// The server runs in its own process group, so that stopping it reaches
/// every process it forks. On Linux it also gets `PR_SET_PDEATHSIG =
/// SIGKILL`: the kernel kills it if anvil dies, even by `kill -9`. (The
/// kernel ties that signal to the *thread* that spawned it; `launch` runs on
/// a tokio worker thread, which lives as long as the runtime, so call it from
/// the main runtime, not from a short-lived one.) Processes the server
/// forks are not covered by that signal; the registry record lets the next
/// anvil's [`crate::reap_orphans`] kill them.
///
/// If readiness fails, the server's tree is killed before the error returns.
pub async fn launch(spec: LaunchSpec) -> Result<RunningServer, ProcError> {
    let program = resolve_program(&spec.program)?;
    let ready_pattern = compile_pattern(&spec.ready)?;
    let log_file = create_log_file(&spec.log_path)?;
    let token = new_token();

    let spawned_at = Instant::now();
    let mut child = spawn_in_own_group(&spec, &program, &token)?;
    let pid = child.id().unwrap_or(0);

    let log = ServerLog::new(log_file, ready_pattern);
    let mut forwarders = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        forwarders.push(log.forward(stdout));
    }
    if let Some(stderr) = child.stderr.take() {
        forwarders.push(log.forward(stderr));
    }

    let record = ServerRecord {
        name: spec.name.clone(),
        anvil_pid: std::process::id() as i32,
        anvil_start_ticks: proc_table::stat(std::process::id() as i32).map(|s| s.start_ticks).unwrap_or(0),
        pid: pid as i32,
        pid_start_ticks: proc_table::stat(pid as i32).map(|s| s.start_ticks).unwrap_or(0),
        pgid: pid as i32,
        token: token.clone(),
        boot_id: proc_table::boot_id(),
        started_unix_ms: server_registry::now_unix_ms(),
        program: program.display().to_string(),
        port: spec.port,
    };
    let record_path = match server_registry::write_record(&spec.registry_dir, &record) {
        Ok(path) => path,
        Err(e) => {
            let tree = crate::teardown::ServerTree { pgid: pid as i32, token: &token, leader_unreaped: true };
            tree.kill_now();
            return Err(e);
        }
    };
    let live_id = live_servers::register(LiveServer {
        name: spec.name.clone(),
        pgid: pid as i32,
        token: token.clone(),
        grace: spec.grace,
        record_path: record_path.clone(),
    });

    let mut server = RunningServer {
        name: spec.name.clone(),
        child,
        pid,
        port: spec.port,
        token,
        startup: Duration::ZERO,
        log: Arc::clone(&log),
        log_path: spec.log_path.clone(),
        grace: spec.grace,
        record_path,
        live_id,
        reaped: false,
        finished: false,
    };

    let readiness = wait_until_ready(&mut server.child, &spec, log.watch_pattern()).await;
    server.reaped = matches!(readiness, Err(NotReady::Exited(_)));
    match readiness {
        Ok(()) => {
            server.startup = spawned_at.elapsed();
            Ok(server)
        }
        Err(NotReady::Exited(status)) => {
            // Let the forwarders drain what the process wrote last; a
            // grandchild holding the pipe open must not stall us.
            for forwarder in forwarders {
                let _ = tokio::time::timeout(Duration::from_secs(1), forwarder).await;
            }
            Err(ProcError::ExitedBeforeReady {
                name: spec.name,
                status,
                log_tail: log.tail(ERROR_TAIL_LINES),
            })
            // `server` drops here: the rest of its tree is killed.
        }
        Err(NotReady::TimedOut) => Err(ProcError::ReadyTimeout {
            name: spec.name,
            after: spec.ready.timeout,
            log_tail: log.tail(ERROR_TAIL_LINES),
        }),
    }
}

fn resolve_program(program: &str) -> Result<PathBuf, ProcError> {
    if program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    which::which(program)
        .map_err(|e| ProcError::ProgramNotFound { program: program.to_string(), reason: e.to_string() })
}

fn compile_pattern(ready: &ReadySpec) -> Result<Option<Regex>, ProcError> {
    ready
        .log_pattern
        .as_deref()
        .map(|pattern| {
            Regex::new(pattern)
                .map_err(|source| ProcError::BadLogPattern { pattern: pattern.to_string(), source })
        })
        .transpose()
}

fn create_log_file(path: &Path) -> Result<std::fs::File, ProcError> {
    let io_err = |source| ProcError::Io { what: "server log", path: path.to_path_buf(), source };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io_err)?;
    }
    std::fs::File::create(path).map_err(io_err)
}

/// A value unique to this launch, put in the server's environment.
fn new_token() -> String {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}-{}",
        std::process::id(),
        server_registry::now_unix_ms(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    )
}

fn spawn_in_own_group(spec: &LaunchSpec, program: &Path, token: &str) -> Result<Child, ProcError> {
    let mut command = Command::new(program);
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(SERVER_TOKEN_VAR, token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let anvil_pid = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before exec and only
    // makes async-signal-safe system calls (prctl, getppid).
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            // anvil may have died between fork and prctl: then no signal
            // would ever come, so refuse to start.
            if nix::unistd::getppid() != anvil_pid {
                return Err(std::io::Error::other("anvil exited during spawn"));
            }
            Ok(())
        });
    }
    command.spawn().map_err(|source| ProcError::Spawn {
        name: spec.name.clone(),
        program: program.display().to_string(),
        source,
    })
}

enum NotReady {
    Exited(std::process::ExitStatus),
    TimedOut,
}

/// Polls the readiness checks until all pass, the process exits, or the
/// timeout passes.
async fn wait_until_ready(
    child: &mut Child,
    spec: &LaunchSpec,
    mut pattern_seen: watch::Receiver<bool>,
) -> Result<(), NotReady> {
    let ready = &spec.ready;
    let deadline = tokio::time::Instant::now() + ready.timeout;
    let scheme = if ready.tls.is_some() { "https" } else { "http" };
    let http_url =
        ready.http_path.as_deref().map(|path| format!("{scheme}://127.0.0.1:{}{}", spec.port, path));
    // Probes go to loopback even when HTTP_PROXY is set (anvil-net sets no proxy).
    let tls = ready.tls.clone().unwrap_or_default();
    let client = anvil_net::http_client_builder(&tls)
        .ok()
        .and_then(|builder| builder.timeout(Duration::from_secs(2)).build().ok());
    let mut http_ok = http_url.is_none();
    let mut log_ok = ready.log_pattern.is_none();
    let needs_tcp = http_url.is_none() && ready.log_pattern.is_none();

    loop {
        log_ok = log_ok || *pattern_seen.borrow_and_update();
        if !http_ok && let (Some(url), Some(client)) = (&http_url, &client) {
            http_ok = probe_http(client, url, ready.expect_status).await;
        }
        let tcp_ok = !needs_tcp || port_accepts(spec.port).await;
        if http_ok && log_ok && tcp_ok {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(NotReady::Exited(status));
        }
        let next_probe = (tokio::time::Instant::now() + ready.interval).min(deadline);
        tokio::select! {
            status = child.wait() => {
                if let Ok(status) = status {
                    return Err(NotReady::Exited(status));
                }
            }
            _ = pattern_seen.changed(), if !log_ok => {}
            _ = tokio::time::sleep_until(next_probe) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(NotReady::TimedOut);
        }
    }
}

async fn probe_http(client: &reqwest::Client, url: &str, expect_status: u16) -> bool {
    match client.get(url).send().await {
        Ok(response) => response.status().as_u16() == expect_status,
        Err(_) => false,
    }
}

async fn port_accepts(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    tokio::net::TcpStream::connect(addr).await.is_ok()
}
