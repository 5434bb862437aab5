//! What the sim will answer, planned before generation starts: reasoning
//! text, then content (words, or JSON for structured output) or one tool
//! call, cut into tokens under the sim's tokenizer model. The engine only
//! decides *when* tokens come out; `ReplyCursor` turns a token count into
//! the text of one streamed delta.

use anvil_words::words;
use serde_json::Value;

use crate::answer_book::AnswerBook;
use crate::faults::FaultDraw;
use crate::instructions::{find_canary, requested_words};
use crate::profile::SimProfile;
use crate::request::Generation;
use crate::rng::SimRng;
use crate::schema::value_for_schema;
use crate::tokenizer::{count_tokens, push_token_ends};

/// Words of at most four characters, so each is exactly one token.
const WORDS: &[&str] = &[
    "the", "a", "of", "and", "to", "in", "is", "it", "for", "on", "with", "as", "at", "by", "this", "that",
    "from", "or", "be", "are", "was", "can", "will", "we", "our", "each", "load", "data", "fast", "slow",
    "time", "test", "run", "node", "cell", "gate", "warm", "rate", "step", "byte", "plan", "fair", "sure",
    "good", "well", "note", "more", "less", "then", "when", "next", "last",
];
/// Words that end a sentence: at most three characters plus the full stop.
const SENTENCE_ENDS: &[&str] = &["end", "now", "too", "so", "yes", "it", "all", "one"];
const THOUGHTS: &[&str] = &[
    "hmm", "so", "the", "user", "want", "me", "to", "make", "sure", "that", "i", "keep", "it", "okay", "let",
    "me", "see", "what", "they", "ask", "then", "next", "step", "is", "fine",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Reasoning,
    Content,
    ToolName,
    ToolArguments,
}

words! {
    /// Why generation ended, as the OpenAI API's `finish_reason` says it.
    pub enum FinishReason { Stop = "stop", Length = "length", ToolCalls = "tool_calls" }
}

/// Text of one channel and where each of its tokens ends (byte offsets).
#[derive(Debug, Clone)]
pub struct Segment {
    pub channel: Channel,
    pub text: String,
    token_ends: Vec<usize>,
}

impl Segment {
    fn new(channel: Channel, text: String) -> Self {
        let mut token_ends = Vec::new();
        push_token_ends(&text, 0, &mut token_ends);
        Self { channel, text, token_ends }
    }

    pub fn tokens(&self) -> u32 {
        self.token_ends.len() as u32
    }

    /// Keep only the first `tokens` tokens.
    fn truncate(&mut self, tokens: usize) {
        self.token_ends.truncate(tokens);
        let end = self.token_ends.last().copied().unwrap_or(0);
        self.text.truncate(end);
    }
}

#[derive(Debug, Clone)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone)]
pub struct ReplyPlan {
    pub segments: Vec<Segment>,
    pub tool_call: Option<ToolCall>,
    pub finish_reason: FinishReason,
    /// The canary marker the prompt asked for, if any.
    pub canary: Option<String>,
}

impl ReplyPlan {
    pub fn build(
        generation: &Generation,
        profile: &SimProfile,
        faults: &FaultDraw,
        answers: Option<&AnswerBook>,
    ) -> Self {
        let mut rng = SimRng::for_purpose(generation.seed, "reply");
        let mut segments = Vec::new();
        let canary = find_canary(&generation.instructions);
        if generation.thinking && profile.reasoning_tokens > 0 {
            let thought = words_text(&mut rng, THOUGHTS, profile.reasoning_tokens as usize);
            segments.push(Segment::new(Channel::Reasoning, thought));
        }

        let mut tool_call = None;
        let mut finish_reason = FinishReason::Stop;
        if let Some(tool) = &generation.tool {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("tool").to_owned();
            let parameters = tool.get("parameters").cloned().unwrap_or(Value::Bool(true));
            let arguments = value_for_schema(&parameters, &mut rng).to_string();
            segments.push(Segment::new(Channel::ToolName, name.clone()));
            segments.push(Segment::new(Channel::ToolArguments, arguments));
            tool_call = Some(ToolCall { id: format!("chatcmpl-tool-{:016x}", rng.next_u64()), name });
            finish_reason = FinishReason::ToolCalls;
        } else if let Some(schema) = &generation.response_schema {
            let json = value_for_schema(schema, &mut rng).to_string();
            let content =
                if faults.json_duplicate_after_think { format!("{json}</think>{json}") } else { json };
            segments.push(Segment::new(Channel::Content, content));
        } else if let Some(reply) = answers.and_then(|a| a.reply(&generation.instructions)) {
            // An item of the profile's scored dataset: its known answer.
            segments.push(Segment::new(Channel::Content, reply));
        } else {
            let marker = canary.as_ref().map(|c| c.marker());
            let marker_tokens = marker.as_deref().map_or(0, count_tokens);
            // With `ignore_eos` the reply runs to `max_tokens` (cut there below).
            let words = match generation.max_tokens.filter(|_| generation.ignore_eos) {
                Some(max_tokens) => max_tokens as usize,
                None => requested_words(&generation.instructions)
                    .map(|w| w as usize)
                    .unwrap_or_else(|| profile.output_tokens.saturating_sub(marker_tokens).max(1) as usize),
            };
            let mut body = words_text(&mut rng, WORDS, words);
            if faults.canary_leak {
                let leaked = canary
                    .as_ref()
                    .map_or_else(|| "ANVIL_REQ_0_99999".to_owned(), |c| c.neighbour().marker());
                body = insert_at_middle_word(&body, &leaked);
            }
            let content = match &marker {
                Some(marker) => format!("{marker} {body}"),
                None => body,
            };
            segments.push(Segment::new(Channel::Content, content));
        }

        if let Some(answers) = answers {
            for segment in segments.iter_mut().filter(|s| s.channel == Channel::Content) {
                let text = answers.diverged(&generation.instructions, std::mem::take(&mut segment.text));
                *segment = Segment::new(Channel::Content, text);
            }
        }
        let mut plan = Self { segments, tool_call, finish_reason, canary: canary.map(|c| c.marker()) };
        if let Some(max_tokens) = generation.max_tokens {
            plan.truncate_to(max_tokens);
        }
        plan
    }

    /// Cut the reply at `max_tokens` (finish reason `length` if anything was cut).
    fn truncate_to(&mut self, max_tokens: u32) {
        if self.total_tokens() <= max_tokens {
            return;
        }
        let mut left = max_tokens as usize;
        for segment in &mut self.segments {
            let keep = left.min(segment.token_ends.len());
            segment.truncate(keep);
            left -= keep;
        }
        self.segments.retain(|s| s.tokens() > 0);
        // A tool call whose name never came out is no tool call at all.
        if !self.segments.iter().any(|s| s.channel == Channel::ToolArguments) {
            self.tool_call = None;
        }
        self.finish_reason = FinishReason::Length;
    }

    pub fn total_tokens(&self) -> u32 {
        self.segments.iter().map(Segment::tokens).sum()
    }

    pub fn reasoning_tokens(&self) -> u32 {
        self.segments.iter().filter(|s| s.channel == Channel::Reasoning).map(Segment::tokens).sum()
    }

    /// The whole text of one channel (for non-streaming responses).
    pub fn text_of(&self, channel: Channel) -> Option<&str> {
        self.segments.iter().find(|s| s.channel == channel).map(|s| s.text.as_str())
    }
}

/// `count` words from `vocabulary`, with a sentence end every 8 to 15 words.
fn words_text(rng: &mut SimRng, vocabulary: &[&str], count: usize) -> String {
    let mut text = String::with_capacity(count * 5);
    let mut until_stop = 8 + rng.below(8);
    for i in 0..count {
        if i > 0 {
            text.push(' ');
        }
        until_stop -= 1;
        if until_stop == 0 || i + 1 == count {
            text.push_str(SENTENCE_ENDS[rng.below(SENTENCE_ENDS.len() as u64) as usize]);
            text.push('.');
            until_stop = 8 + rng.below(8);
        } else {
            text.push_str(vocabulary[rng.below(vocabulary.len() as u64) as usize]);
        }
    }
    text
}

fn insert_at_middle_word(text: &str, insert: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let middle = words.len() / 2;
    let mut out: Vec<&str> = Vec::with_capacity(words.len() + 1);
    out.extend_from_slice(&words[..middle]);
    out.push(insert);
    out.extend_from_slice(&words[middle..]);
    out.join(" ")
}

/// The text that `take` tokens of a reply carry, by channel.
#[derive(Debug, Default, PartialEq)]
pub struct Delta<'a> {
    pub reasoning: &'a str,
    pub content: &'a str,
    /// The tool call's name is complete in this delta: announce the call.
    pub tool_started: bool,
    pub tool_arguments: &'a str,
}

impl Delta<'_> {
    pub fn is_empty(&self) -> bool {
        self.reasoning.is_empty()
            && self.content.is_empty()
            && !self.tool_started
            && self.tool_arguments.is_empty()
    }
}

/// Position in a reply plan, advanced token by token.
#[derive(Debug, Default)]
pub struct ReplyCursor {
    segment: usize,
    token: usize,
}

impl ReplyCursor {
    #[cfg(test)]
    pub fn is_done(&self, plan: &ReplyPlan) -> bool {
        self.segment >= plan.segments.len()
    }

    /// Advance by `tokens` tokens and return their text.
    pub fn take<'a>(&mut self, plan: &'a ReplyPlan, mut tokens: usize) -> Delta<'a> {
        let mut delta = Delta::default();
        while tokens > 0
            && let Some(segment) = plan.segments.get(self.segment)
        {
            let start_byte = if self.token == 0 { 0 } else { segment.token_ends[self.token - 1] };
            let step = tokens.min(segment.token_ends.len() - self.token);
            self.token += step;
            tokens -= step;
            let text = &segment.text[start_byte..segment.token_ends[self.token - 1]];
            let finished_segment = self.token == segment.token_ends.len();
            match segment.channel {
                Channel::Reasoning => delta.reasoning = text,
                Channel::Content => delta.content = text,
                Channel::ToolName => delta.tool_started = finished_segment,
                Channel::ToolArguments => delta.tool_arguments = text,
            }
            if finished_segment {
                self.segment += 1;
                self.token = 0;
            }
        }
        delta
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Endpoint, Generation};
    use crate::tokenizer::PromptTokens;

    fn generation(instructions: &str) -> Generation {
        Generation {
            endpoint: Endpoint::Chat,
            model: "m".into(),
            stream: true,
            include_usage: true,
            seed: 42,
            prompt: PromptTokens::default(),
            instructions: instructions.into(),
            max_tokens: None,
            ignore_eos: false,
            thinking: false,
            response_schema: None,
            tool: None,
            return_token_ids: false,
        }
    }

    fn stream_all(plan: &ReplyPlan, step: usize) -> (String, String) {
        let mut cursor = ReplyCursor::default();
        let (mut reasoning, mut content) = (String::new(), String::new());
        while !cursor.is_done(plan) {
            let d = cursor.take(plan, step);
            reasoning.push_str(d.reasoning);
            content.push_str(d.content);
        }
        (reasoning, content)
    }

    #[test]
    fn canary_first_and_word_count() {
        let g = generation("Begin your reply with ANVIL_REQ_5_00007. Write about 40 words.");
        let plan = ReplyPlan::build(&g, &SimProfile::default(), &FaultDraw::default(), None);
        let content = plan.text_of(Channel::Content).unwrap();
        assert!(content.starts_with("ANVIL_REQ_5_00007 "));
        assert_eq!(content.matches("ANVIL_REQ_").count(), 1);
        assert_eq!(content.split_whitespace().count(), 41);
        assert_eq!(plan.total_tokens(), count_tokens(content));
    }

    #[test]
    fn streaming_in_any_step_size_rebuilds_the_text() {
        let mut g = generation("hello");
        g.thinking = true;
        let plan = ReplyPlan::build(&g, &SimProfile::default(), &FaultDraw::default(), None);
        for step in [1, 3, 7, 1000] {
            let (reasoning, content) = stream_all(&plan, step);
            assert_eq!(reasoning, plan.text_of(Channel::Reasoning).unwrap());
            assert_eq!(content, plan.text_of(Channel::Content).unwrap());
        }
    }

    #[test]
    fn max_tokens_cuts_with_length() {
        let mut g = generation("Write about 500 words.");
        g.max_tokens = Some(10);
        let plan = ReplyPlan::build(&g, &SimProfile::default(), &FaultDraw::default(), None);
        assert_eq!(plan.total_tokens(), 10);
        assert_eq!(plan.finish_reason, FinishReason::Length);
    }

    #[test]
    fn ignore_eos_runs_to_max_tokens() {
        let mut g = generation("Write about 3 words.");
        g.max_tokens = Some(300);
        g.ignore_eos = true;
        let plan = ReplyPlan::build(&g, &SimProfile::default(), &FaultDraw::default(), None);
        assert_eq!(plan.total_tokens(), 300);
        g.ignore_eos = false;
        assert!(
            ReplyPlan::build(&g, &SimProfile::default(), &FaultDraw::default(), None).total_tokens() < 300
        );
    }

    #[test]
    fn canary_leak_adds_a_second_marker() {
        let g = generation("Begin your reply with ANVIL_REQ_5_00007.");
        let faults = FaultDraw { canary_leak: true, ..FaultDraw::default() };
        let plan = ReplyPlan::build(&g, &SimProfile::default(), &faults, None);
        let content = plan.text_of(Channel::Content).unwrap();
        assert!(content.starts_with("ANVIL_REQ_5_00007"));
        assert!(content.contains("ANVIL_REQ_5_00008"));
    }
}
