//! What a recipe's `check` node asks for, and where to send it.

use serde::{Deserialize, Serialize};

/// The kind of functional check, spelled in recipes as `type="json-schema"` etc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckType {
    /// A short non-streaming chat completion comes back whole, with usage.
    Smoke,
    /// Strict structured output: the reply is exactly one JSON value valid for a schema.
    JsonSchema,
    /// The reply is one call of the offered tool with arguments valid for its parameters.
    ToolCall,
    /// The Responses API subset: non-streaming and streaming `/v1/responses`.
    Responses,
    /// Concurrent streams each carry only their own canary marker.
    CanaryIsolation,
}

impl CheckType {
    /// Every type with its recipe spelling, for parsing and "did you mean".
    pub const ALL: [(CheckType, &'static str); 5] = [
        (CheckType::Smoke, "smoke"),
        (CheckType::JsonSchema, "json-schema"),
        (CheckType::ToolCall, "tool-call"),
        (CheckType::Responses, "responses"),
        (CheckType::CanaryIsolation, "canary-isolation"),
    ];

    /// The recipe spelling (`"json-schema"`).
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(t, _)| *t == self).map_or("smoke", |(_, name)| name)
    }
}

impl std::fmt::Display for CheckType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for CheckType {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL.iter().find(|(_, name)| *name == text).map(|(t, _)| *t).ok_or_else(|| {
            let known: Vec<&str> = Self::ALL.iter().map(|(_, name)| *name).collect();
            format!("unknown check type `{text}`; known types: {}", known.join(", "))
        })
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
        for (check_type, name) in CheckType::ALL {
            assert_eq!(name.parse::<CheckType>(), Ok(check_type));
            assert_eq!(check_type.to_string(), name);
            assert_eq!(serde_json::to_value(check_type).unwrap(), serde_json::json!(name));
        }
        assert!("json_schema".parse::<CheckType>().unwrap_err().contains("json-schema"));
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
