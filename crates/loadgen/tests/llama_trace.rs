//! The real engine replays a short trace: llama.cpp's `llama-server` with
//! SmolLM2-135M (built by `scripts/llama-server.sh`), the example Mooncake
//! trace's first lines at their recorded times, output lengths held by
//! `ignore_eos`. Skipped (with a note) unless `LLAMA_SERVER` and
//! `SMOLLM2_GGUF` are set, as `scripts/test.sh` sets them:
//!
//!     eval "$(scripts/llama-server.sh --print-env)"
//!     cargo test -p anvil-loadgen --test main llama_trace:: -- --nocapture

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anvil_loadgen::{
    CellContext, CellReport, CellSpec, Progress, Target, TokenizerSpec, TraceFormat, TraceSpec, Traffic,
    run_cell,
};

fn real_engine() -> Option<(String, String)> {
    match (std::env::var("LLAMA_SERVER"), std::env::var("SMOLLM2_GGUF")) {
        (Ok(server), Ok(model)) => Some((server, model)),
        _ => {
            eprintln!(
                "skipped: set LLAMA_SERVER and SMOLLM2_GGUF \
                 (eval \"$(scripts/llama-server.sh --print-env)\")"
            );
            None
        }
    }
}

/// One llama-server at a time in this binary: on a 2-core machine three
/// servers whose ggml threads spin at their barriers starve each other (a
/// 32-token reply once took over 120 s in CI), so each test waits its turn.
static ONE_SERVER_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The server process, killed when the test ends however it ends; it holds
/// the turn until then.
struct Server {
    child: Child,
    /// Its stderr: removed with it, kept when the test failed (and named).
    log: PathBuf,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("llama-server's log: {}", self.log.display());
        } else {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a port")
}

/// `GET /health` answers 200 (plain HTTP/1.1 over a socket: no client stack needed).
fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut socket) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = socket.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    let mut head = [0u8; 12];
    socket.write_all(request.as_bytes()).is_ok()
        && socket.read_exact(&mut head).is_ok()
        && head.starts_with(b"HTTP/1.1 200")
}

async fn wait_ready(port: u16, server: &mut Server) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("llama-server exited before it was ready: {status}");
        }
        if healthy(port) {
            return;
        }
        assert!(Instant::now() < deadline, "llama-server not ready after 180 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn log_path(log_name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("anvil-{log_name}-{}.log", std::process::id()))
}

/// Starts llama-server (with `extra` flags, its log at [`log_path`]) and waits until it is ready.
async fn start(program: &str, model: &str, extra: &[&str], log_name: &str) -> (Server, String) {
    let turn = ONE_SERVER_AT_A_TIME.lock().await;
    let port = free_port();
    let log = log_path(log_name);
    let child = Command::new(program)
        .args(["-m", model, "--alias", "smollm2-135m", "--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-c", "8192", "--parallel", "4", "-t", "2"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).map(Stdio::from).unwrap_or(Stdio::null()))
        .spawn()
        .expect("llama-server starts");
    let mut server = Server { child, log, _turn: turn };
    wait_ready(port, &mut server).await;
    (server, format!("http://127.0.0.1:{port}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_server_replays_a_short_mooncake_trace_on_schedule() {
    let Some((program, model)) = real_engine() else {
        return;
    };
    let (_server, base_url) = start(&program, &model, &[], "llama-trace").await;

    let trace = example_trace_spec(Some(6));
    let spec = CellSpec {
        name: "llama-trace".into(),
        model: "smollm2-135m".into(),
        concurrency: 8,
        seed: 3,
        request_timeout_ms: 120_000,
        traffic: Traffic::Trace(trace),
        ..CellSpec::default()
    };
    let target = [Target { base_url, api_key: None, label: "llama".into(), tls: Default::default() }];
    let ctx = CellContext { engine: "llama.cpp".into(), ..CellContext::default() };
    let quiet = |_: &Progress| {};
    let report = run_cell(&spec, &target, &ctx, &quiet).await.expect("the trace replays");
    let a = &report.artifact;
    assert_eq!(a["failed"], 0, "failures: {}", a["failures"]);
    assert_eq!(report.records.len(), 6);
    let recorded = [0.0, 120.0, 240.0, 360.0, 480.0, 600.0];
    for (r, due) in report.records.iter().zip(recorded) {
        eprintln!(
            "line {:?}: due {:.1} ms, lag {:.3} ms, ttft {:.1} ms, prompt {:?} cached {:?}, output {:?}/{:?}",
            r.trace_line,
            r.intended_send_ms,
            r.send_lag_ms,
            r.ttft_ms.unwrap_or(f64::NAN),
            r.prompt_tokens,
            r.cached_prompt_tokens,
            r.output_tokens,
            r.requested_output_tokens
        );
        assert!(r.trace_line.is_some());
        assert!((r.intended_send_ms - due).abs() < 1e-3, "sent on the trace's schedule");
        assert_eq!(r.output_length_met, Some(true), "ignore_eos holds the output length: {r:?}");
        assert!(r.prompt_tokens.unwrap() > 0);
    }
}

fn example_trace() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/traces/mooncake-small.jsonl"))
}

/// The example Mooncake trace at its recorded times, 16-token blocks,
/// output lengths held by `ignore_eos`.
fn example_trace_spec(max_requests: Option<u64>) -> TraceSpec {
    TraceSpec {
        path: example_trace(),
        format: TraceFormat::Mooncake,
        block_tokens: 16,
        time_scale: 1.0,
        start_ms: 0,
        duration_ms: None,
        max_requests,
        looped: false,
        ignore_eos: true,
    }
}

/// Each line's `input_length` (0 for a line sent as its own text), from the file.
fn input_lengths() -> Vec<u64> {
    std::fs::read_to_string(example_trace())
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["input_length"].as_u64().unwrap_or(0))
        .collect()
}

async fn replay_token_exact(base_url: &str, tokenizer: TokenizerSpec) -> CellReport {
    let trace = example_trace_spec(None);
    let spec = CellSpec {
        name: "llama-exact".into(),
        model: "smollm2-135m".into(),
        concurrency: 8,
        seed: 3,
        request_timeout_ms: 120_000,
        traffic: Traffic::Trace(trace),
        tokenizer: Some(tokenizer),
        ..CellSpec::default()
    };
    let target =
        [Target { base_url: base_url.into(), api_key: None, label: "llama".into(), tls: Default::default() }];
    let ctx = CellContext { engine: "llama.cpp".into(), ..CellContext::default() };
    run_cell(&spec, &target, &ctx, &|_: &Progress| {}).await.expect("the trace replays")
}

/// The acceptance on the real engine: every replayed line's
/// `prompt_tokens` is its `input_length` plus the measured template
/// overhead (spread 0), outputs are their `output_length`, the server's
/// cached tokens stand next to the ideal ones, and `tokenizer "server"`
/// and SmolLM2's `tokenizer.json` build the same prompts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_server_replays_the_trace_token_exact_with_either_tokenizer() {
    let Some((program, model)) = real_engine() else {
        return;
    };
    let (_server, base_url) = start(&program, &model, &["--jinja", "--metrics"], "llama-exact").await;
    let file =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/tokenizers/smollm2-135m/tokenizer.json");
    let lengths = input_lengths();
    let template_prefix = template_prefix_tokens(&base_url).await;
    let mut alphabets = Vec::new();
    for (run, tokenizer) in
        [TokenizerSpec::File { path: file.into() }, TokenizerSpec::Server].into_iter().enumerate()
    {
        let report = replay_token_exact(&base_url, tokenizer.clone()).await;
        let a = &report.artifact;
        assert_eq!(a["failed"], 0, "failures: {}", a["failures"]);
        let tokens = &a["tokens"];
        let overhead = tokens["template_overhead_tokens"].as_u64().expect("measured");
        eprintln!("{}: overhead {overhead}, tokens {tokens:#}", tokenizer.as_written());
        let mut built = 0;
        for r in &report.records {
            let line = r.trace_line.unwrap() as usize;
            let asked = lengths[line - 1];
            eprintln!(
                "line {line}: input_length {asked}, prompt {:?} (expected {:?}), cached {:?} (ideal {:?}), output {:?}/{:?}, id {:?} -> {:?}",
                r.prompt_tokens,
                r.prompt_tokens_expected,
                r.cached_prompt_tokens,
                r.ideal_cached_tokens,
                r.output_tokens,
                r.requested_output_tokens,
                r.request_id,
                r.response_id
            );
            assert_eq!(r.output_length_met, Some(true), "line {line}");
            assert!(
                r.response_id.as_deref().is_some_and(|id| id.starts_with("chatcmpl-")),
                "{:?}",
                r.response_id
            );
            if asked == 0 {
                continue; // sent as its own text
            }
            assert_eq!(r.prompt_tokens, Some(asked + overhead), "line {line}: exactly its input_length");
            assert_eq!(r.prompt_length_met, Some(true));
            built += 1;
        }
        assert!(built >= 19, "every line with an input_length");
        let spread = &tokens["prompt_length"];
        assert_eq!(
            (spread["difference_min"].as_i64(), spread["difference_max"].as_i64()),
            (Some(0), Some(0))
        );
        assert!(
            tokens["prefix_cache"]["ideal_cached_tokens"].as_u64().unwrap() > 0,
            "the trace shares blocks"
        );
        // The template's cached part is its leading tokens, as llama.cpp's own
        // /apply-template and /tokenize count them.
        assert_eq!(tokens["template_cached_tokens"], template_prefix, "{tokens}");
        if run == 0 {
            // A cold server cannot hold more than an unbounded cache would.
            let ratio = tokens["prefix_cache"]["ratio_with_template"].as_f64().unwrap();
            assert!(ratio <= 1.0, "{ratio}");
        }
        alphabets.push(tokens["alphabet"]["blake3"].as_str().unwrap().to_string());
    }
    assert_eq!(
        alphabets[0], alphabets[1],
        "the server's tokenizer and the tokenizer.json find the same words and ids"
    );
}

/// The tokens of llama.cpp's chat template before a user message's content,
/// by the server's own `/apply-template` and `/tokenize`.
async fn template_prefix_tokens(base_url: &str) -> u64 {
    anvil_net::install_crypto_provider();
    let client = reqwest::Client::new();
    let marker = "QQQMARKERQQQ";
    let body = serde_json::json!({"messages": [{"role": "user", "content": marker}]});
    let applied: serde_json::Value = client
        .post(format!("{base_url}/apply-template"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let prompt = applied["prompt"].as_str().unwrap();
    let before = &prompt[..prompt.find(marker).unwrap()];
    let tokens: serde_json::Value = client
        .post(format!("{base_url}/tokenize"))
        .json(&serde_json::json!({"content": before, "add_special": false, "parse_special": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    tokens["tokens"].as_array().unwrap().len() as u64
}

/// The server's Prometheus counters whose name starts with `prefix`.
async fn counters(base_url: &str, prefix: &str) -> std::collections::BTreeMap<String, f64> {
    anvil_net::install_crypto_provider();
    let text = reqwest::get(format!("{base_url}/metrics")).await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.split_once(' ').map(|(k, v)| (k.to_string(), v.trim().parse().unwrap_or(f64::NAN))))
        .collect()
}

/// llama.cpp with SmolLM2 as its own draft model: every request's drafted
/// and accepted tokens (its `timings`) sum to what `/metrics` counted and
/// to what the server's log printed per task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_server_draft_acceptance_per_request_matches_its_metrics_and_log() {
    let Some((program, model)) = real_engine() else {
        return;
    };
    let flags =
        ["--jinja", "--metrics", "-md", &model, "--spec-type", "draft-simple", "--spec-draft-n-max", "8"];
    let (_server, base_url) = start(&program, &model, &flags, "llama-draft").await;
    let before = counters(&base_url, "llamacpp:spec_decode").await;
    let trace = example_trace_spec(Some(6));
    let spec = CellSpec {
        name: "llama-draft".into(),
        model: "smollm2-135m".into(),
        concurrency: 1,
        seed: 3,
        request_timeout_ms: 120_000,
        traffic: Traffic::Trace(trace),
        ..CellSpec::default()
    };
    let target = [Target {
        base_url: base_url.clone(),
        api_key: None,
        label: "llama".into(),
        tls: Default::default(),
    }];
    let ctx = CellContext { engine: "llama.cpp".into(), ..CellContext::default() };
    let report = run_cell(&spec, &target, &ctx, &|_: &Progress| {}).await.expect("the cell runs");
    assert_eq!(report.artifact["failed"], 0, "{}", report.artifact["failures"]);
    let after = counters(&base_url, "llamacpp:spec_decode").await;
    let delta =
        |name: &str| after.get(name).copied().unwrap_or(0.0) - before.get(name).copied().unwrap_or(0.0);
    let drafted: u64 = report.records.iter().map(|r| r.draft_tokens.expect("timings.draft_n")).sum();
    let accepted: u64 =
        report.records.iter().map(|r| r.draft_accepted_tokens.expect("draft_n_accepted")).sum();
    let speculative = &report.artifact["tokens"]["speculative"];
    eprintln!("records: {drafted} drafted, {accepted} accepted; artifact {speculative}; metrics {after:?}");
    assert_eq!(speculative["draft_tokens"], drafted);
    assert_eq!(delta("llamacpp:spec_decode_num_draft_tokens_total") as u64, drafted, "{after:?}");
    assert_eq!(delta("llamacpp:spec_decode_num_accepted_tokens_total") as u64, accepted, "{after:?}");
    // The log's per-task line: `draft acceptance = 0.19672 (48 accepted / 244 generated)`.
    let log = std::fs::read_to_string(log_path("llama-draft")).unwrap();
    let (mut log_accepted, mut log_generated) = (0u64, 0u64);
    for line in log.lines().filter(|l| l.contains("draft acceptance")) {
        let inner = line.split('(').nth(1).unwrap_or("");
        let numbers: Vec<u64> =
            inner.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
        if let [a, g, ..] = numbers[..] {
            log_accepted += a;
            log_generated += g;
        }
    }
    eprintln!("log: {log_accepted} accepted / {log_generated} generated");
    assert_eq!((log_accepted, log_generated), (accepted, drafted), "the server's own log agrees");
}
