//! What the model answered: with `keep-answers`, each measured request's
//! visible reply, kept beside the cell's result (as `answers.jsonl`) so
//! that a later step can score it or compare it with another arm's, and
//! `anvil verify` can score it again. Kept within a byte budget: once an
//! answer does not fit, no later one is kept (so the kept ones are the
//! first to end, not the shortest) and the rest are counted as dropped.
//!
//! The text is what the client captured of the reply
//! ([`crate::observe::stream::CAPTURE_CAP_CHARS`] characters at most,
//! `truncated` beyond). Token ids and log-probabilities are not kept:
//! the load generator does not ask for them (docs/metrics.md "Answers").

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::observe::stream::StreamObservation;
use crate::workload::request::Content;

/// One measured request's answer: one line of `answers.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub request_index: u64,
    /// 0-based measured run.
    pub repeat: u32,
    /// The scored dataset item it answered, by its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    /// `blake3:` of the prompt's text (a conversation: of its messages as
    /// JSON `[[role, text], …]`): which prompt this answers, without it.
    pub prompt_blake3: String,
    pub text: String,
    /// The output's token ids, where the server sent them (vLLM with
    /// `return_token_ids` in the request body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ids: Option<Vec<u32>>,
    /// `blake3:` of `text`, so an edited answer shows.
    pub text_blake3: String,
    /// The reply ended as the stream said it would, with nothing failing
    /// and nothing cut by the capture.
    pub complete: bool,
    /// Cut at the capture's length.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Answered by the simulated engine.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub simulated: bool,
}

/// A cell's kept answers, in request order, and what the budget left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Answers {
    pub answers: Vec<Answer>,
    /// Measured requests whose answers did not fit the budget.
    pub dropped: u64,
    /// The kept answers' lines, in bytes (newlines included).
    pub bytes: u64,
    pub budget_bytes: u64,
}

impl Answers {
    /// `answers.jsonl`: one [`Answer`] a line, in request order.
    pub fn to_jsonl(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes as usize);
        for answer in &self.answers {
            out.extend(line(answer));
        }
        out
    }
}

/// `blake3:` and the hex digest of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    format!("blake3:{}", blake3::hash(bytes).to_hex())
}

/// One answer's line, newline included.
fn line(answer: &Answer) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(answer).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// The answers of a cell as its requests end.
#[derive(Debug)]
pub struct AnswerLog {
    budget: u64,
    /// Requests below this index are measured: only theirs are kept.
    measured_below: u64,
    simulated: bool,
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    answers: Vec<Answer>,
    bytes: u64,
    dropped: u64,
    full: bool,
}

impl AnswerLog {
    pub fn new(budget: u64, measured_below: u64, simulated: bool) -> Self {
        Self { budget, measured_below, simulated, kept: Mutex::new(Kept::default()) }
    }

    /// Keeps request `index`'s answer, if it is measured and fits.
    pub fn keep(
        &self,
        index: u64,
        repeat: u32,
        content: &Content,
        item: Option<&str>,
        obs: &StreamObservation,
    ) {
        if index >= self.measured_below {
            return;
        }
        let answer = Answer {
            request_index: index,
            repeat,
            item: item.map(str::to_string),
            prompt_blake3: prompt_digest(content),
            text_blake3: digest(obs.capture.as_bytes()),
            text: obs.capture.clone(),
            token_ids: obs.token_ids.clone(),
            complete: obs.done && obs.failure.is_none() && !obs.capture_truncated,
            truncated: obs.capture_truncated,
            finish_reason: obs.finish_reason.clone(),
            simulated: self.simulated,
        };
        let size = line(&answer).len() as u64;
        let Ok(mut kept) = self.kept.lock() else { return };
        if kept.full || kept.bytes + size > self.budget {
            kept.full = true;
            kept.dropped += 1;
            return;
        }
        kept.bytes += size;
        kept.answers.push(answer);
    }

    /// The kept answers, in request order.
    pub fn finish(&self) -> Answers {
        let kept = self.kept.lock().map(|mut k| std::mem::take(&mut *k)).unwrap_or_default();
        let mut answers = kept.answers;
        answers.sort_by_key(|a| a.request_index);
        Answers { answers, dropped: kept.dropped, bytes: kept.bytes, budget_bytes: self.budget }
    }
}

/// `blake3:` of what a request asked (see [`Answer::prompt_blake3`]).
pub fn prompt_digest(content: &Content) -> String {
    match content {
        Content::Prompt(text) => digest(text.as_bytes()),
        Content::Messages(messages) => {
            let pairs: Vec<[&str; 2]> = messages.iter().map(|m| [m.role, m.text.as_str()]).collect();
            digest(&serde_json::to_vec(&pairs).unwrap_or_default())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::workload::spec::Api;

    fn observed(text: &str) -> StreamObservation {
        let mut obs = StreamObservation::new(Api::Chat, Instant::now(), 0);
        obs.capture = text.to_string();
        obs.done = true;
        obs
    }

    #[test]
    fn kept_until_the_budget_then_dropped_in_order() {
        let prompt = Content::Prompt("2+2?".into());
        let one = line(&Answer {
            request_index: 0,
            repeat: 0,
            item: Some("q".into()),
            prompt_blake3: prompt_digest(&prompt),
            text: "4".into(),
            token_ids: None,
            text_blake3: digest(b"4"),
            complete: true,
            truncated: false,
            finish_reason: None,
            simulated: false,
        })
        .len() as u64;
        let log = AnswerLog::new(2 * one + 1, 10, false);
        // Ended out of order; a long one that does not fit stops the keeping.
        log.keep(1, 0, &prompt, Some("q"), &observed("4"));
        log.keep(0, 0, &prompt, Some("q"), &observed("4"));
        log.keep(2, 0, &prompt, Some("q"), &observed("a long answer that does not fit"));
        log.keep(3, 0, &prompt, Some("q"), &observed("4"));
        log.keep(10, 0, &prompt, Some("q"), &observed("4"));
        let answers = log.finish();
        assert_eq!(answers.answers.iter().map(|a| a.request_index).collect::<Vec<_>>(), [0, 1]);
        assert_eq!((answers.dropped, answers.bytes), (2, 2 * one), "the unmeasured index 10 is not counted");
        assert_eq!(answers.to_jsonl().len() as u64, answers.bytes);
        assert_eq!(answers.answers[0].text_blake3, digest(b"4"));
        assert!(answers.answers[0].complete);
    }

    #[test]
    fn a_conversation_is_digested_by_its_messages() {
        use crate::workload::request::Message;
        let a = Content::Messages(vec![Message { role: "user", text: "hi".into() }]);
        let b = Content::Messages(vec![Message { role: "system", text: "hi".into() }]);
        assert_ne!(prompt_digest(&a), prompt_digest(&b));
        assert_ne!(prompt_digest(&a), prompt_digest(&Content::Prompt("hi".into())));
    }
}
