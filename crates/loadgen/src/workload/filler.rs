//! The words a prompt's length is counted in. Without a tokenizer they are
//! four-letter words, one token each as the simulated engine counts them
//! (a real tokenizer counts them otherwise: lengths are then the server's
//! calibrated approximation). With one, they are its [`TokenAlphabet`]:
//! each word exactly one of the model's tokens, and any run of them its
//! tokens laid end to end, so a prompt of N words is N tokens.

use std::sync::Arc;

use anvil_tokens::TokenAlphabet;

use crate::workload::split_mix::SplitMix64;

#[derive(Debug, Clone, Default)]
pub enum Filler {
    #[default]
    SimWords,
    Tokens(Arc<TokenAlphabet>),
}

impl Filler {
    /// Appends `count` words drawn from `rng`.
    pub fn push(&self, out: &mut String, rng: &mut SplitMix64, count: u64) {
        match self {
            Self::SimWords => push_exact_words(out, rng, count),
            Self::Tokens(alphabet) => {
                for _ in 0..count {
                    out.push_str(alphabet.pick(rng.next_u64()).0);
                }
            }
        }
    }

    /// Whether a word is exactly one of the served model's tokens.
    pub fn is_token_exact(&self) -> bool {
        matches!(self, Self::Tokens(_))
    }
}

/// Words of exactly four letters, so the sim counts one token per word
/// (`crates/sim/src/tokenizer.rs`) and a block of N words is N tokens.
pub fn push_exact_words(out: &mut String, rng: &mut SplitMix64, count: u64) {
    const LETTERS: &[u8; 20] = b"abdefghiklmnoprstuvz";
    for _ in 0..count {
        let r = rng.next_u64();
        for s in 0..4 {
            out.push(LETTERS[((r >> (16 * s)) % LETTERS.len() as u64) as usize] as char);
        }
        out.push(' ');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_words_are_one_sim_token_each() {
        let mut text = String::new();
        push_exact_words(&mut text, &mut SplitMix64::new(1, 2), 100);
        assert_eq!(text.split_whitespace().count(), 100);
        assert!(text.split_whitespace().all(|w| w.len() == 4));
    }

    #[test]
    fn token_words_are_the_alphabets() {
        let alphabet = TokenAlphabet::from_words(vec![(" bat".into(), 1), (" dog".into(), 2)]);
        let filler = Filler::Tokens(Arc::new(alphabet));
        let mut text = String::new();
        filler.push(&mut text, &mut SplitMix64::new(1, 2), 50);
        assert_eq!(text.split(' ').filter(|w| !w.is_empty()).count(), 50);
        assert!(text.split(' ').all(|w| w.is_empty() || w == "bat" || w == "dog"), "{text}");
        assert!(text.starts_with(' ') && filler.is_token_exact());
    }
}
