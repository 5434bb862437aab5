//! What a recipe's `check` node asks for, and where to send it.

use anvil_words::words;
use serde::{Deserialize, Serialize};

words! {
    #[serde]
    /// The kind of functional check, spelled in recipes as `type="json-schema"` etc.
    pub enum CheckType {
        /// A short non-streaming chat completion comes back whole, with usage.
        Smoke = "smoke",
        /// Strict structured output: the reply is exactly one JSON value valid for a schema.
        JsonSchema = "json-schema",
        /// The reply is one call of the offered tool with arguments valid for its parameters.
        ToolCall = "tool-call",
        /// The Responses API subset: non-streaming and streaming `/v1/responses`.
        Responses = "responses",
        /// Concurrent streams each carry only their own canary marker.
        CanaryIsolation = "canary-isolation",
    }
}

/// One check as the recipe declares it. Every field but `name`,
/// `check_type` and `model` has a default (see `CheckSpec::new`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    pub name: String,
    #[serde(rename = "type")]
    pub check_type: CheckType,
    pub model: String,
    /// The user prompt; `None` uses the type's default prompt.
    #[serde(default)]
    pub prompt: Option<String>,
    /// json-schema: the schema the reply must satisfy (`None`: a small object schema).
    #[serde(default)]
    pub schema: Option<serde_json::Value>,
    /// tool-call: `{name, description, parameters}` (`None`: a get_weather tool).
    #[serde(default)]
    pub tool: Option<serde_json::Value>,
    /// tool-call: `"auto"` (default: exercises the server's tool parser),
    /// `"required"`, or a tool name to force.
    #[serde(default)]
    pub tool_choice: Option<String>,
    /// Attempts; every one must pass. canary-isolation: rounds of `concurrency` streams.
    #[serde(default = "defaults::requests")]
    pub requests: u32,
    /// canary-isolation: streams open at the same time in each round.
    #[serde(default = "defaults::concurrency")]
    pub concurrency: u32,
    #[serde(default = "defaults::max_tokens")]
    pub max_tokens: u32,
    /// `Some(on)` sends `chat_template_kwargs.enable_thinking` (chat) or a
    /// reasoning effort (responses); `None` leaves the server's default.
    #[serde(default)]
    pub thinking: Option<bool>,
    /// Limit for one request, from sending to the last byte.
    #[serde(default = "defaults::timeout_ms")]
    pub timeout_ms: u64,
    /// tool-call: every attempt's prompt starts with the same system text of
    /// about this many tokens, so later attempts hit the prefix cache.
    #[serde(default)]
    pub shared_prefix_tokens: u64,
    /// Request `seed`s are `seed + attempt`; canary markers carry it.
    #[serde(default)]
    pub seed: u64,
}

mod defaults {
    pub fn requests() -> u32 {
        3
    }
    pub fn concurrency() -> u32 {
        8
    }
    pub fn max_tokens() -> u32 {
        512
    }
    pub fn timeout_ms() -> u64 {
        60_000
    }
}

impl CheckSpec {
    /// A check with every optional setting at its default.
    pub fn new(name: impl Into<String>, check_type: CheckType, model: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            check_type,
            model: model.into(),
            prompt: None,
            schema: None,
            tool: None,
            tool_choice: None,
            requests: defaults::requests(),
            concurrency: defaults::concurrency(),
            max_tokens: defaults::max_tokens(),
            thinking: None,
            timeout_ms: defaults::timeout_ms(),
            shared_prefix_tokens: 0,
            seed: 0,
        }
    }
}

/// The server a check talks to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// `http://host:port` (a trailing `/` or `/v1` is accepted).
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when set.
    #[serde(default)]
    pub api_key: Option<String>,
    /// How to trust an https server (plain http ignores it).
    #[serde(default)]
    pub tls: anvil_net::TlsSettings,
}

impl Target {
    pub fn new(base_url: impl Into<String>) -> Self {
        Self { base_url: base_url.into(), api_key: None, tls: anvil_net::TlsSettings::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_round_trip() {
        for (&check_type, &name) in CheckType::ALL.iter().zip(CheckType::WORDS) {
            assert_eq!(CheckType::from_word(name), Some(check_type));
            assert_eq!(check_type.to_string(), name);
            assert_eq!(serde_json::to_value(check_type).unwrap(), serde_json::json!(name));
            assert_eq!(serde_json::from_value::<CheckType>(serde_json::json!(name)).unwrap(), check_type);
        }
        assert_eq!(CheckType::from_word("json_schema"), None);
        let error = serde_json::from_value::<CheckType>(serde_json::json!("json_schema")).unwrap_err();
        assert!(error.to_string().contains("json-schema"), "{error}");
    }

    #[test]
    fn spec_defaults_from_json() {
        let spec: CheckSpec =
            serde_json::from_value(serde_json::json!({"name": "c", "type": "tool-call", "model": "m"}))
                .unwrap();
        assert_eq!(spec, CheckSpec::new("c", CheckType::ToolCall, "m"));
        assert!(
            serde_json::from_value::<CheckSpec>(
                serde_json::json!({"name": "c", "type": "smoke", "model": "m", "reqests": 2})
            )
            .is_err()
        );
    }
}
