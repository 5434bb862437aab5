//! `/v1/chat/completions` framing, byte for byte as vLLM's OpenAI server:
//! `data: {chat.completion.chunk}\n\n` events, the role chunk first, the
//! finish reason on the last token's chunk, an optional usage chunk with
//! `choices: []`, then `data: [DONE]\n\n`.

use serde_json::{Value, json};

use crate::json_text::{json_string, push_json_string};
use crate::reply::{Channel, Delta, FinishReason, ReplyPlan, ToolCall};
use crate::request::Generation;
use crate::wire_format::{Usage, WireFormat};

pub struct ChatFormat {
    id: String,
    created: u64,
    model: String,
    tool_call: Option<ToolCall>,
    /// `data: {"id":...,"choices":` — the same for every chunk of the stream.
    chunk_head: Vec<u8>,
    /// Each chunk carries its tokens' ids (`return_token_ids`).
    token_ids: bool,
}

impl ChatFormat {
    pub fn new(id: String, created: u64, generation: &Generation, plan: &ReplyPlan) -> Self {
        let chunk_head = format!(
            r#"data: {{"id":{},"object":"chat.completion.chunk","created":{created},"model":{},"system_fingerprint":"anvil-sim","choices":"#,
            json_string(&id),
            json_string(&generation.model),
        )
        .into_bytes();
        Self {
            id,
            created,
            model: generation.model.clone(),
            tool_call: plan.tool_call.clone(),
            chunk_head,
            token_ids: generation.return_token_ids,
        }
    }
}

pub fn usage_json(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "completion_tokens": usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    })
}

impl WireFormat for ChatFormat {
    fn opening(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.chunk_head);
        out.extend_from_slice(
            br#"[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
        );
        out.extend_from_slice(b"\n\n");
    }

    fn delta(&mut self, out: &mut Vec<u8>, delta: &Delta<'_>, finish: Option<FinishReason>) {
        out.extend_from_slice(&self.chunk_head);
        out.extend_from_slice(br#"[{"index":0,"delta":{"#);
        let delta_start = out.len();
        let field = |out: &mut Vec<u8>, name: &[u8]| {
            if out.len() > delta_start {
                out.push(b',');
            }
            out.extend_from_slice(name);
        };
        if !delta.reasoning.is_empty() {
            field(out, br#""reasoning_content":"#);
            push_json_string(out, delta.reasoning);
        }
        if !delta.content.is_empty() {
            field(out, br#""content":"#);
            push_json_string(out, delta.content);
        }
        if let Some(call) =
            self.tool_call.as_ref().filter(|_| delta.tool_started || !delta.tool_arguments.is_empty())
        {
            field(out, br#""tool_calls":[{"#);
            if delta.tool_started {
                out.extend_from_slice(br#""id":"#);
                push_json_string(out, &call.id);
                out.extend_from_slice(br#","type":"function","index":0,"function":{"name":"#);
                push_json_string(out, &call.name);
                out.extend_from_slice(br#","arguments":"#);
            } else {
                out.extend_from_slice(br#""index":0,"function":{"arguments":"#);
            }
            push_json_string(out, delta.tool_arguments);
            out.extend_from_slice(b"}}]");
        }
        if out.len() == delta_start {
            // A last chunk with nothing left to say still carries a delta.
            field(out, br#""content":"""#);
        }
        out.extend_from_slice(br#"},"logprobs":null,"finish_reason":"#);
        match finish {
            Some(reason) => {
                push_json_string(out, reason.as_str());
                out.extend_from_slice(br#","stop_reason":null"#);
            }
            None => out.extend_from_slice(b"null"),
        }
        if self.token_ids {
            // As vLLM sends them: the ids of this chunk's tokens, both channels.
            let mut ids = crate::tokenizer::token_ids(delta.reasoning);
            ids.extend(crate::tokenizer::token_ids(delta.content));
            out.extend_from_slice(br#","token_ids":"#);
            out.extend_from_slice(serde_json::to_string(&ids).unwrap_or_default().as_bytes());
        }
        out.extend_from_slice(b"}]}");
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
        // A chunk cut off mid-object: the JSON cannot parse.
        out.extend_from_slice(&self.chunk_head);
        out.extend_from_slice(br#"[{"index":0,"delta":{"content":"#);
        out.extend_from_slice(b"\n\n");
    }

    fn full_response(&self, plan: &ReplyPlan, usage: Option<&Usage>) -> Value {
        let mut message = json!({
            "role": "assistant",
            "content": plan.text_of(Channel::Content),
            "reasoning_content": plan.text_of(Channel::Reasoning),
            "tool_calls": [],
        });
        if let Some(call) = &plan.tool_call {
            message["tool_calls"] = json!([{
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": plan.text_of(Channel::ToolArguments).unwrap_or("")},
            }]);
        }
        let mut response = json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "anvil-sim",
            "choices": [{
                "index": 0,
                "message": message,
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
