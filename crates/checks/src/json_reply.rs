//! "The reply is exactly one JSON value": nothing before it, nothing after
//! it but whitespace, and no reasoning markup leaked into it anywhere.

use serde_json::Value;

use crate::text::quote;

/// Reasoning markup that must never reach structured output, even inside
/// a string value: it means the server's reasoning parser split the reply wrong.
const LEAKED_MARKUP: &[&str] = &["</think>", "<think>"];

/// Why a reply is not exactly one JSON value; `quoted` is the start of
/// the offending text, quoted for the evidence.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotOneValue {
    #[error("reply contains `{tag}` at byte {at}: {quoted}")]
    LeakedMarkup { tag: &'static str, at: usize, quoted: String },
    #[error("reply is empty")]
    Empty,
    #[error("reply does not start with a JSON value ({reason}): {quoted}")]
    NoValue { reason: String, quoted: String },
    #[error("a second JSON value follows the first: {quoted}")]
    SecondValue { quoted: String },
    #[error("text follows the JSON value: {quoted}")]
    TextAfter { quoted: String },
}

/// The single JSON value `text` holds, or why it does not hold exactly one.
pub fn exactly_one_json_value(text: &str) -> Result<Value, NotOneValue> {
    if let Some(tag) = LEAKED_MARKUP.iter().find(|tag| text.contains(**tag)) {
        let at = text.find(tag).unwrap_or(0);
        return Err(NotOneValue::LeakedMarkup { tag, at, quoted: quote(text, 120) });
    }
    let body = text.trim_start();
    if body.is_empty() {
        return Err(NotOneValue::Empty);
    }
    let mut values = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    let value = match values.next() {
        Some(Ok(value)) => value,
        Some(Err(error)) => {
            return Err(NotOneValue::NoValue { reason: error.to_string(), quoted: quote(body, 120) });
        }
        None => return Err(NotOneValue::Empty),
    };
    let rest = &body[values.byte_offset()..];
    if rest.trim().is_empty() {
        return Ok(value);
    }
    let followed_by_json =
        serde_json::Deserializer::from_str(rest).into_iter::<Value>().next().is_some_and(|v| v.is_ok());
    let quoted = quote(rest.trim_start(), 120);
    if followed_by_json {
        Err(NotOneValue::SecondValue { quoted })
    } else {
        Err(NotOneValue::TextAfter { quoted })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_one_value_with_surrounding_whitespace() {
        assert_eq!(exactly_one_json_value(" {\"a\": [1, 2]}\n").unwrap(), json!({"a": [1, 2]}));
        assert_eq!(exactly_one_json_value("3").unwrap(), json!(3));
    }

    #[test]
    fn rejects_everything_else() {
        let cases = [
            ("", "empty"),
            ("Sure! {\"a\":1}", "does not start with a JSON value"),
            ("{\"a\":1} hope this helps", "text follows"),
            ("{\"a\":1}{\"a\":1}", "second JSON value"),
            ("{\"a\":1}</think>{\"a\":1}", "`</think>`"),
            ("{\"a\":\"x</think>\"}", "`</think>`"),
            ("{\"a\":", "does not start with a JSON value"),
            ("```json\n{\"a\":1}\n```", "does not start with a JSON value"),
        ];
        for (text, why) in cases {
            let error = exactly_one_json_value(text).unwrap_err().to_string();
            assert!(error.contains(why), "{text:?}: {error}");
        }
    }
}
