//! Scoring one output against its item's reference.

use regex::Regex;
use serde::Serialize;

use crate::choice::{answer_letter, reference_letter};
use crate::item::{Item, Scorer};
use crate::number::{answer_number, reference_number};

/// One output scored: whether it is right, and what the scorer read from
/// it (the normalised text, number or letter; the regex's first match),
/// `None` when it read nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Scored {
    pub correct: bool,
    pub extracted: Option<String>,
}

/// Scores `output` against `item` by the item's scorer:
///
/// - **exact**: the output and the reference, each trimmed, lowercased and
///   with every run of whitespace made one space, are equal (`" Paris\n"`
///   and `"paris"` are; `"Paris."` and `"Paris"` are not). Extracted: the
///   normalised output.
/// - **number**: the output's answer number ([`answer_number`]: the first
///   number after the last `####` or `answer is`, else the last number;
///   commas removed) equals the reference as an exact decimal (`42.0` =
///   `42` = `042`).
/// - **choice**: the letter the output names ([`answer_letter`]: the last
///   explicit `Answer: B`, else the last bare `(B)`, `B.` or lone `B`)
///   equals the reference letter.
/// - **regex**: the reference, a regular expression (the `regex` crate's
///   syntax; `(?i)` for any case), matches anywhere in the output.
///   Extracted: its first match.
///
/// A reference its scorer cannot read (not a number, not a letter, not a
/// pattern; the readers refuse these) scores every output as wrong.
pub fn score(item: &Item, output: &str) -> Scored {
    match item.scorer {
        Scorer::Exact => {
            let said = normalise_text(output);
            Scored { correct: said == normalise_text(&item.reference), extracted: Some(said) }
        }
        Scorer::Number => {
            let said = answer_number(output);
            let correct = said.is_some() && said == reference_number(&item.reference);
            Scored { correct, extracted: said }
        }
        Scorer::Choice => {
            let said = answer_letter(output);
            let correct = said.is_some() && said == reference_letter(&item.reference);
            Scored { correct, extracted: said.map(String::from) }
        }
        Scorer::Regex => {
            let found =
                Regex::new(&item.reference).ok().and_then(|r| r.find(output).map(|m| m.as_str().to_string()));
            Scored { correct: found.is_some(), extracted: found }
        }
    }
}

/// Trimmed, lowercased, each run of whitespace one space.
pub fn normalise_text(text: &str) -> String {
    text.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::score;
    use crate::item::{Item, Scorer};

    fn item(scorer: Scorer, reference: &str) -> Item {
        Item { id: "q".into(), prompt: "?".into(), reference: reference.into(), scorer }
    }

    fn right(scorer: Scorer, reference: &str, output: &str) -> bool {
        score(&item(scorer, reference), output).correct
    }

    #[test]
    fn exact() {
        assert!(right(Scorer::Exact, "Paris", "  paris\n"));
        assert!(right(Scorer::Exact, "New York", "new\t\n  YORK"));
        assert!(!right(Scorer::Exact, "Paris", "Paris."));
        assert!(!right(Scorer::Exact, "Paris", "Paris, France"));
        assert!(!right(Scorer::Exact, "Paris", ""));
        assert_eq!(score(&item(Scorer::Exact, "x"), " A  B ").extracted.as_deref(), Some("a b"));
    }

    #[test]
    fn number() {
        assert!(right(Scorer::Number, "42", "So the total is 42.0"));
        assert!(right(Scorer::Number, "1000", "#### 1,000"));
        assert!(right(Scorer::Number, "1,000", "she pays 1000 dollars"));
        assert!(right(Scorer::Number, "12", "The answer is 12 because 3 x 4 = 12, not 13"));
        assert!(!right(Scorer::Number, "12", "3 x 4 = 12, not 13"), "the last number");
        assert!(!right(Scorer::Number, "7", "seven"));
        assert!(!right(Scorer::Number, "7", ""));
        assert!(!right(Scorer::Number, "-7", "7"));
        // A reference that is no number: nothing is right, even nothing.
        assert!(!right(Scorer::Number, "many", "many"));
        assert!(!right(Scorer::Number, "many", ""));
        assert_eq!(score(&item(Scorer::Number, "5"), "#### 5.50").extracted.as_deref(), Some("5.5"));
    }

    #[test]
    fn choice() {
        assert!(right(Scorer::Choice, "B", "Answer: B"));
        assert!(right(Scorer::Choice, "b", "(B)"));
        assert!(!right(Scorer::Choice, "B", "b"));
        assert!(!right(Scorer::Choice, "B", "A. x\nB. y\nAnswer: C"));
        assert!(!right(Scorer::Choice, "B", "I don't know"));
        assert!(!right(Scorer::Choice, "Z", "Z"), "a reference past J");
    }

    #[test]
    fn regex() {
        assert!(right(Scorer::Regex, r"\bParis\b", "It is Paris, of course"));
        assert!(!right(Scorer::Regex, r"\bParis\b", "Parisian"));
        assert!(right(Scorer::Regex, r"(?i)^\s*yes", "  YES it is"));
        assert!(!right(Scorer::Regex, "(unclosed", "(unclosed"), "a pattern that does not compile");
        assert_eq!(score(&item(Scorer::Regex, "[0-9]+"), "a 12 b 34").extracted.as_deref(), Some("12"));
    }
}
