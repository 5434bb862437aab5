//! Deterministic synthetic prompts.
//!
//! Prompt text is made of pseudo-words drawn from a seeded generator, so the
//! same campaign seed always yields the same prompts, and every request's
//! prompt is different from its first token on (unless a shared prefix is
//! asked for). Length is expressed in words; [`crate::workload::calibrate`] finds the
//! word count that gives the planned token count as the server counts it.

use crate::workload::filler::Filler;
use crate::workload::spec::PromptCacheMode;

/// The canary marker of request `index` under campaign `seed`.
pub fn marker(seed: u64, index: u64) -> String {
    format!("ANVIL_REQ_{seed}_{index:05}")
}

pub use crate::workload::split_mix::SplitMix64;

/// Generator streams, so prompts, prefixes and arrivals never share draws.
pub mod streams {
    pub const SHARED_PREFIX: u64 = 1;
    pub const ARRIVALS: u64 = 2;
    /// Request `i` uses stream `REQUEST_BASE + i`.
    pub const REQUEST_BASE: u64 = 1 << 32;
}

/// Every filler word is two of these: words of one shape cost nearly the
/// same number of tokens each, so prompts of equal word count have nearly
/// equal token counts (calibration depends on that).
const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "re", "to", "ve", "sa", "qu", "du", "be", "fe", "no", "pe", "za", "ti", "go", "an",
    "me", "ul", "ri", "do", "ba", "hi", "ce",
];

fn push_words(out: &mut String, rng: &mut SplitMix64, count: u64) {
    for w in 0..count {
        let r = rng.next_u64();
        for s in 0..2 {
            out.push_str(SYLLABLES[((r >> (8 + 8 * s)) % SYLLABLES.len() as u64) as usize]);
        }
        // Sentences of about a dozen words keep tokenizers on ordinary text paths.
        out.push_str(if w % 12 == 11 { ". " } else { " " });
    }
}

/// Builds the prompt text of each request.
#[derive(Debug, Clone)]
pub struct PromptBuilder {
    /// The campaign seed: the canary markers' (a check of a reply knows only it).
    pub seed: u64,
    /// Mixed into the filler words' seed when not 0 (`prompt-salt`).
    pub salt: u64,
    pub mode: PromptCacheMode,
    pub context_tokens: u64,
    pub canaries: bool,
    pub response_words: u32,
    /// Filler words in the whole prompt (set by calibration).
    pub words: u64,
    /// The words themselves: with a tokenizer, one token each, and then
    /// [`Self::build`] makes prompts of exactly `context_tokens` tokens.
    pub filler: Filler,
    /// With a tokenizer: the tokens of the closing instructions (measured
    /// with it before the run), counted in `context_tokens`.
    pub instruction_tokens: u64,
}

impl PromptBuilder {
    /// The instruction sentence(s) closing the prompt.
    pub fn instructions(&self, index: u64) -> String {
        let mut s = String::new();
        if self.canaries {
            s.push_str(&format!("Begin your reply with {}. ", marker(self.seed, index)));
        }
        if self.response_words > 0 {
            s.push_str(&format!("Write about {} words.", self.response_words));
        }
        s.trim_end().to_string()
    }

    /// The seed of the filler words: the campaign's, or salted.
    fn text_seed(&self) -> u64 {
        if self.salt == 0 { self.seed } else { SplitMix64::new(self.seed, self.salt).next_u64() }
    }

    /// Words of the shared prefix (zero in unique mode).
    fn prefix_words(&self) -> u64 {
        match self.mode {
            PromptCacheMode::Unique => 0,
            PromptCacheMode::SharedPrefix { prefix_tokens } => {
                let share = prefix_tokens.min(self.context_tokens) as f64 / self.context_tokens.max(1) as f64;
                (self.words as f64 * share).round() as u64
            }
        }
    }

    /// The text after the words: a blank line and the instructions (empty without any).
    pub fn closing(&self, index: u64) -> String {
        let instructions = self.instructions(index);
        match instructions.is_empty() {
            true => instructions,
            false => format!("\n\n{instructions}"),
        }
    }

    /// The full text of request `index`: [shared prefix] unique tag, filler, instructions.
    pub fn build(&self, index: u64) -> String {
        if self.filler.is_token_exact() {
            return self.build_token_exact(index);
        }
        let mut text = String::with_capacity(self.words as usize * 7 + 128);
        let prefix_words = self.prefix_words();
        if prefix_words > 0 {
            push_words(
                &mut text,
                &mut SplitMix64::new(self.text_seed(), streams::SHARED_PREFIX),
                prefix_words,
            );
            text.push('\n');
        }
        let mut rng = SplitMix64::new(self.text_seed(), streams::REQUEST_BASE + index);
        // A random tag first, so no two requests share even their first token.
        text.push_str(&format!("Record {:016x}: ", rng.next_u64()));
        push_words(&mut text, &mut rng, self.words.saturating_sub(prefix_words).max(1));
        text.push_str(&self.closing(index));
        text
    }
}

impl PromptBuilder {
    /// Exactly `context_tokens` tokens: `prefix_tokens` words shared by
    /// every request, this request's own words, then the closing
    /// instructions (`instruction_tokens` of them). No tag or line break
    /// stands between the words: each would be tokens of its own.
    fn build_token_exact(&self, index: u64) -> String {
        let words = self.context_tokens.saturating_sub(self.instruction_tokens).max(1);
        let prefix = match self.mode {
            PromptCacheMode::Unique => 0,
            PromptCacheMode::SharedPrefix { prefix_tokens } => prefix_tokens.min(words),
        };
        let mut text = String::with_capacity(words as usize * 4 + 96);
        let mut shared = SplitMix64::new(self.text_seed(), streams::SHARED_PREFIX);
        self.filler.push(&mut text, &mut shared, prefix);
        let mut own = SplitMix64::new(self.text_seed(), streams::REQUEST_BASE + index);
        self.filler.push(&mut text, &mut own, words - prefix);
        text.push_str(&self.closing(index));
        text
    }

    /// Content tokens of every synthetic prompt, when they are exact.
    pub fn exact_tokens(&self) -> Option<u64> {
        self.filler.is_token_exact().then(|| self.context_tokens.max(self.instruction_tokens + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder(mode: PromptCacheMode) -> PromptBuilder {
        PromptBuilder {
            seed: 17,
            salt: 0,
            mode,
            context_tokens: 1000,
            canaries: true,
            response_words: 50,
            words: 400,
            filler: Filler::SimWords,
            instruction_tokens: 0,
        }
    }

    #[test]
    fn deterministic_and_unique_from_the_first_token() {
        let b = builder(PromptCacheMode::Unique);
        assert_eq!(b.build(3), b.build(3));
        let (a, c) = (b.build(3), b.build(4));
        assert_ne!(a.split(' ').nth(1), c.split(' ').nth(1), "tags differ");
        assert!(a.ends_with("Begin your reply with ANVIL_REQ_17_00003. Write about 50 words."));
    }

    #[test]
    fn shared_prefix_is_identical() {
        let b = builder(PromptCacheMode::SharedPrefix { prefix_tokens: 500 });
        let (a, c) = (b.build(0), b.build(1));
        let prefix_a = a.split('\n').next().unwrap();
        assert_eq!(prefix_a, c.split('\n').next().unwrap());
        assert_eq!(prefix_a.split_whitespace().count(), 200);
        assert_ne!(a, c);
    }

    #[test]
    fn a_salt_changes_the_words_but_not_the_marker() {
        let plain = builder(PromptCacheMode::SharedPrefix { prefix_tokens: 500 });
        let salted = PromptBuilder { salt: 4001, ..plain.clone() };
        let (a, b) = (plain.build(3), salted.build(3));
        assert_ne!(a.split('\n').next(), b.split('\n').next(), "another shared prefix");
        assert_ne!(a.split(' ').nth(1), b.split(' ').nth(1), "another tag");
        assert!(b.ends_with("Begin your reply with ANVIL_REQ_17_00003. Write about 50 words."));
        assert_eq!(salted.build(3), b, "deterministic");
    }

    #[test]
    fn token_exact_prompts_count_their_words_and_instructions() {
        let alphabet = anvil_tokens::TokenAlphabet::from_words(vec![(" bat".into(), 1), (" dog".into(), 2)]);
        let exact = PromptBuilder {
            filler: Filler::Tokens(std::sync::Arc::new(alphabet)),
            instruction_tokens: 30,
            ..builder(PromptCacheMode::SharedPrefix { prefix_tokens: 500 })
        };
        let (a, b) = (exact.build(0), exact.build(1));
        let words = |p: &str| p.split("\n\n").next().unwrap().split_whitespace().count();
        assert_eq!((words(&a), words(&b)), (970, 970), "1000 tokens less the instructions' 30");
        let shared = |p: &str| p.split_whitespace().take(500).collect::<Vec<_>>().join(" ");
        assert_eq!(shared(&a), shared(&b), "the first 500 tokens are shared");
        assert_ne!(a, b);
        assert!(a.ends_with("\n\nBegin your reply with ANVIL_REQ_17_00000. Write about 50 words."));
        assert_eq!(exact.exact_tokens(), Some(1000));
        assert_eq!(builder(PromptCacheMode::Unique).exact_tokens(), None);
    }

    #[test]
    fn marker_is_zero_padded() {
        assert_eq!(marker(17, 3), "ANVIL_REQ_17_00003");
        assert_eq!(marker(1, 123456), "ANVIL_REQ_1_123456");
    }
}
