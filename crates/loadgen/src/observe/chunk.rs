//! What one streamed event says: a content delta, a reasoning delta, usage,
//! the end of the stream, or an error. Written against the OpenAI wire
//! format as vLLM, SGLang and llama.cpp emit it, independently of the
//! simulated engine's code.

use std::borrow::Cow;

use crate::observe::json_scan::{
    ScanError, expect_end, is_null, object_fields, string_value, u64_value, value_at, walk_array_first,
    walk_object,
};
use crate::workload::spec::Api;

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// `prompt_tokens_details.cached_tokens`, when the server reports it.
    pub cached_tokens: Option<u64>,
}

/// The parts of one event that the measurement needs.
#[derive(Debug, Default, PartialEq)]
pub struct ChunkView<'a> {
    pub content: Option<Cow<'a, str>>,
    pub reasoning: Option<Cow<'a, str>>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<Cow<'a, str>>,
    /// The stream says it is complete (`[DONE]`, `response.completed`).
    pub done: bool,
    /// An error object inside the stream.
    pub error: Option<String>,
    /// The response's `id` (`chatcmpl-…`): the server's name for the request.
    pub id: Option<Cow<'a, str>>,
    /// llama.cpp's `timings` of a speculative run: drafted and accepted tokens.
    pub draft: Option<Draft>,
    /// The choice's `token_ids` as sent (vLLM's, asked for with
    /// `return_token_ids`): the ids of this chunk's tokens, unparsed
    /// ([`token_ids`] reads them); absent unless the request asked.
    pub token_ids: Option<&'a [u8]>,
}

/// The ids a chunk's `token_ids` holds; None when it is not an array of
/// token ids (a value of another shape is ignored, as `id` and `timings` are).
pub fn token_ids(raw: &[u8]) -> Option<Vec<u32>> {
    serde_json::from_slice(raw).ok()
}

/// Speculative decoding's count for one request, as the server reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Draft {
    pub drafted: u64,
    pub accepted: u64,
}

/// Interprets one SSE event of the given API.
pub fn parse_event<'a>(api: Api, event: &[u8], data: &'a [u8]) -> Result<ChunkView<'a>, ScanError> {
    match api {
        Api::Chat | Api::Completions => parse_openai_chunk(data),
        Api::Responses => parse_responses_event(event, data),
    }
}

fn parse_openai_chunk(data: &[u8]) -> Result<ChunkView<'_>, ScanError> {
    if data == b"[DONE]" {
        return Ok(ChunkView { done: true, ..ChunkView::default() });
    }
    let mut view = ChunkView::default();
    let end = walk_object(data, 0, |key, at| match key {
        b"choices" if starts_null(data, at) => Ok(None),
        b"choices" => walk_array_first(data, at, |first| read_choice(data, first, &mut view)).map(Some),
        b"usage" => {
            let (raw, end) = value_at(data, at)?;
            if !is_null(raw) && view.usage.is_none() {
                view.usage = Some(parse_usage(raw, b"prompt_tokens", b"completion_tokens")?);
            }
            Ok(Some(end))
        }
        b"error" => {
            let (raw, end) = value_at(data, at)?;
            if !is_null(raw) && view.error.is_none() {
                view.error = Some(String::from_utf8_lossy(raw).into_owned());
            }
            Ok(Some(end))
        }
        // Neither is part of what the measurement needs: a value of another
        // shape is ignored, never a malformed stream.
        b"id" => {
            let (raw, end) = value_at(data, at)?;
            if view.id.is_none() {
                view.id = string_value(raw).ok().flatten();
            }
            Ok(Some(end))
        }
        b"timings" => {
            let (raw, end) = value_at(data, at)?;
            if !is_null(raw) {
                view.draft = parse_draft(raw).ok().flatten();
            }
            Ok(Some(end))
        }
        _ => Ok(None),
    })?;
    expect_end(data, end)?;
    Ok(view)
}

/// `timings.draft_n` and `draft_n_accepted` (llama.cpp sends them only for a speculative run).
fn parse_draft(raw: &[u8]) -> Result<Option<Draft>, ScanError> {
    let [drafted, accepted] = object_fields(raw, [b"draft_n", b"draft_n_accepted"])?;
    let count = |raw: Option<&[u8]>| raw.map(u64_value).transpose().map(Option::flatten);
    Ok(match (count(drafted)?, count(accepted)?) {
        (Some(drafted), Some(accepted)) => Some(Draft { drafted, accepted }),
        _ => None,
    })
}

/// The value at `data[at..]` is `null`.
fn starts_null(data: &[u8], at: usize) -> bool {
    data[at..].starts_with(b"null")
}

/// Reads the first choice (`data[at..]`) into `view`; returns where it ends.
fn read_choice<'a>(data: &'a [u8], at: usize, view: &mut ChunkView<'a>) -> Result<usize, ScanError> {
    let mut text = None;
    let mut saw_delta = false;
    let end = walk_object(data, at, |key, at| match key {
        b"delta" if starts_null(data, at) || saw_delta => Ok(None),
        b"delta" => {
            saw_delta = true;
            let (mut content, mut reasoning_content, mut reasoning) = (None, None, None);
            let end = walk_object(data, at, |key, at| {
                let slot = match key {
                    b"content" => &mut content,
                    b"reasoning_content" => &mut reasoning_content,
                    b"reasoning" => &mut reasoning,
                    _ => return Ok(None),
                };
                let (raw, end) = value_at(data, at)?;
                slot.get_or_insert(raw);
                Ok(Some(end))
            })?;
            view.content = content.map(string_value).transpose()?.flatten();
            view.reasoning = match reasoning_content.map(string_value).transpose()?.flatten() {
                Some(r) => Some(r),
                None => reasoning.map(string_value).transpose()?.flatten(),
            };
            Ok(Some(end))
        }
        b"text" => {
            let (raw, end) = value_at(data, at)?;
            text.get_or_insert(raw);
            Ok(Some(end))
        }
        b"finish_reason" => {
            let (raw, end) = value_at(data, at)?;
            if view.finish_reason.is_none() {
                view.finish_reason = string_value(raw)?;
            }
            Ok(Some(end))
        }
        b"token_ids" => {
            let (raw, end) = value_at(data, at)?;
            if !is_null(raw) {
                view.token_ids = Some(raw);
            }
            Ok(Some(end))
        }
        _ => Ok(None),
    })?;
    // Completions carry `text` where chat carries a delta.
    if !saw_delta && let Some(text) = text {
        view.content = string_value(text)?;
    }
    Ok(end)
}

fn parse_usage(raw: &[u8], prompt_key: &[u8], completion_key: &[u8]) -> Result<Usage, ScanError> {
    let [prompt, completion, prompt_details, input_details] =
        object_fields(raw, [prompt_key, completion_key, b"prompt_tokens_details", b"input_tokens_details"])?;
    let count = |raw: Option<&[u8]>| raw.map(u64_value).transpose().map(|v| v.flatten().unwrap_or(0));
    let details = prompt_details.or(input_details).filter(|d| !is_null(d));
    let cached_tokens = match details {
        Some(d) => object_fields(d, [b"cached_tokens"])?[0].map(u64_value).transpose()?.flatten(),
        None => None,
    };
    Ok(Usage { prompt_tokens: count(prompt)?, completion_tokens: count(completion)?, cached_tokens })
}

/// Responses API: the event type is in `event:` and in the payload's `type`.
fn parse_responses_event<'a>(event: &[u8], data: &'a [u8]) -> Result<ChunkView<'a>, ScanError> {
    if data == b"[DONE]" {
        return Ok(ChunkView { done: true, ..ChunkView::default() });
    }
    let [kind, delta, response, error] = object_fields(data, [b"type", b"delta", b"response", b"error"])?;
    let kind_owned;
    let kind: &[u8] = match kind.map(string_value).transpose()?.flatten() {
        Some(k) => {
            kind_owned = k;
            kind_owned.as_bytes()
        }
        None => event,
    };
    let mut view = ChunkView::default();
    match kind {
        b"response.output_text.delta" => view.content = delta.map(string_value).transpose()?.flatten(),
        b"response.reasoning_text.delta" | b"response.reasoning_summary_text.delta" => {
            view.reasoning = delta.map(string_value).transpose()?.flatten()
        }
        b"response.completed" | b"response.incomplete" => {
            view.done = true;
            if let Some(response) = response {
                let [usage, status] = object_fields(response, [b"usage", b"status"])?;
                if let Some(usage) = usage.filter(|u| !is_null(u)) {
                    view.usage = Some(parse_usage(usage, b"input_tokens", b"output_tokens")?);
                }
                if kind == b"response.incomplete" {
                    view.finish_reason = Some(Cow::Borrowed("length"));
                } else if let Some(status) = status.map(string_value).transpose()?.flatten() {
                    view.finish_reason = Some(Cow::Owned(status.into_owned()));
                }
            }
        }
        b"response.failed" | b"error" => {
            view.error = Some(String::from_utf8_lossy(error.or(response).unwrap_or(data)).into_owned())
        }
        _ => {}
    }
    Ok(view)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_chat_chunks() {
        let c = br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi","reasoning_content":null},"logprobs":null,"finish_reason":null}],"usage":null}"#;
        let v = parse_event(Api::Chat, b"", c).unwrap();
        assert_eq!(v.content.as_deref(), Some("Hi"));
        assert_eq!(v.reasoning, None);
        assert_eq!(v.usage, None);

        let r = br#"{"choices":[{"index":0,"delta":{"reasoning":"think"},"finish_reason":null}]}"#;
        let v = parse_event(Api::Chat, b"", r).unwrap();
        assert_eq!(v.reasoning.as_deref(), Some("think"));
        assert_eq!(v.content, None);

        let u = br#"{"id":"x","choices":[],"usage":{"prompt_tokens":10,"total_tokens":15,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}},"timings":{"cache_n":4,"draft_n":8,"draft_n_accepted":3}}"#;
        let v = parse_event(Api::Chat, b"", u).unwrap();
        assert_eq!(v.usage, Some(Usage { prompt_tokens: 10, completion_tokens: 5, cached_tokens: Some(4) }));
        assert_eq!((v.id.as_deref(), v.draft), (Some("x"), Some(Draft { drafted: 8, accepted: 3 })));
        let odd = br#"{"id":false,"choices":[],"timings":7}"#;
        let v = parse_event(Api::Chat, b"", odd).expect("an odd id or timings is ignored");
        assert_eq!((v.id, v.draft), (None, None));

        assert!(parse_event(Api::Chat, b"", b"[DONE]").unwrap().done);
    }

    /// vLLM with `return_token_ids`: each choice carries its tokens' ids
    /// (the first chunk also `prompt_token_ids` beside `choices`); a value
    /// of another shape is not a malformed stream, and is not read as ids.
    #[test]
    fn vllm_token_ids() {
        let c = br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"smol","choices":[{"index":0,"delta":{"content":" four"},"logprobs":null,"finish_reason":null,"token_ids":[2791,17]}],"prompt_token_ids":null}"#;
        let v = parse_event(Api::Chat, b"", c).unwrap();
        assert_eq!(v.content.as_deref(), Some(" four"));
        assert_eq!(v.token_ids.and_then(token_ids), Some(vec![2791, 17]));
        let odd = br#"{"choices":[{"index":0,"delta":{"content":"x"},"token_ids":"none"}]}"#;
        let v = parse_event(Api::Chat, b"", odd).unwrap();
        assert_eq!(v.content.as_deref(), Some("x"));
        assert_eq!(v.token_ids.and_then(token_ids), None);
        let none = br#"{"choices":[{"index":0,"delta":{"content":"x"},"token_ids":null}]}"#;
        assert_eq!(parse_event(Api::Chat, b"", none).unwrap().token_ids, None);
    }

    #[test]
    fn content_key_inside_other_values_is_not_mistaken_for_content() {
        let c =
            br#"{"choices":[{"delta":{"role":"assistant","tool":{"content":"no"}},"finish_reason":"stop"}]}"#;
        let v = parse_event(Api::Chat, b"", c).unwrap();
        assert_eq!(v.content, None);
        assert_eq!(v.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn completions_text() {
        let c = br#"{"choices":[{"text":" world","index":0,"finish_reason":null}]}"#;
        assert_eq!(parse_event(Api::Completions, b"", c).unwrap().content.as_deref(), Some(" world"));
    }

    #[test]
    fn in_stream_error() {
        let c = br#"{"error":{"message":"boom","code":500}}"#;
        assert!(parse_event(Api::Chat, b"", c).unwrap().error.is_some());
    }

    #[test]
    fn responses_events() {
        let d = br#"{"type":"response.output_text.delta","item_id":"i","delta":"Hel"}"#;
        let v = parse_event(Api::Responses, b"response.output_text.delta", d).unwrap();
        assert_eq!(v.content.as_deref(), Some("Hel"));
        let r = br#"{"type":"response.reasoning_text.delta","delta":"hmm"}"#;
        assert_eq!(parse_event(Api::Responses, b"", r).unwrap().reasoning.as_deref(), Some("hmm"));
        let done = br#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":7,"output_tokens":3,"input_tokens_details":{"cached_tokens":0}}}}"#;
        let v = parse_event(Api::Responses, b"", done).unwrap();
        assert!(v.done);
        assert_eq!(v.usage, Some(Usage { prompt_tokens: 7, completion_tokens: 3, cached_tokens: Some(0) }));
    }

    /// The one-pass reader agrees with a full serde_json parse on what a
    /// chunk says, and rejects what serde_json rejects.
    #[test]
    fn agrees_with_serde_json_on_chunk_shapes() {
        let shapes: [&[u8]; 12] = [
            br#"{"id":"a","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            br#"{"choices":[{"delta":{"content":"he said \"hi\"\n","reasoning_content":null}}],"usage":null}"#,
            br#"{"choices":[{"delta":{"reasoning_content":"\u00e9t\u00e9"}},{"delta":{"content":"second"}}]}"#,
            br#"{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
            br#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":null}}"#,
            br#" { "choices" : [ { "text" : " w" , "finish_reason" : null } ] } "#,
            br#"{"choices":null,"model":"x","created":1,"system_fingerprint":"b","extra":[[{"content":"no"}]]}"#,
            br#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"content\":1}"}}]}}]}"#,
            br#"{"choices":[{"delta":{"content":"x"}}]"#,
            br#"{"choices":[{"delta":{"content":"x"}}]} trailing"#,
            br#"{"choices":[{"delta":{"content":"x"},}]}"#,
            br#"{"choices":[{"delta":{"content":x}}]}"#,
        ];
        for chunk in shapes {
            let shown = String::from_utf8_lossy(chunk);
            let ours = parse_event(Api::Chat, b"", chunk);
            let Ok(full) = serde_json::from_slice::<serde_json::Value>(chunk) else {
                assert!(ours.is_err(), "accepted broken JSON {shown}");
                continue;
            };
            let ours = ours.unwrap_or_else(|e| panic!("{shown}: {e}"));
            let choice = &full["choices"][0];
            let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
            let content = text(&choice["delta"]["content"]).or_else(|| text(&choice["text"]));
            assert_eq!(ours.content.as_deref().map(str::to_string), content, "{shown}");
            assert_eq!(
                ours.reasoning.as_deref().map(str::to_string),
                text(&choice["delta"]["reasoning_content"]),
                "{shown}"
            );
            assert_eq!(
                ours.finish_reason.as_deref().map(str::to_string),
                text(&choice["finish_reason"]),
                "{shown}"
            );
            let completion = full["usage"]["completion_tokens"].as_u64();
            assert_eq!(ours.usage.map(|u| u.completion_tokens), completion, "{shown}");
        }
    }
}
