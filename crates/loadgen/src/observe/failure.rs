//! Why a request failed or is excluded from the performance distributions:
//! what the HTTP client, the stream observation and the record all name.

use serde::{Deserialize, Serialize};

/// Why a request is excluded from the performance distributions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// Non-2xx HTTP status.
    HttpStatus,
    /// `request_timeout_ms` elapsed before the stream ended.
    Timeout,
    /// Could not connect at all.
    Connect,
    /// The connection broke or the stream ended without its end marker.
    Disconnect,
    /// An event whose payload is not the expected JSON.
    MalformedStream,
    /// The server sent an error object inside the stream.
    StreamError,
    /// The stream completed without `usage` token counts.
    MissingUsage,
    /// The reply does not start with its own marker or carries a foreign one.
    CanaryFailure,
    /// The visible reply exceeded the capture cap, so the canary is unprovable.
    TruncatedCapture,
    /// Strict controlled output: word count not exact, or reply truncated.
    ControlledOutput,
    /// The server refused the request for load (HTTP 429 or 503): not a
    /// server error, and never retried (a retry changes the offered load).
    Rejected,
    /// No byte from the server for the cell's `idle-timeout`, before the
    /// response head or mid-stream.
    Stalled,
}

impl FailureClass {
    /// The reply arrived whole but breaks the measurement contract: the
    /// request counts as a successful response, not as performance-eligible.
    pub fn is_contract_violation(self) -> bool {
        matches!(
            self,
            Self::MissingUsage | Self::CanaryFailure | Self::TruncatedCapture | Self::ControlledOutput
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::HttpStatus => "http_status",
            Self::Timeout => "timeout",
            Self::Connect => "connect",
            Self::Disconnect => "disconnect",
            Self::MalformedStream => "malformed_stream",
            Self::StreamError => "stream_error",
            Self::MissingUsage => "missing_usage",
            Self::CanaryFailure => "canary_failure",
            Self::TruncatedCapture => "truncated_capture",
            Self::ControlledOutput => "controlled_output",
            Self::Rejected => "rejected",
            Self::Stalled => "stalled",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub class: FailureClass,
    pub detail: String,
}
