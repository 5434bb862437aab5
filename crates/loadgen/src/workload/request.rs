//! One request as planned: what it sends (a prompt or a conversation) and
//! where it came from, for its record.

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: &'static str,
    pub text: String,
}

/// What a request sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// One user prompt.
    Prompt(String),
    /// A whole conversation (chat API), the last message the user's.
    Messages(Vec<Message>),
}

/// Where a request came from, for its record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Origin {
    /// 1-based line of the trace file.
    pub trace_line: Option<u64>,
    /// 0-based entry of the dataset file.
    pub dataset_entry: Option<u64>,
    pub session: Option<u64>,
    /// 0-based turn within its session.
    pub turn: Option<u32>,
    /// The output length the trace or dataset asks for.
    pub requested_output_tokens: Option<u64>,
    /// Prompt length the trace or dataset line names (tokens).
    pub planned_input_tokens: Option<u64>,
    /// The prompt tokens an unbounded prefix cache would hold when the
    /// request arrives, as the workload implies (a trace's hash ids).
    pub ideal_cached_tokens: Option<u64>,
}

/// One request, ready to send.
#[derive(Debug, Clone)]
pub struct Planned {
    pub content: Content,
    pub max_tokens: u32,
    pub ignore_eos: bool,
    pub origin: Origin,
    /// The content's tokens, when they are exact (built from the model's
    /// own one-token words): the server must then count this many plus its
    /// chat template's.
    pub exact_tokens: Option<u64>,
}
