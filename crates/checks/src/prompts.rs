//! Default prompts, schema and tool, and the long shared system text of
//! the prefix-cache variant of the tool-call check.

use serde_json::{Value, json};

use crate::spec::CheckType;

/// The user prompt a check sends when the recipe gives none.
pub fn default_prompt(check_type: CheckType) -> &'static str {
    match check_type {
        CheckType::Smoke => "In about 10 words, say what the capital of France is.",
        CheckType::JsonSchema => {
            "Describe one city as a JSON object that matches the given schema. Reply with the JSON only."
        }
        CheckType::ToolCall => "What is the weather in Paris right now? Use the tool to find out.",
        CheckType::Responses => "Write about 20 words on why benchmarks should be reproducible.",
        CheckType::CanaryIsolation => "Then write about 40 words on load testing.",
    }
}

/// A small strict object schema.
pub fn default_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "country": {"type": "string"},
            "population": {"type": "integer", "minimum": 0}
        },
        "required": ["city", "country", "population"],
        "additionalProperties": false
    })
}

/// A get_weather tool.
pub fn default_tool() -> Value {
    json!({
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["city"],
            "additionalProperties": false
        }
    })
}

/// Short common words: about one token each under most tokenizers.
const PREFIX_WORDS: &[&str] = &[
    "the", "load", "test", "runs", "each", "node", "once", "and", "keeps", "its", "result", "for", "later",
    "use", "when", "inputs", "stay", "same", "so", "cache", "hits", "save", "time", "on", "every", "server",
];

/// A system text of about `tokens` tokens, identical for every attempt of
/// a check (it depends only on `tokens`), so attempts share a long prefix.
pub fn shared_prefix_text(tokens: u64) -> String {
    let intro = "You are a careful assistant. Background notes follow; they do not change the task.";
    let mut text = String::with_capacity(intro.len() + tokens as usize * 5);
    text.push_str(intro);
    for i in 0..tokens {
        text.push(' ');
        text.push_str(PREFIX_WORDS[(i % PREFIX_WORDS.len() as u64) as usize]);
        if i % 12 == 11 {
            text.push('.');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_is_stable_and_about_the_right_size() {
        assert_eq!(shared_prefix_text(500), shared_prefix_text(500));
        let words = shared_prefix_text(500).split_whitespace().count();
        assert!((500..530).contains(&words), "{words}");
    }
}
