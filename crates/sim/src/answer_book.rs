//! Answers of known quality, so that answer scoring and arm comparisons
//! are tested without a model (`answers { … }` in the profile):
//!
//! - with `dataset` (a scored dataset: `format` `anvil`, `gsm8k` or
//!   `mmlu`), a prompt that is one of its items gets a short reply that
//!   its scorer calls right for a share `accuracy` of the items, and wrong
//!   for the others. Which items: a draw per item id and profile `seed`,
//!   so one seed answers the same items right on every run, and two seeds
//!   answer independently;
//! - with `diverge-rate`, that share of prompts (any prompt: a draw on its
//!   text alone, whatever the seed) gets its reply changed from its middle
//!   word on, as a lossy kernel or draft model would change a greedy
//!   output: an arm with `diverge-rate 0.2` against one without differs
//!   on a fifth of the prompts, each from a known word.

use std::collections::HashMap;

use anvil_quality::{Item, Scorer};

use crate::error::{ProfileError, SimError};
use crate::profile::SimProfile;
use crate::rng::{SimRng, derive_seed};

/// The word a diverged reply carries at its divergence.
pub const DIVERGED_WORD: &str = "otherwise";

/// The answers a sim gives, read once when it starts.
#[derive(Debug, Default)]
pub struct AnswerBook {
    by_prompt: HashMap<String, Item>,
    accuracy: f64,
    diverge_rate: f64,
    seed: u64,
}

impl AnswerBook {
    /// The profile's book, `None` when it asks for nothing.
    pub fn load(profile: &SimProfile) -> Result<Option<Self>, SimError> {
        let answers = &profile.answers;
        if answers.dataset.is_none() && answers.diverge_rate == 0.0 {
            return Ok(None);
        }
        let mut by_prompt = HashMap::new();
        if let Some(path) = &answers.dataset {
            let bad = |reason: String| {
                SimError::InvalidProfile(ProfileError::BadValue {
                    key: "answers.dataset".into(),
                    value: path.clone(),
                    reason,
                })
            };
            let format = anvil_quality::Format::from_word(&answers.format)
                .ok_or_else(|| bad(format!("format `{}` is not anvil, gsm8k or mmlu", answers.format)))?;
            let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
            let items = anvil_quality::read(format, &text).map_err(|e| bad(e.to_string()))?;
            by_prompt = items.into_iter().map(|item| (item.prompt.clone(), item)).collect();
        }
        Ok(Some(Self {
            by_prompt,
            accuracy: answers.accuracy,
            diverge_rate: answers.diverge_rate,
            seed: profile.seed,
        }))
    }

    /// The reply to `prompt` when it is an item of the dataset: right or
    /// wrong as its draw says.
    pub fn reply(&self, prompt: &str) -> Option<String> {
        let item = self.by_prompt.get(prompt)?;
        let draw = derive_seed(&[b"answer", &self.seed.to_le_bytes(), item.id.as_bytes()]);
        Some(if SimRng::new(draw).chance(self.accuracy) { right(item) } else { wrong(item) })
    }

    /// `text` as this sim replies to `prompt`: changed from its middle
    /// word on for a share `diverge-rate` of prompts.
    pub fn diverged(&self, prompt: &str, text: String) -> String {
        let draw = derive_seed(&[b"diverge", prompt.as_bytes()]);
        if !SimRng::new(draw).chance(self.diverge_rate) {
            return text;
        }
        let mut words: Vec<&str> = text.split(' ').collect();
        let middle = words.len() / 2;
        words.truncate(middle);
        words.push(DIVERGED_WORD);
        words.join(" ")
    }
}

/// A reply the item's scorer calls right.
fn right(item: &Item) -> String {
    match item.scorer {
        Scorer::Number => format!("The answer is {}", item.reference),
        Scorer::Choice => format!("Answer: {}", item.reference),
        Scorer::Exact => item.reference.clone(),
        // The pattern's own text without its anchors: right when the rest
        // is literal (`^Paris\b`), not for a pattern that only describes.
        Scorer::Regex => item.reference.replace("(?i)", "").replace("\\b", "").replace(['^', '$'], ""),
    }
}

/// A reply the item's scorer calls wrong (a pattern that matches anything
/// cannot be answered wrong: it gets "I cannot say").
fn wrong(item: &Item) -> String {
    let candidate = match item.scorer {
        Scorer::Number => format!("The answer is {}", off_by_one(&item.reference)),
        Scorer::Choice => format!("Answer: {}", if item.reference == "A" { "B" } else { "A" }),
        Scorer::Exact => format!("not {}", item.reference),
        Scorer::Regex => String::new(),
    };
    if !candidate.is_empty() && !anvil_quality::score(item, &candidate).correct {
        candidate
    } else {
        "I cannot say".to_string()
    }
}

/// A number near `reference` but not equal to it.
fn off_by_one(reference: &str) -> String {
    let normal = anvil_quality::number::normalise(reference).unwrap_or_else(|| reference.to_string());
    match normal.parse::<i128>() {
        Ok(whole) => (whole + 1).to_string(),
        Err(_) => format!("{normal}1"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARITH: &str = include_str!("../../../datasets/arith-v1.jsonl");

    fn book(accuracy: f64, seed: u64) -> AnswerBook {
        let items = anvil_quality::read_anvil(ARITH).unwrap();
        AnswerBook {
            by_prompt: items.into_iter().map(|i| (i.prompt.clone(), i)).collect(),
            accuracy,
            diverge_rate: 0.0,
            seed,
        }
    }

    /// The share of the shipped items the book answers right, as scored.
    fn scored_share(book: &AnswerBook) -> (u64, u64) {
        let items = anvil_quality::read_anvil(ARITH).unwrap();
        let right = items.iter().filter(|i| anvil_quality::score(i, &book.reply(&i.prompt).unwrap()).correct);
        (right.count() as u64, items.len() as u64)
    }

    #[test]
    fn every_item_answered_right_or_wrong_as_asked() {
        assert_eq!(scored_share(&book(1.0, 3)), (200, 200));
        assert_eq!(scored_share(&book(0.0, 3)), (0, 200));
        for scorer in [Scorer::Exact, Scorer::Choice, Scorer::Number, Scorer::Regex] {
            let reference = match scorer {
                Scorer::Choice => "A",
                Scorer::Number => "-2.5",
                Scorer::Regex => "(?i)^Paris\\b",
                Scorer::Exact => "Paris",
            };
            let item = Item { id: "x".into(), prompt: "?".into(), reference: reference.into(), scorer };
            assert!(anvil_quality::score(&item, &right(&item)).correct, "{scorer:?}");
            assert!(!anvil_quality::score(&item, &wrong(&item)).correct, "{scorer:?}");
        }
    }

    /// The draws are Bernoulli(accuracy), one per item and seed: pooled
    /// over 100 seeds × 200 items, the right share's 99.9% Clopper–Pearson
    /// interval holds the set accuracy; and two seeds draw independently
    /// (an item agrees with chance 0.7² + 0.3² = 0.58).
    #[test]
    fn the_set_accuracy_is_what_the_seeds_draw() {
        let accuracy = 0.7;
        let (right, n) = (0..100u64)
            .map(|seed| scored_share(&book(accuracy, seed)))
            .fold((0, 0), |(r, n), (right, items)| (r + right, n + items));
        let (low, high) = anvil_quality::share_interval(right, n, 0.999);
        assert!(low < accuracy && accuracy < high, "{right} of {n} right: [{low}, {high}]");
        let items = anvil_quality::read_anvil(ARITH).unwrap();
        let (a, b) = (book(accuracy, 1), book(accuracy, 2));
        let agree = items.iter().filter(|i| a.reply(&i.prompt) == b.reply(&i.prompt)).count() as u64;
        let (low, high) = anvil_quality::share_interval(agree, 200, 0.999);
        assert!(low < 0.58 && 0.58 < high, "{agree} of 200 agree");
    }

    #[test]
    fn divergence_from_the_middle_word_on_a_share_of_prompts() {
        let mut book = book(1.0, 0);
        book.diverge_rate = 0.25;
        let text = "one two three four five six".to_string();
        let prompts: Vec<String> = (0..400).map(|i| format!("prompt {i}")).collect();
        let changed: Vec<String> =
            prompts.iter().map(|p| book.diverged(p, text.clone())).filter(|t| *t != text).collect();
        assert_eq!(changed[0], "one two three otherwise");
        let (low, high) = anvil_quality::share_interval(changed.len() as u64, 400, 0.999);
        assert!(low < 0.25 && 0.25 < high, "{} of 400 diverged", changed.len());
        book.seed = 9;
        let again = prompts.iter().filter(|p| book.diverged(p, text.clone()) != text).count();
        assert_eq!(again, changed.len(), "the same prompts whatever the seed");
    }
}
