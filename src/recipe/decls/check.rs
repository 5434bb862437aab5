//! `check`: a functional check of a server (smoke, strict JSON schema, tool
//! calls, Responses API subset, canary isolation).

use std::time::Duration;

use serde_json::Value;

use super::super::settings::{Draft, settings};
use crate::step_kind::Kind;
use crate::words::{CheckType, ThinkingMode};

settings! {
    #[derive(Debug, Clone)]
    pub struct CheckDecl {
        pub server: String = required "server" as Ref(Kind::Server) or String::new(),
        /// A missing or unknown type is a reported problem; the recipe is refused.
        pub check_type: CheckType = required "type" as Word(CheckType) or CheckType::Smoke,
        pub prompt: Option<String> = "prompt" as Str,
        pub schema: Option<Value> = "schema" as Block,
        pub tool: Option<Value> = "tool" as Block,
        pub requests: Option<u64> = "requests" as Int,
        pub concurrency: Option<u64> = "concurrency" as Int,
        pub max_tokens: Option<u64> = "max-tokens" as Int,
        pub thinking: ThinkingMode = "thinking" as Word(ThinkingMode) or ThinkingMode::Default,
        pub timeout: Option<Duration> = "timeout" as Duration,
        pub shared_prefix_tokens: u64 = "shared-prefix-tokens" as Int or 0,
        /// A failed non-blocking check is recorded without failing the run.
        pub blocking: bool = unhashed "blocking" as Bool or true,
    }
}

pub(super) fn build(draft: &Draft) -> CheckDecl {
    CheckDecl::from_settings(&draft.settings)
}
