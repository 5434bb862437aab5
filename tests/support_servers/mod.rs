//! Helpers for the server-lifecycle tests (`tests/servers.rs`): an anvil
//! invocation with its own live-server registry and temp directory, a look
//! at /proc for processes that must (not) exist, polling, and tiny HTTP
//! clients and a proxy built on std sockets.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{self, Outcome, Scratch};

/// Upper bound for any single anvil invocation; only a hang reaches it.
const COMMAND_LIMIT: Duration = Duration::from_secs(180);

/// How long a polling loop may wait for something that should happen
/// promptly (a process dying, a server listening). Generous on purpose:
/// it bounds a hang, it is not a performance threshold.
pub const POLL_LIMIT: Duration = Duration::from_secs(30);

/// A scratch directory whose anvil runs use their own live-server registry
/// (`registry/`) and temp directory (`tmp/`, where each run keeps its server
/// logs), so that tests running in parallel never see each other's servers.
pub struct Bench {
    pub scratch: Scratch,
    /// Extra environment for every anvil invocation.
    env: Vec<(String, String)>,
}

impl Bench {
    pub fn new() -> Bench {
        let scratch = Scratch::new();
        std::fs::create_dir_all(scratch.path().join("registry")).expect("create registry dir");
        std::fs::create_dir_all(scratch.path().join("tmp")).expect("create tmp dir");
        Bench { scratch, env: Vec::new() }
    }

    pub fn with_env(mut self, key: &str, value: &str) -> Bench {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    pub fn path(&self) -> &Path {
        self.scratch.path()
    }

    pub fn store(&self) -> PathBuf {
        self.scratch.store()
    }

    pub fn registry(&self) -> PathBuf {
        self.scratch.path().join("registry")
    }

    pub fn tmp(&self) -> PathBuf {
        self.scratch.path().join("tmp")
    }

    /// Every process anvil launches inherits this value in its environment
    /// (anvil passes its own environment on), so it marks this bench's servers.
    pub fn marker(&self) -> String {
        self.registry().display().to_string()
    }

    /// Write a recipe, replacing `ANVIL_BIN` with the path of the binary under test.
    pub fn recipe(&self, name: &str, text: &str) -> PathBuf {
        self.scratch.write(name, &text.replace("ANVIL_BIN", &common::anvil_binary().display().to_string()))
    }

    /// An `anvil` command for this bench, not started.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = self.scratch.command();
        command.env("ANVIL_SERVER_REGISTRY", self.registry()).env("TMPDIR", self.tmp()).args(args);
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
    }

    /// Run `anvil ARGS…` to the end.
    pub fn anvil(&self, args: &[&str]) -> Outcome {
        let mut command = assert_cmd::Command::from_std(self.command(args));
        command.timeout(COMMAND_LIMIT);
        Outcome::from_output(args, command.output().expect("start anvil"))
    }

    /// `anvil run RECIPE [extra…]`, which must exit with `code`.
    pub fn run(&self, recipe: &Path, extra: &[&str], code: i32) -> Outcome {
        let recipe = recipe.to_str().expect("utf-8 path");
        let mut args = vec!["run", recipe];
        args.extend_from_slice(extra);
        self.anvil(&args).expect_code(code)
    }

    /// `anvil plan RECIPE --json [extra…]`, which must succeed.
    pub fn plan(&self, recipe: &Path, extra: &[&str]) -> common::Plan {
        let recipe = recipe.to_str().expect("utf-8 path");
        let mut args = vec!["plan", recipe, "--json"];
        args.extend_from_slice(extra);
        common::Plan(self.anvil(&args).expect_code(0).json())
    }

    /// `anvil run RECIPE [extra…]` in the background, output captured.
    pub fn spawn_run(&self, recipe: &Path, extra: &[&str]) -> Child {
        let recipe = recipe.to_str().expect("utf-8 path");
        let mut args = vec!["run", recipe];
        args.extend_from_slice(extra);
        self.command(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start anvil run")
    }

    /// `anvil store verify` must exit 0.
    pub fn verify_store(&self) {
        self.anvil(&["store", "verify"]).expect_code(0);
    }

    /// The directory of a stored step, by its name in the plan.
    pub fn entry(&self, plan: &common::Plan, step: &str) -> PathBuf {
        common::entry_dir(&self.store(), &plan.fingerprint(step))
    }

    /// A stored step's `benchmark.json`.
    pub fn benchmark(&self, plan: &common::Plan, step: &str) -> Value {
        read_json(&self.entry(plan, step).join("benchmark.json"))
    }

    /// The server logs left in anvil's per-run log folders under `tmp/`:
    /// none once a run has ended (it removes its folder; each result keeps
    /// its copy of the log in its store entry).
    pub fn live_logs(&self) -> Vec<PathBuf> {
        let mut logs = Vec::new();
        for run_dir in std::fs::read_dir(self.tmp()).into_iter().flatten().flatten() {
            if !run_dir.file_name().to_string_lossy().starts_with("anvil-run-") {
                continue;
            }
            for file in std::fs::read_dir(run_dir.path()).into_iter().flatten().flatten() {
                if file.path().extension().is_some_and(|e| e == "log") {
                    logs.push(file.path());
                }
            }
        }
        logs.sort();
        logs
    }

    /// Live-server records left in this bench's registry.
    pub fn registry_records(&self) -> Vec<Value> {
        std::fs::read_dir(self.registry())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|f| f.path().extension().is_some_and(|e| e == "json"))
            .filter_map(|f| serde_json::from_slice(&std::fs::read(f.path()).ok()?).ok())
            .collect()
    }

    /// Processes carrying this bench's marker, except `excluding` (anvil itself).
    pub fn server_processes(&self, excluding: &[u32]) -> Vec<ProcessInfo> {
        processes_marked(&self.marker()).into_iter().filter(|p| !excluding.contains(&p.pid)).collect()
    }

    /// Fail unless no process of this bench is left.
    pub fn assert_no_server_left(&self, context: &str) {
        let left = self.server_processes(&[]);
        assert!(left.is_empty(), "{context}: processes left running: {left:#?}");
    }
}

pub fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// A process found in /proc.
#[derive(Debug, Clone)]
pub struct ProcessInfo {
    pub pid: u32,
    pub cmdline: String,
}

/// Live (non-zombie) processes whose command line or environment holds `marker`.
pub fn processes_marked(marker: &str) -> Vec<ProcessInfo> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return found };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let dir = entry.path();
        if is_zombie(&dir) {
            continue;
        }
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        if contains(&cmdline, marker.as_bytes()) || contains(&environ, marker.as_bytes()) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ").trim().to_string();
            found.push(ProcessInfo { pid, cmdline });
        }
    }
    found
}

/// Whether a process with this pid exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    let dir = PathBuf::from(format!("/proc/{pid}"));
    dir.exists() && !is_zombie(&dir)
}

fn is_zombie(proc_dir: &Path) -> bool {
    // /proc/PID/stat: "pid (comm) S …"; comm may hold spaces and parentheses.
    let stat = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
    stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])).unwrap_or(true)
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// Poll `condition` every 50 ms until it holds or `POLL_LIMIT` passes.
pub fn wait_until(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + POLL_LIMIT;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wait for a spawned anvil to end and collect what it printed.
pub fn finish(child: Child, what: &str) -> Outcome {
    let output = child.wait_with_output().expect("wait for anvil");
    Outcome::from_output(&[what], output)
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral port")
}

/// `GET path` over HTTP/1.0 (the server closes the connection after the
/// reply); the status code and body, or None when nothing answers.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let status = reply.split_whitespace().nth(1)?.parse().ok()?;
    let body = reply.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Some((status, body))
}

/// The value of the first Prometheus sample of `name` (any labels) in a /metrics page.
pub fn prometheus_value(page: &str, name: &str) -> Option<f64> {
    page.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (key, value) = l.rsplit_once(' ')?;
        let series = key.split('{').next()?;
        (series == name).then(|| value.parse().ok()).flatten()
    })
}

/// A process the test started itself, killed when the test ends.
pub struct Spawned(pub Child);

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `anvil sim --port PORT`, started by the test, ready when this returns.
pub fn start_sim(extra: &[&str]) -> (Spawned, u16) {
    let port = free_port();
    let child = Command::new(common::anvil_binary())
        .args(["sim", "--port", &port.to_string()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start anvil sim");
    let sim = Spawned(child);
    assert!(
        wait_until(|| http_get(port, "/health").is_some_and(|(status, _)| status == 200)),
        "anvil sim on port {port} never answered /health"
    );
    (sim, port)
}

/// A TCP proxy in front of a server that keeps the request head (request
/// line and headers, then the body its `Content-Length` gives) of the first
/// request on each connection, so a test can see what anvil sent. Bytes are
/// forwarded unchanged both ways.
pub struct RecordingProxy {
    pub port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl RecordingProxy {
    pub fn start(upstream_port: u16) -> RecordingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&heads);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let recorded = Arc::clone(&recorded);
                std::thread::spawn(move || forward(client, upstream_port, &recorded));
            }
        });
        RecordingProxy { port, heads }
    }

    /// The requests seen so far (each head, then its body).
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().map(|h| h.clone()).unwrap_or_default()
    }

    /// The JSON bodies of the requests seen so far.
    pub fn json_bodies(&self) -> Vec<Value> {
        let bodies = self.heads().into_iter().filter_map(|request| {
            let (_, body) = request.split_once("\r\n\r\n")?;
            serde_json::from_str(body).ok()
        });
        bodies.collect()
    }
}

fn forward(mut client: TcpStream, upstream_port: u16, recorded: &Mutex<Vec<String>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length = text
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    if client.read_exact(&mut body).is_err() {
        return;
    }
    head.extend_from_slice(&body);
    if let Ok(mut heads) = recorded.lock() {
        heads.push(String::from_utf8_lossy(&head).into_owned());
    }
    let Ok(mut upstream) = TcpStream::connect(("127.0.0.1", upstream_port)) else { return };
    if upstream.write_all(&head).is_err() {
        return;
    }
    let (Ok(mut client_reader), Ok(mut upstream_writer)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let to_upstream = std::thread::spawn(move || {
        let _ = std::io::copy(&mut client_reader, &mut upstream_writer);
        let _ = upstream_writer.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut upstream, &mut client);
    let _ = client.shutdown(std::net::Shutdown::Write);
    let _ = to_upstream.join();
}

/// Every file under `dir` whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path).is_ok_and(|bytes| contains(&bytes, needle.as_bytes())) {
                hits.push(path);
            }
        }
    }
    hits
}

/// Count of files under `dir` (recursively), to show a search was not vacuous.
pub fn file_count(dir: &Path) -> usize {
    let mut count = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.path().is_dir() {
                stack.push(entry.path());
            } else {
                count += 1;
            }
        }
    }
    count
}

/// Send a signal to a process (`kill -SIG pid`).
pub fn signal(pid: u32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).expect("send signal");
}

/// `anvil sim` on its own port, so its request counter outlives anvil runs.
pub struct ExternalSim {
    child: Child,
    port: u16,
}

impl ExternalSim {
    pub fn start(settings: &[&str]) -> ExternalSim {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut command = Command::new(common::anvil_binary());
        command.args(["sim", "--port", &port.to_string()]);
        for s in settings {
            command.args(["--set", s]);
        }
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start anvil sim");
        let sim = ExternalSim { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while sim.get("/v1/models").is_none() {
            assert!(Instant::now() < deadline, "anvil sim did not start on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        sim
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn get(&self, path: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).ok()?;
        text.starts_with("HTTP/1.1 200").then_some(text)
    }

    /// Requests the server completed, by its Prometheus counter.
    pub fn requests_served(&self) -> u64 {
        let text = self.get("/metrics").expect("the sim serves /metrics");
        text.lines()
            .filter(|l| l.starts_with("vllm:request_success_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    }
}

impl ExternalSim {
    /// The request count once it stops moving (requests in flight finish).
    pub fn settled_count(&self) -> u64 {
        let mut last = self.requests_served();
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let now = self.requests_served();
            if now == last {
                return now;
            }
            last = now;
        }
    }
}

impl Drop for ExternalSim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Once the server whose command line holds `marker` has generated
/// `tokens` (its own counter `metric` on `/metrics` says so: the measured
/// requests are under way), freeze it (SIGSTOP).
pub fn freeze_once_serving(marker: &str, metric: &str, tokens: f64, within: Duration) -> u32 {
    let mut found = None;
    let port_of = |cmdline: &str| -> Option<u16> {
        let words: Vec<&str> = cmdline.split_whitespace().collect();
        words.iter().position(|w| *w == "--port").and_then(|i| words.get(i + 1)?.parse().ok())
    };
    let started = wait_until(|| {
        found = processes_marked(marker).into_iter().find_map(|p| Some((p.pid, port_of(&p.cmdline)?)));
        found.is_some()
    });
    let (pid, port) = found.filter(|_| started).expect("the server started");
    let generated = || http_get(port, "/metrics").and_then(|(_, page)| prometheus_value(&page, metric));
    // Polled for as long as the server needs to start and warm up (on 2
    // busy cores a CPU llama.cpp can take a second or more per reply, a CPU
    // vLLM minutes to start).
    let deadline = std::time::Instant::now() + within;
    while generated().is_none_or(|n| n < tokens) {
        assert!(std::time::Instant::now() < deadline, "{marker} generated {tokens} tokens within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(pid, nix::sys::signal::Signal::SIGSTOP);
    pid
}
