//! The sim as a separate process, the way anvil launches it.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use serde_json::json;

#[test]
fn exit_after_requests_exits_the_process_with_status_3() {
    let profile = json!({"decode-step-ms": 1, "faults": {"exit-after-requests": 2}}).to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_anvil-sim"))
        .args(["--port", "0", "--profile-json", &profile])
        .stdout(Stdio::piped())
        .spawn()
        .expect("sim binary starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("listening line");
    let url = line.trim().rsplit(' ').next().expect("address in line").to_owned();

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        anvil_net::install_crypto_provider();
        let client = reqwest::Client::new();
        for _ in 0..2 {
            let body = json!({"messages": [{"role": "user", "content": "Write about 3 words."}]});
            let response =
                client.post(format!("{url}/v1/chat/completions")).json(&body).send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.text().await.unwrap();
        }
    });
    let status = child.wait().expect("child exits");
    assert_eq!(status.code(), Some(3));
}

#[test]
fn bad_profile_json_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_anvil-sim"))
        .args(["--port", "0", "--profile-json", r#"{"decode-step-msx": 1}"#])
        .output()
        .expect("sim binary runs");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("decode-step-msx"));
}
