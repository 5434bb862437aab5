//! json-schema: strict structured output. The reply content must be
//! exactly one JSON value, valid for the schema, with no reasoning markup.

use serde_json::{Value, json};

use super::{prompt_summary, send_chat};
use crate::chat::{CHAT_PATH, chat_body};
use crate::client::{ApiClient, CallError};
use crate::json_reply::exactly_one_json_value;
use crate::outcome::Attempt;
use crate::schema::CompiledSchema;
use crate::spec::CheckSpec;

/// Violations listed per failed attempt.
const MAX_VIOLATIONS: usize = 5;

pub async fn attempt(
    spec: &CheckSpec,
    client: &ApiClient,
    prompt: &str,
    schema: &Value,
    compiled: &CompiledSchema,
    index: u32,
) -> Result<Attempt, CallError> {
    let mut body = chat_body(spec, json!([{"role": "user", "content": prompt}]), index);
    body["response_format"] = json!({
        "type": "json_schema",
        "json_schema": {"name": schema_name(&spec.name), "schema": schema, "strict": true},
    });
    let request = json!({
        "endpoint": CHAT_PATH, "stream": false, "seed": body["seed"], "max_tokens": spec.max_tokens,
        "response_format": "json_schema (strict)", "prompt": prompt_summary(prompt),
    });
    let (mut attempt, reply) = match send_chat(client, &body, Attempt::new(index, request)).await? {
        Ok(exchange) => exchange,
        Err(failed) => return Ok(failed),
    };
    let Some(content) = reply.content.as_deref() else {
        return Ok(attempt.fail("choices[0].message.content is missing"));
    };
    let value = match exactly_one_json_value(content) {
        Ok(value) => value,
        Err(why) => {
            let cut = if reply.finish_reason.as_deref() == Some("length") {
                " (finish_reason length: max_tokens cut the reply)"
            } else {
                ""
            };
            return Ok(attempt.fail(format!("{why}{cut}")));
        }
    };
    let violations = compiled.violations(&value, MAX_VIOLATIONS);
    if violations.is_empty() {
        Ok(attempt.pass("the reply is exactly one JSON value, valid for the schema"))
    } else {
        attempt.reply["schema_violations"] = json!(violations);
        Ok(attempt.fail(format!("the JSON reply violates the schema: {}", violations.join("; "))))
    }
}

/// `json_schema.name` must match `^[a-zA-Z0-9_-]{1,64}$` (OpenAI's rule).
fn schema_name(check_name: &str) -> String {
    let name: String = check_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(64)
        .collect();
    if name.is_empty() { "anvil_check".to_owned() } else { name }
}

#[cfg(test)]
mod tests {
    #[test]
    fn schema_names_are_sanitized() {
        assert_eq!(super::schema_name("tp2 json.v1"), "tp2_json_v1");
        assert_eq!(super::schema_name(""), "anvil_check");
        assert_eq!(super::schema_name(&"x".repeat(80)).len(), 64);
    }
}
