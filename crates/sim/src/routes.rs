//! The HTTP surface: OpenAI-compatible endpoints, health, metrics, ground
//! truth. Every response carries `x-anvil-simulated: true`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde_json::json;

use crate::api_error::ApiError;
use crate::app_state::AppState;
use crate::generation_stream::respond;
use crate::request::{SimProfileParser, parse_chat, parse_completion, parse_responses};

/// Long-context prompts are megabytes of JSON; axum's 2 MB default is too small.
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/completions", post(completions))
        .route("/v1/responses", post(responses))
        .route("/v1/models", get(models))
        .route("/tokenize", post(tokenize))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/debug/ground-truth", get(ground_truth))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::map_response(label_simulated))
        .with_state(state)
}

async fn label_simulated(mut response: Response) -> Response {
    response.headers_mut().insert("x-anvil-simulated", HeaderValue::from_static("true"));
    response
}

async fn generate(state: Arc<AppState>, body: &[u8], parse: SimProfileParser) -> Response {
    if let Some(limit) = state.profile.max_queue
        && state.engine.waiting() >= limit
    {
        let status =
            StatusCode::from_u16(state.profile.overload_status).unwrap_or(StatusCode::TOO_MANY_REQUESTS);
        return ApiError::overloaded(status, limit).into_response();
    }
    match parse(body, &state.profile) {
        Ok(generation) => respond(state, generation).await,
        Err(error) => error.into_response(),
    }
}

async fn chat_completions(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(state, &body, parse_chat).await
}

async fn completions(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(state, &body, parse_completion).await
}

async fn responses(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(state, &body, parse_responses).await
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{
            "id": state.model_name(),
            "object": "model",
            "created": 0,
            "owned_by": "anvil-sim",
            "root": state.model_name(),
            "parent": null,
            "max_model_len": state.profile.max_model_len,
        }],
    }))
    .into_response()
}

/// The sim's tokenizer as an endpoint, in llama.cpp's shape (`content`)
/// and vLLM's (`prompt`): `{"tokens": [ids]}`. An id names a token's text
/// (the whitespace before it included), so equal pieces have equal ids.
async fn tokenize(body: Bytes) -> Response {
    let request: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return ApiError::bad_request(format!("tokenize: {e}")).into_response(),
    };
    let Some(text) = request.get("content").or_else(|| request.get("prompt")).and_then(|t| t.as_str()) else {
        return ApiError::bad_request("tokenize: needs a `content` (or `prompt`) string").into_response();
    };
    let tokens = crate::tokenizer::token_ids(text);
    axum::Json(json!({ "tokens": tokens, "count": tokens.len() })).into_response()
}

async fn health() -> Response {
    axum::http::StatusCode::OK.into_response()
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let text = state.metrics.render(state.model_name());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

/// `GET /debug/ground-truth[?clear=1]`: every finished request's timings.
async fn ground_truth(
    State(state): State<Arc<AppState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let clear = query.get("clear").is_some_and(|v| v == "1" || v == "true");
    axum::Json(state.ground_truth.snapshot(clear)).into_response()
}

async fn not_found(uri: axum::http::Uri) -> Response {
    ApiError::not_found(format!("no route for {}", uri.path())).into_response()
}
