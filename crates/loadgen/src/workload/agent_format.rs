//! The layouts an agent trace file may have, and the keys each reads: a
//! leaf module, so the traffic spec and the reader both name the format
//! without importing each other.

use anvil_words::words;

words! {
    #[serde]
    /// The layout of an agent trace file.
    pub enum AgentTraceFormat {
        /// anvil's own: one call per line, `task`, `call`, `parents`, `delay_ms`.
        Jsonl = "jsonl",
        /// Dynamo's Agentic Mooncake rows: `request_id`, `wait_for`, `delay`,
        /// `tool_wait_ms` over Mooncake's `hash_ids` and lengths.
        AgenticMooncake = "agentic-mooncake",
    }
}

impl AgentTraceFormat {
    /// The keys a line reads (any other is warned about and ignored).
    pub fn known_keys(self) -> &'static [&'static str] {
        match self {
            AgentTraceFormat::Jsonl => JSONL_KEYS,
            AgentTraceFormat::AgenticMooncake => AGENTIC_MOONCAKE_KEYS,
        }
    }

    /// The key that names a call's parents.
    pub(crate) fn parents_key(self) -> &'static str {
        match self {
            AgentTraceFormat::Jsonl => "parents",
            AgentTraceFormat::AgenticMooncake => "wait_for",
        }
    }
}

/// The keys of anvil's layout.
pub(crate) const JSONL_KEYS: &[&str] = &[
    "task",
    "call",
    "parents",
    "delay_ms",
    "input_tokens",
    "hash_ids",
    "inherit",
    "prompt",
    "output_tokens",
    "deadline_ms",
    "arrival_ms",
];

/// The keys of an Agentic Mooncake row (the aliases its reader accepts
/// included). `session_id`, `branches`, `prefix_reset` and `tool_events`
/// are known and not read: they describe the capture, not the schedule.
pub(crate) const AGENTIC_MOONCAKE_KEYS: &[&str] = &[
    "request_id",
    "session_id",
    "input_length",
    "input_tokens",
    "output_length",
    "output_tokens",
    "hash_ids",
    "timestamp",
    "created_time",
    "delay",
    "delay_ms",
    "wait_for",
    "tool_wait_ms",
    "branches",
    "prefix_reset",
    "tool_events",
];
