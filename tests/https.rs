//! https endpoints end to end through the `anvil` binary: the simulated
//! engine behind a TLS server on loopback whose certificates are generated
//! here (anvil_net::test_proxy), reached as an external `url "https://…"`.

use std::time::{Duration, Instant};

use crate::common::Scratch;
use anvil_net::test_proxy::{ServerIdentity, TlsProxy, unrelated_ca_pem};

/// The sim and the TLS proxy in front of it, served by their own runtime
/// while the test thread runs `anvil`.
struct Https {
    runtime: tokio::runtime::Runtime,
    sim: Option<anvil_sim::SimHandle>,
    proxy: TlsProxy,
}

impl Https {
    fn start() -> Https {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (sim, proxy) = runtime.block_on(async {
            let mut profile = anvil_sim::SimProfile::default();
            profile.set("decode-step-ms", "1").expect("valid key");
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let sim = anvil_sim::spawn(profile, listener).await.expect("sim starts");
            let proxy = TlsProxy::start(sim.addr()).await.expect("TLS proxy starts");
            (sim, proxy)
        });
        Https { runtime, sim: Some(sim), proxy }
    }

    /// A recipe with the proxy as an external server trusted by `trust`
    /// (`ca-bundle "…"` or `tls-insecure #true`), one cell and one check.
    fn recipe(&self, trust: &str) -> String {
        format!(
            r#"
server "tls" {{
    url "{url}"
    model "test-model"
    {trust}
}}
cell "c" server="tls" {{ context-tokens 64; requests 6; concurrency 2; max-tokens 16; }}
check "smoke" server="tls" type="smoke"
"#,
            url = self.proxy.base_url()
        )
    }
}

impl Drop for Https {
    fn drop(&mut self) {
        if let Some(sim) = self.sim.take() {
            let _ = self.runtime.block_on(sim.shutdown());
        }
    }
}

#[test]
fn a_cell_and_a_check_run_over_https_with_a_ca_bundle() {
    let https = Https::start();
    let scratch = Scratch::new();
    scratch.write("ca.pem", https.proxy.ca_pem());
    let recipe = scratch.write("recipe.kdl", &https.recipe(r#"ca-bundle "ca.pem""#));
    let outcome = scratch.run(&recipe, &[], 0);
    let statuses = scratch.last_run_statuses();
    assert_eq!(statuses.get("c").map(String::as_str), Some("ran"), "{statuses:?}\n{}", outcome.transcript());
    assert_eq!(
        statuses.get("smoke").map(String::as_str),
        Some("ran"),
        "{statuses:?}\n{}",
        outcome.transcript()
    );
    let handshakes = https.proxy.handshakes().count.load(std::sync::atomic::Ordering::Relaxed);
    assert!(handshakes > 0, "nothing went through the TLS server");

    // The trust settings are not part of any fingerprint: trusting the same
    // server another way reruns nothing.
    let before = scratch.plan(&recipe, &[]).fingerprints();
    let insecure = scratch.write("recipe.kdl", &https.recipe("tls-insecure #true"));
    assert_eq!(scratch.plan(&insecure, &[]).fingerprints(), before);
}

#[test]
fn a_wrong_ca_fails_fast_and_says_it_is_a_certificate_problem() {
    let https = Https::start();
    let scratch = Scratch::new();
    scratch.write("wrong-ca.pem", &unrelated_ca_pem().expect("a CA"));
    let recipe = scratch.write("recipe.kdl", &https.recipe(r#"ca-bundle "wrong-ca.pem""#));
    let started = Instant::now();
    let outcome = scratch.anvil(&["run", recipe.to_str().expect("utf-8")]);
    let transcript = outcome.transcript();
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}: {transcript}", started.elapsed());
    assert_ne!(outcome.code, Some(0), "{transcript}");
    // The cell (the load generator's client) and the check (reqwest) both say so.
    for step in ["cell     c", "check    smoke"] {
        let line =
            transcript.lines().find(|l| l.contains(step)).unwrap_or_else(|| panic!("{step}: {transcript}"));
        assert!(line.contains("TLS certificate problem") && line.contains("UnknownIssuer"), "{line}");
    }
}

#[test]
fn tls_insecure_works_against_a_self_signed_server_and_warns_once() {
    let https = Https::start();
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", &https.recipe("tls-insecure #true"));
    let outcome = scratch.run(&recipe, &[], 0);
    let transcript = outcome.transcript();
    assert_eq!(transcript.matches("warning: tls-insecure is set").count(), 1, "{transcript}");
    let statuses = scratch.last_run_statuses();
    assert_eq!(statuses.get("c").map(String::as_str), Some("ran"), "{statuses:?}\n{transcript}");
}

#[test]
fn a_ca_bundle_that_cannot_be_read_stops_the_server_with_its_name() {
    let https = Https::start();
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", &https.recipe(r#"ca-bundle "missing.pem""#));
    let outcome = scratch.anvil(&["run", recipe.to_str().expect("utf-8")]);
    let transcript = outcome.transcript();
    assert_ne!(outcome.code, Some(0), "{transcript}");
    assert!(
        transcript.contains("cannot read ca-bundle") && transcript.contains("missing.pem"),
        "{transcript}"
    );
}

#[test]
fn a_launched_server_with_tls_settings_is_probed_measured_and_checked_over_https() {
    let https = Https::start();
    let scratch = Scratch::new();
    let identity = ServerIdentity::generate().expect("certificates");
    scratch.write("ca.pem", &identity.ca_pem);
    scratch.write("cert.pem", &identity.cert_pem);
    scratch.write("key.pem", &identity.key_pem);
    let relay = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls_relay.py");
    let sim_port = https.sim.as_ref().expect("sim").addr().port();
    let recipe = scratch.write(
        "recipe.kdl",
        &format!(
            r#"
server "engine" {{
    command "python3" "{relay}" "{{port}}" "{sim_port}" "cert.pem" "key.pem"
    ready http="/health" timeout="20s"
    ca-bundle "ca.pem"
    model "test-model"
}}
cell "c" server="engine" {{ context-tokens 64; requests 4; concurrency 2; max-tokens 16; }}
check "smoke" server="engine" type="smoke"
"#
        ),
    );
    let outcome = scratch.run(&recipe, &[], 0);
    let statuses = scratch.last_run_statuses();
    for step in ["c", "smoke"] {
        assert_eq!(
            statuses.get(step).map(String::as_str),
            Some("ran"),
            "{statuses:?}\n{}",
            outcome.transcript()
        );
    }
}

#[test]
fn contradictory_or_misplaced_trust_settings_are_recipe_errors() {
    let scratch = Scratch::new();
    for (server, expected) in [
        (r#"url "https://127.0.0.1:9"; ca-bundle "ca.pem"; tls-insecure #true"#, "would be ignored"),
        (r#"tls-insecure #true"#, "serves plain http"),
    ] {
        let recipe = scratch.write(
            "recipe.kdl",
            &format!("server \"s\" {{ {server}; }}\ncell \"c\" server=\"s\" {{ requests 2; }}\n"),
        );
        let outcome = scratch.anvil(&["plan", recipe.to_str().expect("utf-8")]);
        assert_eq!(outcome.code, Some(2), "{}", outcome.transcript());
        assert!(
            outcome.stderr.contains(expected) && outcome.stderr.contains("recipe.kdl:1:"),
            "{}",
            outcome.stderr
        );
    }
}
