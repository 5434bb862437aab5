//! The words a prompt is built from when it must be token-exact: each is
//! exactly one token of the model's own tokenizer (a space and three
//! letters: " bat", " dog"), and any sequence of them tokenizes to the
//! sequence of their tokens, so a block of N words is N tokens wherever it
//! stands, and blocks laid end to end are their tokens laid end to end.
//!
//! Why this holds, and how it is checked rather than assumed: byte-level
//! BPE tokenizers (GPT-2's family, Llama 3, Qwen, SmolLM) first split text
//! into pre-tokens at every space before a letter, and merges never cross
//! a pre-token, so " bat dog" is always " bat" + " dog". SentencePiece
//! models merge on "▁bat▁dog" without a split, and some merges could cross.
//! So the alphabet is *verified*: a long seeded run of its words is
//! tokenized, and a word at a position where the tokens stop matching is
//! dropped (with its neighbour), until a run matches token for token. A
//! word that merges with a neighbour therefore never appears in a prompt.

use crate::error::TokenizerError;
use serde::{Deserialize, Serialize};

use crate::tokenizer::Tokenizer;

/// Three-letter candidates: consonant, vowel, consonant (1,620 of them;
/// SmolLM2's 49k vocabulary has 603 as single tokens, larger ones more).
const CONSONANTS: &[u8] = b"bcdfghjklmnprstvwz";
const VOWELS: &[u8] = b"aeiou";

/// Fewer single-token words than this make prompts too repetitive to be
/// unique (and say the tokenizer is not one this construction fits).
pub const MIN_WORDS: usize = 64;

/// Words in one verification run.
const CHECK_RUN_WORDS: usize = 4096;
/// Verification rounds before giving up on a tokenizer that keeps merging.
const MAX_ROUNDS: usize = 32;

/// The verified words and their ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenAlphabet {
    words: Vec<String>,
    ids: Vec<u32>,
    /// Candidates that were one token alone but merged with a neighbour.
    merging: Vec<String>,
    candidates: usize,
    digest: String,
}

/// The artifact's account of an alphabet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlphabetSummary {
    pub candidates: usize,
    pub words: usize,
    /// Single-token words dropped because they merged with a neighbour.
    pub dropped_merging: Vec<String>,
    /// blake3 of the words and their ids, in order: two runs that built
    /// prompts from the same alphabet share it.
    pub blake3: String,
    pub verified_run_words: usize,
}

/// The candidate words, in a fixed order.
pub fn candidates() -> Vec<String> {
    let mut out = Vec::with_capacity(CONSONANTS.len() * VOWELS.len() * CONSONANTS.len());
    for &a in CONSONANTS {
        for &b in VOWELS {
            for &c in CONSONANTS {
                out.push(format!(" {}{}{}", a as char, b as char, c as char));
            }
        }
    }
    out
}

/// A tiny seeded generator for the verification runs (xorshift64*).
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

impl TokenAlphabet {
    /// Finds and verifies the alphabet of `tokenizer`.
    pub async fn discover(tokenizer: &Tokenizer) -> crate::error::Result<Self> {
        let candidates = candidates();
        let encoded = tokenizer.encode_many(&candidates).await?;
        let mut words = Vec::new();
        let mut ids: Vec<u32> = Vec::new();
        for (word, tokens) in candidates.iter().zip(encoded) {
            if let [id] = tokens[..]
                && !ids.contains(&id)
            {
                words.push(word.clone());
                ids.push(id);
            }
        }
        let mut alphabet =
            Self { words, ids, merging: Vec::new(), candidates: candidates.len(), digest: String::new() };
        alphabet.verify(tokenizer).await?;
        alphabet.digest = alphabet.compute_digest();
        Ok(alphabet)
    }

    /// Drops words until a seeded run of them tokenizes token for token.
    async fn verify(&mut self, tokenizer: &Tokenizer) -> crate::error::Result<()> {
        for round in 0..MAX_ROUNDS {
            if self.words.len() < MIN_WORDS {
                return Err(TokenizerError::Alphabet(format!(
                    "the tokenizer has only {} three-letter words that are one token each and keep \
                     their tokens side by side (of {} candidates; {MIN_WORDS} needed): token-exact \
                     prompts cannot be built from it",
                    self.words.len(),
                    self.candidates
                )));
            }
            let (picks, first_difference) = self.check_run(tokenizer, round).await?;
            let Some(at) = first_difference else { return Ok(()) };
            // The word where the tokens part, and the one before it: one of them merged.
            let mut culprits: Vec<usize> = [at.checked_sub(1), Some(at)]
                .into_iter()
                .flatten()
                .filter_map(|p| picks.get(p).copied())
                .collect();
            culprits.sort_unstable();
            culprits.dedup();
            for &k in culprits.iter().rev() {
                self.merging.push(self.words.remove(k));
                self.ids.remove(k);
            }
        }
        Err(TokenizerError::Alphabet(format!(
            "the tokenizer still merged its one-token words after {MAX_ROUNDS} rounds of dropping them: \
             token-exact prompts cannot be built from it"
        )))
    }

    /// Round `round`'s seeded run of the words, tokenized: the words picked,
    /// and where (if anywhere) the tokens stop being theirs.
    async fn check_run(
        &self,
        tokenizer: &Tokenizer,
        round: usize,
    ) -> crate::error::Result<(Vec<usize>, Option<usize>)> {
        let mut state = 0x9E37_79B9_7F4A_7C15 ^ round as u64;
        let picks: Vec<usize> =
            (0..CHECK_RUN_WORDS).map(|_| (next(&mut state) % self.words.len() as u64) as usize).collect();
        let text: String = picks.iter().map(|&k| self.words[k].as_str()).collect();
        let got = tokenizer.encode(&text).await?;
        let first_difference = picks
            .iter()
            .zip(&got)
            .position(|(&k, &id)| self.ids[k] != id)
            .or_else(|| (got.len() != picks.len()).then(|| picks.len().min(got.len())));
        Ok((picks, first_difference))
    }

    /// Whether an alphabet found before still holds for `tokenizer`: one
    /// seeded run of its words tokenizes to their ids, token for token (one
    /// request to a server, where finding the alphabet again takes ~1,600).
    pub async fn holds_for(&self, tokenizer: &Tokenizer) -> crate::error::Result<bool> {
        Ok(self.check_run(tokenizer, 0).await?.1.is_none())
    }

    fn compute_digest(&self) -> String {
        let mut hasher = blake3::Hasher::new();
        for (word, id) in self.words.iter().zip(&self.ids) {
            hasher.update(word.as_bytes());
            hasher.update(&id.to_le_bytes());
        }
        format!("blake3:{}", hasher.finalize().to_hex())
    }

    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The word a draw `r` picks, with its token id.
    pub fn pick(&self, r: u64) -> (&str, u32) {
        let k = (r % self.words.len() as u64) as usize;
        (&self.words[k], self.ids[k])
    }

    pub fn digest(&self) -> &str {
        &self.digest
    }

    pub fn summary(&self) -> AlphabetSummary {
        AlphabetSummary {
            candidates: self.candidates,
            words: self.words.len(),
            dropped_merging: self.merging.clone(),
            blake3: self.digest.clone(),
            verified_run_words: CHECK_RUN_WORDS,
        }
    }

    /// An alphabet from given words and ids (tests of what builds on it).
    pub fn from_words(words: Vec<(String, u32)>) -> Self {
        let (words, ids) = words.into_iter().unzip();
        let mut alphabet = Self { words, ids, merging: Vec::new(), candidates: 0, digest: String::new() };
        alphabet.digest = alphabet.compute_digest();
        alphabet
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_fixed_and_distinct() {
        let c = candidates();
        assert_eq!(c.len(), 1620);
        assert_eq!(c[0], " bab");
        let mut sorted = c.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), c.len());
    }
}
