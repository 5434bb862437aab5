//! A subset of the OpenAI Responses API: one message output (plus a
//! reasoning item when thinking), and the streaming events
//! `response.created`, `response.reasoning_text.delta`,
//! `response.output_text.delta` and `response.completed`, each framed as
//! `event: <type>\ndata: {json}\n\n`.

use serde_json::{Value, json};

use crate::reply::{Channel, Delta, FinishReason, ReplyPlan};
use crate::request::Generation;
use crate::wire_format::{Usage, WireFormat};

pub struct ResponsesFormat {
    id: String,
    created: u64,
    model: String,
    sequence_number: u64,
    has_reasoning: bool,
}

impl ResponsesFormat {
    pub fn new(id: String, created: u64, generation: &Generation, plan: &ReplyPlan) -> Self {
        Self {
            id,
            created,
            model: generation.model.clone(),
            sequence_number: 0,
            has_reasoning: plan.reasoning_tokens() > 0,
        }
    }

    fn event(&mut self, out: &mut Vec<u8>, kind: &str, mut body: Value) {
        body["type"] = json!(kind);
        body["sequence_number"] = json!(self.sequence_number);
        self.sequence_number += 1;
        out.extend_from_slice(format!("event: {kind}\ndata: {body}\n\n").as_bytes());
    }

    fn message_id(&self) -> String {
        format!("msg_{}", self.id.trim_start_matches("resp_"))
    }

    fn reasoning_id(&self) -> String {
        format!("rs_{}", self.id.trim_start_matches("resp_"))
    }

    fn response_object(&self, status: &str, plan: Option<&ReplyPlan>, usage: Option<&Usage>) -> Value {
        let mut output = Vec::new();
        if let Some(plan) = plan {
            if let Some(reasoning) = plan.text_of(Channel::Reasoning) {
                output.push(json!({
                    "type": "reasoning",
                    "id": self.reasoning_id(),
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": reasoning}],
                }));
            }
            output.push(json!({
                "type": "message",
                "id": self.message_id(),
                "status": "completed",
                "role": "assistant",
                "content": [{
                    "type": "output_text",
                    "text": plan.text_of(Channel::Content).unwrap_or(""),
                    "annotations": [],
                }],
            }));
        }
        let status = match plan.map(|p| p.finish_reason) {
            Some(FinishReason::Length) => "incomplete",
            _ => status,
        };
        let mut response = json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "model": self.model,
            "status": status,
            "output": output,
            "usage": null,
        });
        if let Some(usage) = usage {
            response["usage"] = json!({
                "input_tokens": usage.prompt_tokens,
                "input_tokens_details": {"cached_tokens": usage.cached_tokens},
                "output_tokens": usage.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
                "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            });
        }
        response
    }
}

impl WireFormat for ResponsesFormat {
    fn opening(&mut self, out: &mut Vec<u8>) {
        let response = self.response_object("in_progress", None, None);
        self.event(out, "response.created", json!({"response": response}));
    }

    fn delta(&mut self, out: &mut Vec<u8>, delta: &Delta<'_>, _finish: Option<FinishReason>) {
        if !delta.reasoning.is_empty() {
            let body = json!({"item_id": self.reasoning_id(), "output_index": 0, "content_index": 0, "delta": delta.reasoning});
            self.event(out, "response.reasoning_text.delta", body);
        }
        if !delta.content.is_empty() {
            let output_index = usize::from(self.has_reasoning);
            let body = json!({"item_id": self.message_id(), "output_index": output_index, "content_index": 0, "delta": delta.content});
            self.event(out, "response.output_text.delta", body);
        }
    }

    fn closing(&mut self, out: &mut Vec<u8>, plan: &ReplyPlan, usage: Option<&Usage>) {
        let response = self.response_object("completed", Some(plan), usage);
        self.event(out, "response.completed", json!({"response": response}));
    }

    fn malformed(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"event: response.output_text.delta\ndata: {\"type\":\"response.output_te\n\n");
    }

    fn full_response(&self, plan: &ReplyPlan, usage: Option<&Usage>) -> Value {
        self.response_object("completed", Some(plan), usage)
    }
}
