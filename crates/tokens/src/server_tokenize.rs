//! The engine's own tokenize endpoint, `POST {root}/tokenize` (docs/servers.md):
//! - llama.cpp: `{"content": TEXT, "add_special": false}` → `{"tokens": [ids]}`;
//! - vLLM and SGLang: `{"model": M, "prompt": TEXT, "add_special_tokens": false}`
//!   → `{"tokens": [ids], "count": n, "max_model_len": m}`.
//!
//! One body carries both spellings (each engine ignores the other's keys),
//! so the same request works on all three; the reply's `tokens` is read as
//! ids, or as `{"id": …}` objects where a server sends pieces.

use crate::error::{ReplyError, Result, TokenizerError};
use serde_json::{Value, json};

/// A server's tokenize endpoint.
#[derive(Debug, Clone)]
pub struct ServerTokenizer {
    client: reqwest::Client,
    url: String,
    model: String,
    api_key: Option<String>,
}

impl ServerTokenizer {
    /// `root`: the server's base URL (a trailing `/v1` is dropped: the
    /// endpoint sits at the root on every engine).
    pub fn new(root: &str, model: &str, api_key: Option<&str>, tls: &anvil_net::TlsSettings) -> Result<Self> {
        let root = root.trim_end_matches('/');
        let root = root.strip_suffix("/v1").unwrap_or(root);
        let url = format!("{root}/tokenize");
        let unbuilt = |reason: String| TokenizerError::Client { url: url.clone(), reason };
        // Idle connections are dropped before a server's own keep-alive
        // timeout (llama-server's is 5 s) can close one under a request.
        let client = anvil_net::http_client_builder(tls)
            .map_err(|e| unbuilt(format!("{e:#}")))?
            .pool_idle_timeout(std::time::Duration::from_secs(2))
            .build()
            .map_err(|e| unbuilt(e.to_string()))?;
        Ok(Self { client, url, model: model.to_string(), api_key: api_key.map(str::to_owned) })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The ids of `text` (no special tokens added).
    pub async fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let body = json!({
            "content": text, "add_special": false,
            "model": self.model, "prompt": text, "add_special_tokens": false,
        });
        let reply = self.send(&body).await?;
        let status = reply.status();
        let url = || self.url.clone();
        let text = reply.text().await.map_err(|source| TokenizerError::ReadReply { url: url(), source })?;
        if !status.is_success() {
            return Err(TokenizerError::Status {
                url: url(),
                status,
                body: text.chars().take(300).collect(),
            });
        }
        let value: Value = serde_json::from_str(&text)
            .map_err(|_| TokenizerError::NotJson { url: url(), body: text.chars().take(200).collect() })?;
        ids_of(&value).map_err(|reason| TokenizerError::Reply { url: url(), reason })
    }
}

/// Sends attempts before a transport error stands: tokenizing is
/// idempotent, and a server may close a kept-alive connection just as the
/// client reuses it (llama-server's HTTP library does, under 16 at once).
const ATTEMPTS: u32 = 4;

impl ServerTokenizer {
    async fn send(&self, body: &Value) -> Result<reqwest::Response> {
        let mut attempt = 1;
        loop {
            let mut request = self.client.post(&self.url).json(body);
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            match request.send().await {
                Ok(reply) => return Ok(reply),
                Err(e) if attempt < ATTEMPTS && !e.is_timeout() => {
                    tokio::time::sleep(std::time::Duration::from_millis(50 * u64::from(attempt))).await;
                    attempt += 1;
                }
                Err(source) => {
                    return Err(TokenizerError::Send { url: self.url.clone(), attempts: attempt, source });
                }
            }
        }
    }
}

/// The `tokens` of a tokenize reply, as ids; what is wrong with it when
/// it holds none.
pub fn ids_of(reply: &Value) -> std::result::Result<Vec<u32>, ReplyError> {
    let Some(tokens) = reply.get("tokens").and_then(Value::as_array) else {
        return Err(ReplyError::NoTokens { reply: reply.clone() });
    };
    tokens
        .iter()
        .map(|t| {
            let id = t.as_u64().or_else(|| t.get("id").and_then(Value::as_u64));
            id.and_then(|id| u32::try_from(id).ok()).ok_or_else(|| ReplyError::NotAnId { token: t.clone() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ids_and_pieces() {
        assert_eq!(ids_of(&json!({"tokens": [1, 2, 3], "count": 3})).unwrap(), vec![1, 2, 3]);
        let pieces = json!({"tokens": [{"id": 92, "piece": "l"}, {"id": 390, "piece": "ore"}]});
        assert_eq!(ids_of(&pieces).unwrap(), vec![92, 390]);
        assert!(ids_of(&json!({"error": "x"})).unwrap_err().to_string().contains("no `tokens`"));
        assert!(ids_of(&json!({"tokens": ["a"]})).is_err());
    }
}
