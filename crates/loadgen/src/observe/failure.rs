//! Why a request failed or is excluded from the performance distributions:
//! what the HTTP client, the stream observation and the record all name.

use anvil_words::words;
use serde::{Deserialize, Serialize};

words! {
    #[serde]
    /// Why a request is excluded from the performance distributions.
    pub enum FailureClass {
        /// Non-2xx HTTP status.
        HttpStatus = "http_status",
        /// `request_timeout_ms` elapsed before the stream ended.
        Timeout = "timeout",
        /// Could not connect at all.
        Connect = "connect",
        /// The connection broke or the stream ended without its end marker.
        Disconnect = "disconnect",
        /// An event whose payload is not the expected JSON.
        MalformedStream = "malformed_stream",
        /// The server sent an error object inside the stream.
        StreamError = "stream_error",
        /// The stream completed without `usage` token counts.
        MissingUsage = "missing_usage",
        /// The reply does not start with its own marker or carries a foreign one.
        CanaryFailure = "canary_failure",
        /// The visible reply exceeded the capture cap, so the canary is unprovable.
        TruncatedCapture = "truncated_capture",
        /// Strict controlled output: word count not exact, or reply truncated.
        ControlledOutput = "controlled_output",
        /// The server refused the request for load (HTTP 429 or 503): not a
        /// server error, and never retried (a retry changes the offered load).
        Rejected = "rejected",
        /// No byte from the server for the cell's `idle-timeout`, before the
        /// response head or mid-stream.
        Stalled = "stalled",
    }
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
}

/// One failed request as a failed cell's evidence counts it: which request,
/// the status it got, and its failure.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedRequest {
    pub request_index: u64,
    pub http_status: Option<u16>,
    pub failure: Failure,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub class: FailureClass,
    pub detail: String,
}
