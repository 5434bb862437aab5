//! A server's warm-up: short unmeasured requests before its first step.

use std::time::Duration;

use serde_json::{Value, json};

use super::server_info::ServerInfo;

/// `warmup requests=4 max-tokens=16`: `requests` short requests of up to
/// `max_tokens` to every replica once, before the server's first step, so
/// no cell measures a cold engine.
pub(super) async fn warm_up(requests: u64, max_tokens: u64, info: &ServerInfo) -> Result<Value, String> {
    if requests == 0 {
        return Ok(Value::Null);
    }
    let started = std::time::Instant::now();
    for target in &info.targets {
        let client = anvil_net::http_client_builder(&target.tls)
            .and_then(|builder| Ok(builder.timeout(Duration::from_secs(600)).build()?))
            .map_err(|e| format!("warm-up of `{}`: {e:#}", target.label))?;
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
            let response = request.send().await.map_err(|e| {
                let why = anvil_net::certificate_problem(&e).unwrap_or_else(|| e.to_string());
                format!("warm-up of `{}` failed: {why}", target.label)
            })?;
            if !response.status().is_success() {
                return Err(format!("warm-up of `{}` got HTTP {}", target.label, response.status()));
            }
        }
    }
    Ok(
        json!({"requests_per_replica": requests, "max_tokens": max_tokens, "duration_ms": started.elapsed().as_millis() as u64}),
    )
}
