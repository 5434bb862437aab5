//! Collects one request's ground truth while it is served, and files it
//! when the request ends, however it ends (the `Drop` catches clients
//! that hang up mid-stream).

use std::sync::Arc;

use crate::app_state::AppState;
use crate::ground_truth::{ChunkRecord, GroundTruthRecord, Stamp};
use crate::request::Generation;
use crate::wire_format::Usage;

pub struct Recorder {
    state: Arc<AppState>,
    /// `None` when ground truth is off (only the request count is kept).
    record: Option<GroundTruthRecord>,
}

impl Recorder {
    pub fn new(
        state: Arc<AppState>,
        request_id: &str,
        generation: &Generation,
        canary: Option<String>,
        faults: Vec<&'static str>,
    ) -> Self {
        let record = state.ground_truth.is_enabled().then(|| GroundTruthRecord {
            request_id: request_id.to_owned(),
            endpoint: generation.endpoint.path(),
            canary,
            stream: generation.stream,
            received: state.ground_truth.now(),
            first_byte: None,
            last_byte: None,
            chunks: Vec::new(),
            prompt_tokens: generation.prompt.count,
            cached_tokens: 0,
            completion_tokens: 0,
            finish_reason: None,
            faults,
            outcome: "client-gone",
            http_status: 200,
        });
        Self { state, record }
    }

    /// Bytes of `len` carrying `tokens` tokens are being written now.
    pub fn wrote(&mut self, len: usize, tokens: u32) {
        let Some(record) = &mut self.record else { return };
        let at: Stamp = self.state.ground_truth.now();
        record.first_byte.get_or_insert(at);
        record.last_byte = Some(at);
        record.chunks.push(ChunkRecord { at, tokens, bytes: len });
    }

    pub fn set_usage(&mut self, usage: &Usage, finish_reason: &'static str) {
        if let Some(record) = &mut self.record {
            record.cached_tokens = usage.cached_tokens;
            record.completion_tokens = usage.completion_tokens;
            record.finish_reason = Some(finish_reason);
        }
    }

    pub fn set_outcome(&mut self, outcome: &'static str, http_status: u16) {
        if let Some(record) = &mut self.record {
            record.outcome = outcome;
            record.http_status = http_status;
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            self.state.ground_truth.push(record);
        }
        self.state.request_finished();
    }
}
