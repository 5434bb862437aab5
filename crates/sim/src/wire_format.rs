//! What each endpoint's responses look like on the wire. The streaming
//! loop (`generation_stream`) is shared; the bytes come from one
//! `WireFormat` per endpoint.

use serde_json::Value;

use crate::reply::{Delta, FinishReason, ReplyPlan};

/// Token counts reported to the client.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub cached_tokens: u32,
    pub reasoning_tokens: u32,
}

/// `text/event-stream` as vLLM sends it.
pub const EVENT_STREAM: &str = "text/event-stream; charset=utf-8";

pub trait WireFormat: Send + 'static {
    /// Events sent before the first token (role chunk, response.created).
    fn opening(&mut self, out: &mut Vec<u8>);
    /// One event for one step's tokens; `finish` is set on the last one.
    fn delta(&mut self, out: &mut Vec<u8>, delta: &Delta<'_>, finish: Option<FinishReason>);
    /// Events after the last token (usage chunk, `[DONE]`, response.completed).
    fn closing(&mut self, out: &mut Vec<u8>, plan: &ReplyPlan, usage: Option<&Usage>);
    /// A broken event, for the malformed-SSE fault.
    fn malformed(&mut self, out: &mut Vec<u8>);
    /// The whole response of a non-streaming request.
    fn full_response(&self, plan: &ReplyPlan, usage: Option<&Usage>) -> Value;
}
