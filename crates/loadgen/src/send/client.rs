//! What the load generator sends: endpoint URLs and request bodies.

use serde_json::{Map, Value, json};

use crate::workload::request::{Content, Message};
use crate::workload::spec::{Api, CellSpec, ThinkingMode};

/// The endpoint URL for `api` under a target's base URL.
pub fn endpoint(base_url: &str, api: Api) -> String {
    let base = base_url.trim_end_matches('/');
    let root = if base.ends_with("/v1") { base.to_string() } else { format!("{base}/v1") };
    let path = match api {
        Api::Chat => "chat/completions",
        Api::Completions => "completions",
        Api::Responses => "responses",
    };
    format!("{root}/{path}")
}

/// The JSON body of request `index`.
pub fn request_body(spec: &CellSpec, prompt: &str, index: u64, marker: &str, max_tokens: u32) -> Value {
    planned_body(spec, &Content::Prompt(prompt.to_string()), index, marker, max_tokens, false)
}

/// The messages of a chat request (one user message for a plain prompt).
fn messages(content: &Content) -> Value {
    match content {
        Content::Prompt(prompt) => json!([{"role": "user", "content": prompt}]),
        Content::Messages(list) => {
            Value::Array(list.iter().map(|m| json!({"role": m.role, "content": m.text})).collect())
        }
    }
}

/// A conversation as one prompt, for the completions API: its messages in order.
fn flattened(list: &[Message]) -> String {
    list.iter().map(|m| m.text.as_str()).collect::<Vec<_>>().join("\n\n")
}

/// The JSON body of request `index` for any content; `ignore_eos` asks the
/// engine to generate exactly `max_tokens` (vLLM, SGLang, llama.cpp and
/// the sim read `ignore_eos`).
pub fn planned_body(
    spec: &CellSpec,
    content: &Content,
    index: u64,
    marker: &str,
    max_tokens: u32,
    ignore_eos: bool,
) -> Value {
    let prompt = match content {
        Content::Prompt(p) => std::borrow::Cow::Borrowed(p.as_str()),
        Content::Messages(list) => std::borrow::Cow::Owned(flattened(list)),
    };
    let mut body = match spec.api {
        Api::Chat => json!({
            "model": spec.model,
            "messages": messages(content),
            "max_tokens": max_tokens,
            "stream": true,
            "stream_options": {"include_usage": true},
        }),
        Api::Completions => json!({
            "model": spec.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "stream": true,
            "stream_options": {"include_usage": true},
        }),
        Api::Responses => json!({
            "model": spec.model,
            "input": match content {
                Content::Prompt(p) => json!(p),
                Content::Messages(_) => messages(content),
            },
            "max_output_tokens": max_tokens,
            "stream": true,
        }),
    };
    let Value::Object(fields) = &mut body else { unreachable!("built as an object above") };
    if ignore_eos {
        fields.insert("ignore_eos".into(), json!(true));
    }
    fields.extend(spec.options.body_fields().into_iter().map(|(field, value)| (field.to_string(), value)));
    if spec.api == Api::Chat && spec.thinking != ThinkingMode::Default {
        let on = spec.thinking == ThinkingMode::On;
        fields.insert("chat_template_kwargs".into(), json!({"enable_thinking": on}));
    }
    if let Value::Object(extra) = &spec.extra_body {
        let replace = |s: &str| {
            s.replace("{marker}", marker)
                .replace("{index}", &index.to_string())
                .replace("{seed}", &spec.seed.to_string())
        };
        merge(fields, extra, &replace);
    }
    body
}

/// Deep-merges `extra` into `into` (objects merge, everything else replaces),
/// substituting placeholders in string values.
fn merge(into: &mut Map<String, Value>, extra: &Map<String, Value>, replace: &impl Fn(&str) -> String) {
    for (key, value) in extra {
        match (into.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(more)) => merge(existing, more, replace),
            _ => {
                into.insert(key.clone(), substitute(value, replace));
            }
        }
    }
}

fn substitute(value: &Value, replace: &impl Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(replace(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, replace)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), substitute(v, replace))).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(endpoint("http://h:1/", Api::Chat), "http://h:1/v1/chat/completions");
        assert_eq!(endpoint("http://h:1/v1", Api::Responses), "http://h:1/v1/responses");
    }

    #[test]
    fn extra_body_merges_and_substitutes() {
        let spec = CellSpec {
            model: "m".into(),
            seed: 9,
            extra_body: json!({"grammar": "root ::= \"{marker} \" x", "stream_options": {"continuous_usage_stats": true}, "n": "{index}/{seed}"}),
            thinking: ThinkingMode::Off,
            ..CellSpec::default()
        };
        let body = request_body(&spec, "p", 4, "ANVIL_REQ_9_00004", 10);
        assert_eq!(body["grammar"], "root ::= \"ANVIL_REQ_9_00004 \" x");
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["stream_options"]["continuous_usage_stats"], true);
        assert_eq!(body["n"], "4/9");
        assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
        assert!(body.get("ignore_eos").is_none());
    }

    #[test]
    fn conversations_and_ignore_eos() {
        let spec = CellSpec { model: "m".into(), ..CellSpec::default() };
        let talk = Content::Messages(vec![
            Message { role: "user", text: "hi".into() },
            Message { role: "assistant", text: "hello".into() },
            Message { role: "user", text: "more".into() },
        ]);
        let body = planned_body(&spec, &talk, 0, "", 7, true);
        assert_eq!(body["messages"][1], json!({"role": "assistant", "content": "hello"}));
        assert_eq!((body["max_tokens"].as_u64(), body["ignore_eos"].as_bool()), (Some(7), Some(true)));
        let spec = CellSpec { api: Api::Completions, ..spec };
        assert_eq!(planned_body(&spec, &talk, 0, "", 7, false)["prompt"], "hi\n\nhello\n\nmore");
    }
}
