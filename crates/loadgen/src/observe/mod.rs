//! What is observed: the bytes of each streamed response as they arrive
//! (SSE events, the JSON of each chunk) and the per-request record derived
//! from them.

pub(crate) mod chunk;
pub(crate) mod failure;
pub(crate) mod json_scan;
pub(crate) mod precision;
#[cfg(test)]
pub(crate) mod proptests;
#[doc(hidden)]
pub mod queue_model;
pub(crate) mod read_times;
pub(crate) mod record;
pub mod saturation;
pub mod sse;
pub(crate) mod stream;
