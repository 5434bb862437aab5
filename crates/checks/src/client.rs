//! HTTP to the server under test: one POST with a whole JSON reply, or one
//! POST whose reply is an event stream. A server that cannot be reached is
//! an infrastructure error (`Unreachable`); a server that answers badly,
//! hangs past the timeout or cuts the body is a check failure (`Broken`).

use std::time::{Duration, Instant};

use anvil_net::NetError;
use futures_util::StreamExt as _;
use serde_json::Value;

use crate::spec::Target;
use crate::sse::{SseEvent, SseParser};

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No connection could be made: not the server's answer, the check cannot run.
    #[error("cannot reach {url}: {message}")]
    Unreachable { url: String, message: String },
    /// The server was reached but the exchange broke (timeout, cut body...).
    #[error("{0}")]
    Broken(String),
}

/// A whole (non-streaming) reply.
#[derive(Debug)]
pub struct WholeReply {
    pub status: u16,
    pub body: String,
    pub elapsed: Duration,
}

/// How an event stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The server closed the body at an event boundary.
    Closed,
    /// The body ended in the middle of an event (these bytes were left over).
    CutMidEvent(String),
    /// The connection broke while reading.
    TransportError(String),
    /// The timeout passed before the body ended.
    TimedOut,
}

/// A streamed reply: every complete event, and how the stream ended.
/// A non-2xx status carries the error body in `error_body` and no events.
#[derive(Debug)]
pub struct StreamedReply {
    pub status: u16,
    pub events: Vec<SseEvent>,
    pub end: StreamEnd,
    pub error_body: Option<String>,
    pub elapsed: Duration,
}

pub struct ApiClient {
    http: reqwest::Client,
    /// Base URL without a trailing `/` or `/v1`.
    base_url: String,
    api_key: Option<String>,
    timeout: Duration,
}

impl ApiClient {
    pub fn new(target: &Target, timeout_ms: u64) -> Result<Self, NetError> {
        let http = anvil_net::http_client(&target.tls)?;
        let trimmed = target.base_url.trim_end_matches('/');
        let base_url = trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_owned();
        Ok(Self {
            http,
            base_url,
            api_key: target.api_key.clone(),
            timeout: Duration::from_millis(timeout_ms.max(1)),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    fn request(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        let request = self.http.post(self.url(path)).json(body);
        match &self.api_key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    fn classify(&self, path: &str, error: reqwest::Error) -> CallError {
        // A rejected certificate says so, not just "error sending request".
        let message = match anvil_net::certificate_problem(&error) {
            Some(problem) => problem,
            None => error_chain(&error),
        };
        if error.is_connect() || error.is_builder() {
            CallError::Unreachable { url: self.url(path), message }
        } else {
            CallError::Broken(format!("request failed: {message}"))
        }
    }

    /// POST `body` and read the whole reply within the timeout.
    pub async fn post_whole(&self, path: &str, body: &Value) -> Result<WholeReply, CallError> {
        let started = Instant::now();
        let exchange = async {
            let response = self.request(path, body).send().await.map_err(|e| self.classify(path, e))?;
            let status = response.status().as_u16();
            let body = response.text().await.map_err(|e| {
                CallError::Broken(format!("HTTP {status}, but the body was cut off: {}", error_chain(&e)))
            })?;
            Ok(WholeReply { status, body, elapsed: started.elapsed() })
        };
        tokio::time::timeout(self.timeout, exchange).await.unwrap_or_else(|_| Err(self.timed_out()))
    }

    /// POST `body` and collect its event stream until the server closes it
    /// or the timeout passes (what arrived until then is kept).
    pub async fn post_stream(&self, path: &str, body: &Value) -> Result<StreamedReply, CallError> {
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + self.timeout;
        let response = tokio::time::timeout_at(deadline, self.request(path, body).send())
            .await
            .map_err(|_| self.timed_out())?
            .map_err(|e| self.classify(path, e))?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let error_body =
                tokio::time::timeout_at(deadline, response.text()).await.ok().and_then(Result::ok);
            return Ok(StreamedReply {
                status,
                events: Vec::new(),
                end: StreamEnd::Closed,
                error_body,
                elapsed: started.elapsed(),
            });
        }
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        let mut body = response.bytes_stream();
        let end = loop {
            match tokio::time::timeout_at(deadline, body.next()).await {
                Err(_) => break StreamEnd::TimedOut,
                Ok(None) => break parser.partial().map_or(StreamEnd::Closed, StreamEnd::CutMidEvent),
                Ok(Some(Err(error))) => break StreamEnd::TransportError(error_chain(&error)),
                Ok(Some(Ok(bytes))) => events.extend(parser.push(&bytes)),
            }
        };
        Ok(StreamedReply { status, events, end, error_body: None, elapsed: started.elapsed() })
    }

    fn timed_out(&self) -> CallError {
        CallError::Broken(format!("no complete reply within the {} ms timeout", self.timeout.as_millis()))
    }
}

/// An error and its sources on one line (reqwest's own message is terse).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
