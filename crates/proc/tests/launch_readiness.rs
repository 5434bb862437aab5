//! A server is returned only once ready; every way of not becoming ready
//! is an error that explains itself and leaves no process behind.

use std::time::Duration;

use crate::common::{Scratch, is_alive, wait_dead};
use anvil_proc::{ProcError, ReadySpec, launch};

#[tokio::test]
async fn ready_when_http_probe_answers_200() {
    let scratch = Scratch::new();
    std::fs::write(scratch.path("index.html"), "hello").expect("write index");
    let spec = scratch.http_server_spec("py-http");
    let port = spec.port;

    let server = launch(spec).await.expect("server becomes ready");

    assert_eq!(server.base_url(), format!("http://127.0.0.1:{port}"));
    anvil_net::install_crypto_provider();
    let body = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .get(format!("{}/index.html", server.base_url()))
        .send()
        .await
        .expect("GET")
        .text()
        .await
        .expect("body");
    assert_eq!(body, "hello");
    assert!(server.startup() > Duration::ZERO);
    let pid = server.pid() as i32;
    server.stop().await;
    assert!(!is_alive(pid));
}

#[tokio::test]
async fn ready_when_log_line_matches_pattern() {
    let scratch = Scratch::new();
    let spec = scratch.shell_spec(
        "log-ready",
        "echo loading weights; echo 'INFO: Application startup complete.' >&2; exec sleep 1000",
        r"startup complete",
    );

    let server = launch(spec).await.expect("server becomes ready");

    assert!(server.log_tail(5).contains("Application startup complete"));
    let log = std::fs::read_to_string(scratch.path("log-ready.log")).expect("log file");
    assert!(log.contains("loading weights\n"), "stdout captured: {log}");
    assert!(log.contains("Application startup complete"), "stderr captured: {log}");
    server.stop().await;
}

#[tokio::test]
async fn ready_needs_both_http_and_log_when_both_given() {
    let scratch = Scratch::new();
    let mut spec = scratch.http_server_spec("both");
    // http.server logs each request to stderr: the pattern only matches after
    // the first probe, so readiness needs both checks to have passed.
    spec.ready.log_pattern = Some(r#""GET / HTTP/1.1" 200"#.to_string());

    let server = launch(spec).await.expect("ready");

    assert!(server.log_tail(20).contains("GET / HTTP/1.1"));
    server.stop().await;
}

#[tokio::test]
async fn without_checks_ready_once_port_accepts_connections() {
    let scratch = Scratch::new();
    let mut spec = scratch.http_server_spec("tcp-only");
    spec.ready = ReadySpec { http_path: None, log_pattern: None, ..spec.ready };
    let port = spec.port;

    let server = launch(spec).await.expect("ready");

    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    server.stop().await;
}

#[tokio::test]
async fn exit_before_ready_reports_status_and_log_tail() {
    let scratch = Scratch::new();
    let spec = scratch.shell_spec(
        "crashes",
        "echo 'loading model shard 1/2'; echo 'CUDA error: out of memory' >&2; exit 3",
        "never printed",
    );

    let error = launch(spec).await.expect_err("must fail");

    match &error {
        ProcError::ExitedBeforeReady { name, status, log_tail } => {
            assert_eq!(name, "crashes");
            assert_eq!(status.code(), Some(3));
            assert!(log_tail.contains("loading model shard 1/2"), "{log_tail}");
            assert!(log_tail.contains("CUDA error: out of memory"), "{log_tail}");
        }
        other => panic!("wrong error: {other}"),
    }
    assert!(error.to_string().contains("CUDA error: out of memory"));
    assert!(scratch.registry_records().is_empty(), "record removed");
}

#[tokio::test]
async fn exit_before_ready_kills_what_the_server_forked() {
    let scratch = Scratch::new();
    let spec = scratch.shell_spec(
        "crashes-with-child",
        "sleep 1000 & echo $! > $DIR/child.pid; exit 1",
        "never printed",
    );

    let error = launch(spec).await.expect_err("must fail");

    assert!(matches!(error, ProcError::ExitedBeforeReady { .. }), "{error}");
    let child = scratch.read_pid("child.pid");
    assert!(wait_dead(child), "forked child {child} must not survive");
}

#[tokio::test]
async fn ready_timeout_reports_log_tail_and_kills_the_server() {
    let scratch = Scratch::new();
    let mut spec = scratch.shell_spec(
        "hangs",
        "echo $$ > $DIR/leader.pid; echo 'waiting for NCCL'; exec sleep 1000",
        "never printed",
    );
    spec.ready.timeout = Duration::from_millis(300);

    let error = launch(spec).await.expect_err("must time out");

    match &error {
        ProcError::ReadyTimeout { after, log_tail, .. } => {
            assert_eq!(*after, Duration::from_millis(300));
            assert!(log_tail.contains("waiting for NCCL"), "{log_tail}");
        }
        other => panic!("wrong error: {other}"),
    }
    let leader = scratch.read_pid("leader.pid");
    assert!(wait_dead(leader), "timed-out server {leader} must be killed");
    assert!(scratch.registry_records().is_empty());
}

#[tokio::test]
async fn unknown_program_is_a_clear_error() {
    let scratch = Scratch::new();
    let mut spec = scratch.shell_spec("missing", "", "x");
    spec.program = "no-such-engine-anvil-test".to_string();

    let error = launch(spec).await.expect_err("must fail");

    assert!(matches!(error, ProcError::ProgramNotFound { .. }), "{error}");
    assert!(error.to_string().contains("no-such-engine-anvil-test"));
}

#[tokio::test]
async fn invalid_log_pattern_is_rejected_before_spawning() {
    let scratch = Scratch::new();
    let spec = scratch.shell_spec("bad-pattern", "echo $$ > $DIR/leader.pid", "(unclosed");

    let error = launch(spec).await.expect_err("must fail");

    assert!(matches!(error, ProcError::BadLogPattern { .. }), "{error}");
    assert!(!scratch.path("leader.pid").exists(), "nothing was spawned");
}

#[tokio::test]
async fn has_exited_reports_a_server_that_died_after_ready() {
    let scratch = Scratch::new();
    let spec = scratch.shell_spec("dies-later", "echo ready; read _ < $DIR/fifo; exit 7", "^ready$");
    nix_mkfifo(&scratch.path("fifo"));

    let mut server = launch(spec).await.expect("ready");
    assert!(server.has_exited().is_none());
    // Opening the fifo for writing and closing it lets the script go on.
    std::fs::write(scratch.path("fifo"), "go\n").expect("write fifo");
    let mut status = None;
    for _ in 0..400 {
        status = server.has_exited();
        if status.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(status.and_then(|s| s.code()), Some(7));
    let report = server.stop().await;
    assert_eq!(report.signal_used, anvil_proc::StopSignal::AlreadyExited);
}

fn nix_mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success());
}
