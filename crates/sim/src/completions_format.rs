//! `/v1/completions` framing as vLLM sends it: `text_completion` objects,
//! each choice with `text`, `logprobs`, `finish_reason` and `stop_reason`.

use serde_json::{Value, json};

use crate::chat_format::usage_json;
use crate::json_text::{json_string, push_json_string};
use crate::reply::{Channel, Delta, FinishReason, ReplyPlan};
use crate::request::Generation;
use crate::wire_format::{Usage, WireFormat};

pub struct CompletionsFormat {
    id: String,
    created: u64,
    model: String,
    chunk_head: Vec<u8>,
}

impl CompletionsFormat {
    pub fn new(id: String, created: u64, generation: &Generation) -> Self {
        let chunk_head = format!(
            r#"data: {{"id":{},"object":"text_completion","created":{created},"model":{},"system_fingerprint":"anvil-sim","choices":"#,
            json_string(&id),
            json_string(&generation.model),
        )
        .into_bytes();
        Self { id, created, model: generation.model.clone(), chunk_head }
    }
}

impl WireFormat for CompletionsFormat {
    fn opening(&mut self, _out: &mut Vec<u8>) {}

    fn delta(&mut self, out: &mut Vec<u8>, delta: &Delta<'_>, finish: Option<FinishReason>) {
        out.extend_from_slice(&self.chunk_head);
        out.extend_from_slice(br#"[{"index":0,"text":"#);
        push_json_string(out, delta.content);
        out.extend_from_slice(br#","logprobs":null,"finish_reason":"#);
        match finish {
            Some(reason) => push_json_string(out, reason.as_str()),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(br#","stop_reason":null}]}"#);
        out.extend_from_slice(b"\n\n");
    }

    fn closing(&mut self, out: &mut Vec<u8>, _plan: &ReplyPlan, usage: Option<&Usage>) {
        if let Some(usage) = usage {
            out.extend_from_slice(&self.chunk_head);
            out.extend_from_slice(br#"[],"usage":"#);
            out.extend_from_slice(usage_json(usage).to_string().as_bytes());
            out.extend_from_slice(b"}\n\n");
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
    }

    fn malformed(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.chunk_head);
        out.extend_from_slice(br#"[{"index":0,"text":"#);
        out.extend_from_slice(b"\n\n");
    }

    fn full_response(&self, plan: &ReplyPlan, usage: Option<&Usage>) -> Value {
        let mut response = json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "anvil-sim",
            "choices": [{
                "index": 0,
                "text": plan.text_of(Channel::Content).unwrap_or(""),
                "logprobs": null,
                "finish_reason": plan.finish_reason.as_str(),
                "stop_reason": null,
            }],
        });
        if let Some(usage) = usage {
            response["usage"] = usage_json(usage);
        }
        response
    }
}
