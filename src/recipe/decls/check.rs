//! `check`: a functional check of a server (smoke, strict JSON schema, tool
//! calls, Responses API subset, canary isolation).

use std::time::Duration;

use serde_json::Value;

use super::super::decl::Draft;
use super::super::kind::Kind;
use super::super::schema::{FieldSpec, Shape, field, required};
use super::super::words::{CheckType, Thinking};

pub const FIELDS: &[FieldSpec] = &[
    required("server", Shape::Ref(Kind::Server)),
    required("type", Shape::OneOf(CheckType::WORDS)),
    field("prompt", Shape::Str),
    field("schema", Shape::Block),
    field("tool", Shape::Block),
    field("requests", Shape::Int),
    field("concurrency", Shape::Int),
    field("max-tokens", Shape::Int),
    field("thinking", Shape::OneOf(Thinking::WORDS)),
    field("timeout", Shape::Duration),
    field("shared-prefix-tokens", Shape::Int),
    FieldSpec { name: "blocking", shape: Shape::Bool, required: false, hashed: false, accumulates: false },
];

#[derive(Debug, Clone)]
pub struct CheckDecl {
    pub server: String,
    pub check_type: CheckType,
    pub prompt: Option<String>,
    pub schema: Option<Value>,
    pub tool: Option<Value>,
    pub requests: Option<u64>,
    pub concurrency: Option<u64>,
    pub max_tokens: Option<u64>,
    pub thinking: Thinking,
    pub timeout: Option<Duration>,
    pub shared_prefix_tokens: u64,
    /// A failed non-blocking check is recorded without failing the run.
    pub blocking: bool,
}

pub(super) fn build(draft: &Draft) -> CheckDecl {
    let s = &draft.settings;
    CheckDecl {
        server: s.string("server").unwrap_or_default(),
        // A missing or unknown type is a reported problem; the recipe is refused.
        check_type: s.str("type").and_then(CheckType::from_word).unwrap_or(CheckType::Smoke),
        prompt: s.string("prompt"),
        schema: s.get("schema").cloned(),
        tool: s.get("tool").cloned(),
        requests: s.u64("requests"),
        concurrency: s.u64("concurrency"),
        max_tokens: s.u64("max-tokens"),
        thinking: s.str("thinking").and_then(Thinking::from_word).unwrap_or(Thinking::Default),
        timeout: s.duration("timeout"),
        shared_prefix_tokens: s.u64("shared-prefix-tokens").unwrap_or(0),
        blocking: s.bool("blocking").unwrap_or(true),
    }
}
