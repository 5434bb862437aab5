//! What the client saw of one streamed response, stamped on the monotonic
//! clock when the bytes arrived.

use std::time::Instant;

use crate::observe::chunk::{Draft, Usage, parse_event};
use crate::observe::failure::FailureClass;
use crate::observe::read_times::{ReadTimes, Stamp};
use crate::observe::sse::SseEvent;
use crate::workload::spec::Api;

/// Visible reply text kept per request for canaries and word counts.
pub const CAPTURE_CAP_CHARS: usize = 8192;

#[derive(Debug)]
pub struct StreamObservation {
    pub api: Api,
    /// Just before the request was handed to the HTTP client.
    pub start: Instant,
    /// The same moment on the wall clock (ns since the Unix epoch), so the
    /// timings can be lined up with another process's records.
    pub start_unix_ns: u64,
    pub http_status: Option<u16>,
    pub first_output: Option<Instant>,
    pub first_content: Option<Instant>,
    /// When the client read the bytes holding the first content (it may
    /// read them later than they arrived, when it is busy).
    pub first_content_read: Option<Instant>,
    /// The first content and the next output event came in one read: the
    /// kernel keeps only the newest bytes' stamp, so the first content's
    /// arrival (and ttft) may be late by up to the gap between them.
    pub first_content_shared_read: bool,
    /// The read being parsed now.
    current_read: Option<Instant>,
    last_output: Option<Instant>,
    /// Arrival of the event that completed the stream (or of the last bytes).
    pub end: Option<Instant>,
    pub content_chunks: u32,
    pub reasoning_chunks: u32,
    /// Gaps between consecutive output-bearing events, in microseconds.
    pub gaps_us: Vec<u32>,
    pub usage: Option<Usage>,
    /// The response's own id (the first event's `id`).
    pub response_id: Option<String>,
    /// Drafted and accepted tokens, where the server reports them per request.
    pub draft: Option<Draft>,
    pub capture: String,
    capture_chars: usize,
    pub capture_truncated: bool,
    /// The output's token ids, where the server sent them with each chunk
    /// (vLLM's `return_token_ids`), up to the capture's length in ids.
    pub token_ids: Option<Vec<u32>>,
    /// The stream said it was complete (`[DONE]` / `response.completed`).
    pub done: bool,
    pub finish_reason: Option<String>,
    /// The first thing that went wrong, if anything.
    pub failure: Option<(FailureClass, String)>,
    /// 1 when the request was re-sent because its pooled connection turned
    /// out to be closed before any byte came back.
    pub stale_connection_retries: u32,
    /// Reads of the response, and how many of them the kernel timestamped.
    pub reads: u32,
    pub kernel_stamped_reads: u32,
    /// The connection that carried the request (its endpoint's id for it).
    pub connection_id: u64,
    /// How long opening the connection took, when it was opened for this
    /// request (`None`: an open connection was reused).
    pub connect_time: Option<std::time::Duration>,
}

impl StreamObservation {
    pub fn new(api: Api, start: Instant, start_unix_ns: u64) -> Self {
        Self {
            api,
            start,
            start_unix_ns,
            http_status: None,
            first_output: None,
            first_content: None,
            first_content_shared_read: false,
            first_content_read: None,
            current_read: None,
            last_output: None,
            end: None,
            content_chunks: 0,
            reasoning_chunks: 0,
            gaps_us: Vec::with_capacity(256),
            usage: None,
            response_id: None,
            draft: None,
            capture: String::new(),
            capture_chars: 0,
            capture_truncated: false,
            token_ids: None,
            done: false,
            finish_reason: None,
            failure: None,
            stale_connection_retries: 0,
            reads: 0,
            kernel_stamped_reads: 0,
            connection_id: 0,
            connect_time: None,
        }
    }

    /// Notes one read of the response: which clock stamped it, and when it
    /// was read (for the events it carries).
    pub fn note_read(&mut self, times: ReadTimes) {
        self.reads += 1;
        self.kernel_stamped_reads += u32::from(times.stamp == Stamp::Kernel);
        self.current_read = Some(times.read);
    }

    /// Records the first failure; later ones are consequences of it.
    pub fn fail(&mut self, class: FailureClass, detail: impl Into<String>) {
        if self.failure.is_none() {
            self.failure = Some((class, detail.into()));
        }
    }

    /// Handles one SSE event whose bytes arrived at `at`.
    pub fn on_event(&mut self, event: SseEvent<'_>, at: Instant) {
        if self.done {
            return; // nothing after the end marker counts
        }
        let view = match parse_event(self.api, event.event, event.data) {
            Ok(view) => view,
            Err(e) => {
                let shown = &event.data[..event.data.len().min(200)];
                self.fail(FailureClass::MalformedStream, format!("{e}: {}", String::from_utf8_lossy(shown)));
                return;
            }
        };
        if let Some(error) = view.error {
            self.fail(FailureClass::StreamError, error);
        }
        let reasoning = view.reasoning.as_deref().is_some_and(|r| !r.is_empty());
        let content = view.content.as_deref().filter(|c| !c.is_empty());
        if reasoning {
            self.reasoning_chunks += 1;
        }
        if let Some(text) = content {
            self.content_chunks += 1;
            if self.first_content.is_none() {
                self.first_content = Some(at);
                self.first_content_read = self.current_read.or(Some(at));
            }
            self.capture_text(text);
        }
        if reasoning || content.is_some() {
            self.first_output.get_or_insert(at);
            if let Some(prev) = self.last_output {
                if Some(prev) == self.first_content && prev == at {
                    self.first_content_shared_read = true;
                }
                let gap = at.duration_since(prev).as_micros();
                self.gaps_us.push(u32::try_from(gap).unwrap_or(u32::MAX));
            }
            self.last_output = Some(at);
        }
        if let Some(usage) = view.usage {
            self.usage = Some(usage);
        }
        if self.response_id.is_none()
            && let Some(id) = view.id
        {
            self.response_id = Some(id.into_owned());
        }
        if view.draft.is_some() {
            self.draft = view.draft;
        }
        if let Some(ids) = view.token_ids.and_then(crate::observe::chunk::token_ids) {
            let kept = self.token_ids.get_or_insert_with(Vec::new);
            let room = CAPTURE_CAP_CHARS.saturating_sub(kept.len());
            kept.extend(ids.into_iter().take(room));
        }
        if let Some(reason) = view.finish_reason {
            self.finish_reason = Some(reason.into_owned());
        }
        if view.done {
            self.done = true;
            self.end = Some(at);
        }
    }

    fn capture_text(&mut self, text: &str) {
        if self.capture_truncated {
            return;
        }
        let room = CAPTURE_CAP_CHARS - self.capture_chars;
        let chars = text.chars().count();
        if chars <= room {
            self.capture.push_str(text);
            self.capture_chars += chars;
        } else {
            let cut = text.char_indices().nth(room).map_or(text.len(), |(i, _)| i);
            self.capture.push_str(&text[..cut]);
            self.capture_chars = CAPTURE_CAP_CHARS;
            self.capture_truncated = true;
        }
    }
}
