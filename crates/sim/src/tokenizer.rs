//! The sim's documented tokenizer model (see `docs/sim.md`).
//!
//! A token is up to four characters of one whitespace-separated word: a word
//! of `n` characters is `ceil(n / 4)` tokens. Chat prompts add
//! `MESSAGE_OVERHEAD_TOKENS` per message and `REPLY_PRIMER_TOKENS` once, like
//! a chat template's role markers. Whitespace itself is free.

use std::hash::{DefaultHasher, Hash, Hasher};

/// Characters per token inside one word.
pub const CHARS_PER_TOKEN: usize = 4;
/// Tokens a chat template adds around each message (role markers).
pub const MESSAGE_OVERHEAD_TOKENS: u32 = 4;
/// Tokens that open the assistant's reply in a chat prompt.
pub const REPLY_PRIMER_TOKENS: u32 = 3;
/// Tokens a completions prompt gets for the beginning-of-sequence marker.
pub const BOS_TOKENS: u32 = 1;

/// Tokens in `text` under the model above (no template overhead).
pub fn count_tokens(text: &str) -> u32 {
    let tokens: usize = text.split_whitespace().map(word_tokens).sum();
    u32::try_from(tokens).unwrap_or(u32::MAX)
}

/// Tokens in one word.
pub fn word_tokens(word: &str) -> usize {
    word.chars().count().div_ceil(CHARS_PER_TOKEN)
}

/// Split text into token pieces: each piece is one token's text, with the
/// whitespace before a word attached to the word's first piece.
/// Appends the end offset of each token to `token_ends`.
pub fn push_token_ends(text: &str, base: usize, token_ends: &mut Vec<usize>) {
    let mut in_word_chars = 0usize;
    let mut pending = false;
    for (offset, ch) in text.char_indices() {
        if ch.is_whitespace() {
            if pending {
                token_ends.push(base + offset);
                pending = false;
            }
            in_word_chars = 0;
            continue;
        }
        if in_word_chars > 0 && in_word_chars.is_multiple_of(CHARS_PER_TOKEN) && pending {
            token_ends.push(base + offset);
        }
        in_word_chars += 1;
        pending = true;
    }
    if pending {
        token_ends.push(base + text.len());
    }
}

/// The ids of `text`'s tokens: each token's text (with the whitespace
/// before it) hashed into 31 bits, so equal pieces share an id.
pub fn token_ids(text: &str) -> Vec<u32> {
    let mut ends = Vec::new();
    push_token_ends(text, 0, &mut ends);
    let mut start = 0;
    ends.into_iter()
        .map(|end| {
            let mut hasher = DefaultHasher::new();
            text[start..end].hash(&mut hasher);
            start = end;
            (hasher.finish() & 0x7fff_ffff) as u32
        })
        .collect()
}

/// A prompt as the engine sees it: its length and the identities of its
/// whole prefix-cache blocks (each hash covers the prompt up to that block).
#[derive(Debug, Clone, Default)]
pub struct PromptTokens {
    pub count: u32,
    pub block_hashes: Vec<u64>,
}

/// Builds a `PromptTokens` from text parts (e.g. role marker, then content).
pub struct PromptTokenizer {
    block_tokens: usize,
    count: u32,
    in_block: usize,
    hasher: DefaultHasher,
    block_hashes: Vec<u64>,
}

impl PromptTokenizer {
    pub fn new(block_tokens: u32) -> Self {
        Self {
            block_tokens: usize::try_from(block_tokens).unwrap_or(usize::MAX).max(1),
            count: 0,
            in_block: 0,
            hasher: DefaultHasher::new(),
            block_hashes: Vec::new(),
        }
    }

    /// Add `tokens` synthetic tokens named `label` (template overhead).
    pub fn push_special(&mut self, label: &str, tokens: u32) {
        for i in 0..tokens {
            (label, i).hash(&mut self.hasher);
            self.finish_token();
        }
    }

    /// Add the tokens of `text`.
    pub fn push_text(&mut self, text: &str) {
        for word in text.split_whitespace() {
            let chars: Vec<char> = word.chars().collect();
            for piece in chars.chunks(CHARS_PER_TOKEN) {
                piece.hash(&mut self.hasher);
                self.finish_token();
            }
        }
    }

    fn finish_token(&mut self) {
        self.count = self.count.saturating_add(1);
        self.in_block += 1;
        if self.in_block == self.block_tokens {
            // The running hash covers every token so far, so a block hash
            // names the whole prefix, not just this block.
            self.block_hashes.push(self.hasher.finish());
            self.in_block = 0;
        }
    }

    pub fn finish(self) -> PromptTokens {
        PromptTokens { count: self.count, block_hashes: self.block_hashes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_ids_name_the_pieces() {
        let ids = token_ids(" bat dog bat abcdefgh");
        assert_eq!(ids.len(), 5, "a word of 8 characters is 2 tokens");
        assert_eq!(ids[0], ids[2], "the same piece, the same id");
        assert_ne!(ids[0], ids[1]);
        assert_eq!(token_ids(" bat")[0], ids[0], "alone or in a run");
    }

    fn pieces(text: &str) -> Vec<&str> {
        let mut ends = Vec::new();
        push_token_ends(text, 0, &mut ends);
        let mut start = 0;
        ends.iter()
            .map(|&end| {
                let piece = &text[start..end];
                start = end;
                piece
            })
            .collect()
    }

    #[test]
    fn counts_words_by_four_chars() {
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("a bb ccc dddd"), 4);
        assert_eq!(count_tokens("  abcde\n fghijklmn "), 2 + 3);
        assert_eq!(count_tokens("ANVIL_REQ_17_00003"), 5);
    }

    #[test]
    fn pieces_agree_with_count() {
        let text = "ANVIL_REQ_1_00002 the quick brownish fox.";
        let p = pieces(text);
        assert_eq!(p.len() as u32, count_tokens(text));
        assert_eq!(p.concat(), text.trim_end());
        assert_eq!(p[0], "ANVI");
        assert_eq!(p[5], " the");
    }

    #[test]
    fn shared_prefix_shares_block_hashes() {
        let build = |tail: &str| {
            let mut t = PromptTokenizer::new(4);
            t.push_special("user", 2);
            t.push_text("one two three four five six seven");
            t.push_text(tail);
            t.finish()
        };
        let a = build("alpha beta gamma delta");
        let b = build("omega beta gamma delta");
        assert_eq!(a.count, 2 + 9 + 7);
        assert_eq!(a.block_hashes.len(), 4);
        assert_eq!(a.block_hashes[..2], b.block_hashes[..2]);
        assert_ne!(a.block_hashes[2], b.block_hashes[2]);
    }
}
