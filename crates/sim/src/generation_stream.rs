//! Serving one generation request: draw its faults, plan the reply, hand
//! it to the engine, and turn the engine's per-step token counts into the
//! endpoint's bytes (streamed) or one JSON body (non-streamed).

use std::io;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::api_error::ApiError;
use crate::app_state::AppState;
use crate::chat_format::ChatFormat;
use crate::completions_format::CompletionsFormat;
use crate::engine::{EngineEvent, EngineJob};
use crate::faults::FaultDraw;
use crate::metrics::Metrics;
use crate::recorder::Recorder;
use crate::reply::{ReplyCursor, ReplyPlan};
use crate::request::{Endpoint, Generation};
use crate::responses_format::ResponsesFormat;
use crate::wire_format::{EVENT_STREAM, Usage, WireFormat};

/// Serve `generation` and return the HTTP response.
pub async fn respond(state: Arc<AppState>, generation: Generation) -> Response {
    let number = state.next_request_number();
    let faults = FaultDraw::draw(&state.profile.faults, generation.seed);
    let plan = ReplyPlan::build(&generation, &state.profile, &faults, state.answers.as_ref());
    let id = request_id(generation.endpoint, generation.seed, number);
    let mut recorder = Recorder::new(state.clone(), &id, &generation, plan.canary.clone(), faults.names());

    if let Some(status) = faults.http_status {
        recorder.set_outcome("http-error", status.as_u16());
        return ApiError::injected(status).into_response();
    }

    let (events_tx, events) = mpsc::unbounded_channel();
    let total_tokens = plan.total_tokens().max(1);
    let job = EngineJob {
        prompt: generation.prompt.clone(),
        output_tokens: total_tokens,
        seed: generation.seed,
        events: events_tx,
    };
    if state.engine.submit(job).is_err() {
        recorder.set_outcome("engine-stopped", 503);
        return ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "engine stopped".into(),
            param: None,
        }
        .into_response();
    }

    let created = unix_seconds();
    let format: Box<dyn WireFormat> = match generation.endpoint {
        Endpoint::Chat => Box::new(ChatFormat::new(id, created, &generation, &plan)),
        Endpoint::Completions => Box::new(CompletionsFormat::new(id, created, &generation)),
        Endpoint::Responses => Box::new(ResponsesFormat::new(id, created, &generation, &plan)),
    };
    let include_usage = generation.include_usage && !faults.missing_usage;
    let served = ServedRequest {
        format,
        cursor: ReplyCursor::default(),
        events,
        usage: Usage {
            prompt_tokens: generation.prompt.count,
            reasoning_tokens: plan.reasoning_tokens(),
            ..Usage::default()
        },
        plan,
        faults,
        include_usage,
        total_tokens,
        phase: Phase::Tokens,
        pending: None,
        recorder,
        metrics: state.metrics.clone(),
    };
    if generation.stream { served.stream_response() } else { served.whole_response().await }
}

fn request_id(endpoint: Endpoint, seed: u64, number: u64) -> String {
    let prefix = match endpoint {
        Endpoint::Chat => "chatcmpl-",
        Endpoint::Completions => "cmpl-",
        Endpoint::Responses => "resp_",
    };
    format!("{prefix}{seed:016x}{number:08x}")
}

fn unix_seconds() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Waiting events are batched into one write up to about this size.
const MAX_WRITE_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Tokens,
    Closing,
    Done,
}

/// One request between engine admission and its last byte.
struct ServedRequest {
    format: Box<dyn WireFormat>,
    plan: ReplyPlan,
    cursor: ReplyCursor,
    events: mpsc::UnboundedReceiver<EngineEvent>,
    usage: Usage,
    faults: FaultDraw,
    include_usage: bool,
    total_tokens: u32,
    phase: Phase,
    /// An event held back to start the next write (a fault fires there).
    pending: Option<EngineEvent>,
    recorder: Recorder,
    metrics: Arc<Metrics>,
}

impl ServedRequest {
    /// Mid-stream faults fire at the step that reaches half the reply.
    fn crosses_fault_point(&self, tokens_before: u32, tokens: u32) -> bool {
        let point = self.total_tokens.div_ceil(2);
        tokens_before < point && tokens_before + tokens >= point
    }

    fn receive(&mut self, event: EngineEvent) {
        self.usage.completion_tokens += event.tokens;
        self.usage.cached_tokens = event.cached_tokens;
    }

    fn finish_accounting(&mut self) {
        let reason = self.plan.finish_reason;
        self.recorder.set_usage(&self.usage, reason.as_str());
        self.recorder.set_outcome("completed", 200);
        self.metrics.record_success(reason);
    }

    fn stream_response(self) -> Response {
        let body = futures_util::stream::unfold(self, |mut served| async move {
            let item = served.next_bytes().await?;
            Some((item, served))
        });
        Response::builder()
            .header(header::CONTENT_TYPE, EVENT_STREAM)
            .header(header::CACHE_CONTROL, "no-cache")
            .body(Body::from_stream(body))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
    }

    /// The next bytes of the stream: one event per engine step, then the
    /// closing events; an error ends the connection without `[DONE]`.
    /// Steps that are already waiting (the client or the runtime fell
    /// behind) go out together in one write, each still its own event.
    async fn next_bytes(&mut self) -> Option<Result<Bytes, io::Error>> {
        match self.phase {
            Phase::Done => return None,
            Phase::Closing => {
                let mut out = Vec::with_capacity(512);
                let usage = self.include_usage.then_some(&self.usage);
                self.format.closing(&mut out, &self.plan, usage);
                self.phase = Phase::Done;
                self.recorder.wrote(out.len(), 0);
                self.finish_accounting();
                return Some(Ok(Bytes::from(out)));
            }
            Phase::Tokens => {}
        }
        let mut out = Vec::with_capacity(256);
        loop {
            let event = match self.pending.take() {
                Some(event) => event,
                None if out.is_empty() => match self.events.recv().await {
                    Some(event) => event,
                    None => {
                        self.recorder.set_outcome("engine-stopped", 200);
                        self.phase = Phase::Done;
                        return Some(Err(io::Error::other("simulated engine stopped")));
                    }
                },
                None => match self.events.try_recv() {
                    Ok(event) => event,
                    Err(_) => break,
                },
            };
            let tokens_before = self.usage.completion_tokens;
            let at_fault_point = self.crosses_fault_point(tokens_before, event.tokens);
            if at_fault_point && !out.is_empty() {
                // Send what is ready first; the fault hits the next write.
                self.pending = Some(event);
                break;
            }
            self.receive(event);
            let last = self.usage.completion_tokens >= self.total_tokens;
            let delta = self.cursor.take(&self.plan, event.tokens as usize);
            let opening = tokens_before == 0;
            if delta.is_empty() && !opening && !last {
                // Tokens with nothing to show yet (a tool name in progress).
                continue;
            }
            let event_start = out.len();
            if opening {
                self.format.opening(&mut out);
            }
            if at_fault_point {
                if self.faults.disconnect {
                    self.recorder.set_outcome("disconnected", 200);
                    self.phase = Phase::Done;
                    return Some(Err(io::Error::other("anvil-sim injected fault: disconnect")));
                }
                if let Some(stall) = self.faults.stall {
                    tokio::time::sleep(stall).await;
                }
                if self.faults.malformed_sse {
                    self.format.malformed(&mut out);
                }
            }
            let finish = last.then_some(self.plan.finish_reason);
            self.format.delta(&mut out, &delta, finish);
            self.recorder.wrote(out.len() - event_start, event.tokens);
            if last {
                self.phase = Phase::Closing;
                break;
            }
            if out.len() >= MAX_WRITE_BYTES {
                break;
            }
        }
        Some(Ok(Bytes::from(out)))
    }

    async fn whole_response(mut self) -> Response {
        while self.usage.completion_tokens < self.total_tokens {
            match self.events.recv().await {
                Some(event) => self.receive(event),
                None => {
                    self.recorder.set_outcome("engine-stopped", 503);
                    return ApiError {
                        status: StatusCode::SERVICE_UNAVAILABLE,
                        message: "engine stopped".into(),
                        param: None,
                    }
                    .into_response();
                }
            }
        }
        if let Some(stall) = self.faults.stall {
            tokio::time::sleep(stall).await;
        }
        let usage = self.include_usage_whole().then_some(&self.usage);
        let mut body = self.format.full_response(&self.plan, usage).to_string().into_bytes();
        if self.faults.malformed_sse {
            body.truncate(body.len() / 2);
        }
        self.recorder.wrote(body.len(), self.usage.completion_tokens);
        if self.faults.disconnect {
            self.recorder.set_outcome("disconnected", 200);
            let failing = futures_util::stream::once(async {
                Err::<Bytes, _>(io::Error::other("anvil-sim injected fault: disconnect"))
            });
            return Response::builder()
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from_stream(failing))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response());
        }
        self.finish_accounting();
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    }

    /// Non-streaming responses always carry usage unless the fault drops it.
    fn include_usage_whole(&self) -> bool {
        !self.faults.missing_usage
    }
}
