//! The choice scorer's rules: which letter an output names as its answer.

use std::sync::LazyLock;

use regex::Regex;

/// The letters a choice can have: A to J (MMLU has four choices, MMLU-Pro ten).
pub const LETTERS: &str = "ABCDEFGHIJ";

/// An explicit answer: `answer` (any case), then optionally `is`, a colon,
/// `option`/`choice`, and an opening `(`, `[` or `**`, then the letter
/// (uppercase) on a word boundary: `Answer: B`, `The answer is (C)`,
/// `the correct answer is option D`, `**Answer:** **A**`.
static EXPLICIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i:answer)(?:\s+is)?\s*:?\s*(?:\*\*)?\s*(?i:(?:option|choice)\s+)?(?:\(|\[|\*\*)?([A-J])\b")
        .expect("the explicit pattern compiles")
});

/// A bare letter: `(B)`; `B.`, `B)` or `B:` followed by a space or the
/// end; or a line that is the letter alone (around it only spaces, `*`
/// and a final `.`).
static BARE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)\(([A-J])\)|([A-J])[.):](?:\s|$)|^[ \t*]*([A-J])[ \t*]*\.?[ \t]*$")
        .expect("the bare pattern compiles")
});

/// The letter an output names as its answer, if any:
///
/// - an explicit answer (`Answer: B`, `the answer is (B)`, `answer is
///   option B`) wins over bare letters, and the last explicit one wins (a
///   model that corrects itself names its final answer last; options it
///   echoes before answering are not taken for the answer);
/// - otherwise the last bare letter: `(B)`, `B.` / `B)` / `B:` followed by
///   a space or the end and not glued to a letter, digit or point before
///   it (`U.S.A. ` names nothing), or a line that is the letter alone;
/// - letters are uppercase A–J: a lowercase `a` or the word `A` in `A cat`
///   names nothing, nor does `B is right` (a letter followed by a word).
pub fn answer_letter(output: &str) -> Option<char> {
    let letter = |c: regex::Captures<'_>| {
        c.iter().skip(1).flatten().next().map(|m| (m.start(), m.as_str().chars().next().unwrap_or('?')))
    };
    if let Some((_, l)) = EXPLICIT.captures_iter(output).filter_map(letter).last() {
        return Some(l);
    }
    BARE.captures_iter(output)
        .filter_map(letter)
        .filter(|&(at, _)| !output[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '.'))
        .map(|(_, l)| l)
        .last()
}

/// A reference letter: one letter A–J, either case, around it only spaces.
pub fn reference_letter(text: &str) -> Option<char> {
    let mut chars = text.trim().chars();
    let letter = chars.next()?.to_ascii_uppercase();
    (chars.next().is_none() && LETTERS.contains(letter)).then_some(letter)
}

#[cfg(test)]
mod tests {
    use super::{answer_letter, reference_letter};

    /// The letter an output names, `-` for none.
    fn letter(output: &str) -> char {
        answer_letter(output).unwrap_or('-')
    }

    #[test]
    fn the_forms_of_a_letter() {
        assert_eq!(letter("B"), 'B');
        assert_eq!(letter("  B\n"), 'B');
        assert_eq!(letter("**C**"), 'C');
        assert_eq!(letter("D."), 'D');
        assert_eq!(letter("(A)"), 'A');
        assert_eq!(letter("B) Paris"), 'B');
        assert_eq!(letter("Answer: C"), 'C');
        assert_eq!(letter("The answer is (D)."), 'D');
        assert_eq!(letter("The correct answer is option B because"), 'B');
        assert_eq!(letter("**Answer:** **A**"), 'A');
        assert_eq!(letter("answer: [C]"), 'C');
    }

    #[test]
    fn what_names_no_letter() {
        assert_eq!(letter(""), '-');
        assert_eq!(letter("A cat sat on the mat"), '-', "the article");
        assert_eq!(letter("I think so"), '-', "the pronoun");
        assert_eq!(letter("b"), '-', "lowercase");
        assert_eq!(letter("B is right"), '-', "a letter followed by a word");
        assert_eq!(letter("Made in the U.S.A. today"), '-', "an abbreviation");
        assert_eq!(letter("Answer: Because it is"), '-', "a word starting with a letter");
        assert_eq!(letter("vitamin K."), '-', "K is past J");
        assert_eq!(letter("Plan9A."), '-', "glued to a digit");
    }

    #[test]
    fn the_last_wins_and_explicit_beats_bare() {
        assert_eq!(letter("A. Paris\nB. London\nC. Rome\nD. Oslo"), 'D', "echoed options: the last");
        assert_eq!(letter("A. Paris\nB. London\nAnswer: A"), 'A');
        assert_eq!(letter("Answer: C. Option D. is wrong because"), 'C', "explicit beats a later bare");
        assert_eq!(letter("The answer is B. No wait, the answer is C."), 'C');
        assert_eq!(letter("(A) or (B)? I pick (B)"), 'B');
        assert_eq!(letter("Between B and C:\nC"), 'C');
    }

    #[test]
    fn references() {
        assert_eq!(reference_letter(" b "), Some('B'));
        assert_eq!(reference_letter("D"), Some('D'));
        assert_eq!(reference_letter("K"), None);
        assert_eq!(reference_letter("AB"), None);
        assert_eq!(reference_letter(""), None);
    }
}
