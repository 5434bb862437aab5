//! OpenAI-style error responses: `{"error":{"message","type","param","code"}}`
//! with the HTTP status in `code`, as vLLM sends them.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub param: Option<&'static str>,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, message: message.into(), param: None }
    }

    pub fn bad_param(param: &'static str, message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, message: message.into(), param: Some(param) }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self { status: StatusCode::NOT_FOUND, message: message.into(), param: None }
    }

    /// The waiting queue is full (`max-queue`): the request is turned away
    /// at once, as an overloaded server does, instead of queueing.
    pub fn overloaded(status: StatusCode, limit: u64) -> Self {
        Self {
            status,
            message: format!("anvil-sim is overloaded: {limit} requests already wait (max-queue {limit})"),
            param: None,
        }
    }

    /// A failure injected by a fault setting.
    pub fn injected(status: StatusCode) -> Self {
        Self { status, message: format!("anvil-sim injected fault: HTTP {}", status.as_u16()), param: None }
    }

    fn error_type(&self) -> &'static str {
        match self.status {
            StatusCode::BAD_REQUEST => "invalid_request_error",
            StatusCode::NOT_FOUND => "not_found_error",
            StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
            StatusCode::SERVICE_UNAVAILABLE => "service_unavailable_error",
            _ => "server_error",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({
            "error": {
                "message": self.message,
                "type": self.error_type(),
                "param": self.param,
                "code": self.status.as_u16(),
            }
        });
        (self.status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
    }
}
