//! The load generator's own client over https: a TLS proxy on loopback
//! (certificates generated in the test) in front of the simulated engine.

use std::time::{Duration, Instant};

use anvil_loadgen::{CellContext, CellSpec, Progress, Target, run_cell};
use anvil_net::TlsSettings;
use anvil_net::test_proxy::{TlsProxy, unrelated_ca_pem};
use serde_json::Value;

async fn sim_behind_tls() -> (anvil_sim::SimHandle, TlsProxy) {
    let mut profile = anvil_sim::SimProfile::default();
    profile.set("decode-step-ms", "1").expect("valid key");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let sim = anvil_sim::spawn(profile, listener).await.expect("sim starts");
    let proxy = TlsProxy::start(sim.addr()).await.expect("TLS proxy starts");
    (sim, proxy)
}

fn pem_file(name: &str, pem: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("anvil-loadgen-tls-{}-{name}.pem", std::process::id()));
    std::fs::write(&path, pem).expect("write PEM");
    path
}

fn spec(requests: u32) -> CellSpec {
    CellSpec {
        name: "tls".into(),
        model: "sim-model".into(),
        context_tokens: 256,
        concurrency: 2,
        requests,
        warmup_requests: 1,
        max_tokens: 32,
        request_timeout_ms: 20_000,
        ..CellSpec::default()
    }
}

async fn run(proxy: &TlsProxy, tls: TlsSettings, requests: u32) -> anyhow::Result<Value> {
    let target = [Target { base_url: proxy.base_url(), api_key: None, label: "tls".into(), tls }];
    let ctx = CellContext { engine: "sim".into(), simulated: true, ..CellContext::default() };
    let quiet = |_: &Progress| {};
    Ok(run_cell(&spec(requests), &target, &ctx, &quiet).await?.artifact)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cell_over_https_verifies_the_ca_bundle_and_keeps_connections_alive() {
    let (sim, proxy) = sim_behind_tls().await;
    let ca = pem_file("ca", proxy.ca_pem());
    let artifact = run(&proxy, TlsSettings { ca_bundle: Some(ca.clone()), insecure: false }, 12)
        .await
        .expect("cell runs");
    assert_eq!(artifact["failed"], 0, "failures: {}", artifact["failures"]);
    assert_eq!(artifact["requests"], 12, "{artifact}");
    // Keep-alive: a handful of connections carried calibration, warmup and
    // 12 measured requests, each connection with one handshake.
    let handshakes = proxy.handshakes().count.load(std::sync::atomic::Ordering::Relaxed);
    assert!((1..=6).contains(&handshakes), "{handshakes} TLS handshakes");
    let latest = proxy.handshakes().latest.lock().expect("lock").clone().expect("a handshake");
    assert_eq!(latest.server_name.as_deref(), Some("localhost"), "SNI from the URL's host");
    assert_eq!(latest.alpn.as_deref(), Some(&b"http/1.1"[..]), "ALPN");
    // Connect-ahead opened the connections, handshake included and timed.
    let opened = artifact["connections"]["opened_ahead"].as_array().expect("connections opened ahead");
    assert!(!opened.is_empty(), "{}", artifact["connections"]);
    for connection in opened {
        let (connect, handshake) =
            (connection["connect_ms"].as_f64(), connection["tls_handshake_ms"].as_f64());
        assert!(matches!((connect, handshake), (Some(c), Some(h)) if h > 0.0 && h <= c), "{connection}");
    }
    let ttft = artifact["metrics"]["ttft_p50_ms"].as_f64().expect("TTFT p50");
    assert!(ttft > 0.0, "{}", artifact["metrics"]);
    // The ciphertext reads carry the kernel's receive stamps, as plain http does.
    let timings = artifact["request_timings"].as_array().expect("request timings");
    assert!(timings.iter().all(|t| t["receive_clock"] == "kernel"), "{timings:?}");
    std::fs::remove_file(ca).ok();
    sim.shutdown().await.expect("sim stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_fails_at_once_with_a_certificate_error() {
    let (sim, proxy) = sim_behind_tls().await;
    let wrong = pem_file("wrong", &unrelated_ca_pem().expect("a CA"));
    let started = Instant::now();
    let outcome = run(&proxy, TlsSettings { ca_bundle: Some(wrong.clone()), insecure: false }, 4).await;
    let text = match outcome {
        Ok(artifact) => artifact["failures"].to_string(),
        Err(error) => format!("{error:#}"),
    };
    eprintln!("wrong CA: {text}");
    assert!(text.contains("TLS certificate problem"), "{text}");
    assert!(text.contains("UnknownIssuer"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    std::fs::remove_file(wrong).ok();
    sim.shutdown().await.expect("sim stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_insecure_accepts_a_certificate_nobody_vouches_for() {
    let (sim, proxy) = sim_behind_tls().await;
    let artifact = run(&proxy, TlsSettings { ca_bundle: None, insecure: true }, 4).await.expect("cell runs");
    assert_eq!(artifact["failed"], 0, "failures: {}", artifact["failures"]);
    // Without the CA or the opt-in, the public roots do not know it.
    let refused = run(&proxy, TlsSettings::default(), 2).await;
    let text = match refused {
        Ok(artifact) => artifact["failures"].to_string(),
        Err(error) => format!("{error:#}"),
    };
    assert!(text.contains("TLS certificate problem"), "{text}");
    sim.shutdown().await.expect("sim stops");
}
