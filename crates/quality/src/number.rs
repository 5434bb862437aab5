//! The number scorer's rules: which number of an output is its answer, and
//! numbers compared as exact decimals.

use std::sync::LazyLock;

use regex::Regex;

/// A number as outputs write it: an optional minus, digits with or without
/// thousands commas (`1,234`: groups of exactly three after the first), and
/// an optional decimal fraction. ASCII digits only.
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?").expect("the number pattern compiles")
});

/// The markers after which an output states its answer: GSM8K's `####` and
/// `answer is` (any case).
static MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"####|(?i:answer\s+is)").expect("the marker pattern compiles"));

/// The answer number of an output, normalised ([`normalise`]):
///
/// - when the output has a marker (`####` or `answer is`, any case), the
///   first number after the last marker (a model that corrects itself
///   states its final answer last);
/// - otherwise, or when no number follows the last marker, the last number
///   of the output.
///
/// A number is ASCII digits with an optional minus, thousands commas
/// (`1,234`; `1,2` is two numbers) and a decimal fraction (`2.50`); a minus
/// right after a letter or digit is a hyphen, not a sign (`5-3`, `x-2`).
/// Not read: exponents (`1e3`), fractions (`1/2`), words (`seven`), a
/// fraction without its leading zero (`.5` reads as 5).
pub fn answer_number(output: &str) -> Option<String> {
    let after_marker = MARKER.find_iter(output).last().map(|m| m.end());
    let from_marker = after_marker.and_then(|at| numbers(output, at).next());
    from_marker.or_else(|| numbers(output, 0).last())
}

/// The numbers of `text` that start at byte `from` or later, normalised.
fn numbers(text: &str, from: usize) -> impl Iterator<Item = String> + '_ {
    NUMBER.find_iter(text).filter(move |m| m.start() >= from).filter_map(|m| {
        let mut written = m.as_str();
        let glued = text[..m.start()].chars().next_back().is_some_and(char::is_alphanumeric);
        if glued && let Some(unsigned) = written.strip_prefix('-') {
            written = unsigned;
        }
        normalise(written)
    })
}

/// A reference number: the whole text (trimmed) is one number.
pub fn reference_number(text: &str) -> Option<String> {
    let text = text.trim();
    let m = NUMBER.find(text)?;
    (m.start() == 0 && m.end() == text.len()).then(|| normalise(text)).flatten()
}

/// A number written as the number pattern matches, as a canonical decimal: commas
/// removed, no leading zeros, no trailing zeros after the point, no point
/// without a fraction, no minus on zero. Two numbers are equal as decimals
/// exactly when their canonical forms are equal (`42.0`, `042` and `42`
/// all read `42`; `-0.0` reads `0`), with no rounding at any size.
pub fn normalise(written: &str) -> Option<String> {
    let (negative, digits) = match written.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, written),
    };
    let digits = digits.replace(',', "");
    let (whole, fraction) = digits.split_once('.').unwrap_or((&digits, ""));
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole = whole.trim_start_matches('0');
    let fraction = fraction.trim_end_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    let zero = whole == "0" && fraction.is_empty();
    let sign = if negative && !zero { "-" } else { "" };
    Some(if fraction.is_empty() { format!("{sign}{whole}") } else { format!("{sign}{whole}.{fraction}") })
}

#[cfg(test)]
mod tests {
    use super::{answer_number, normalise, reference_number};

    /// The answer an output gives, `none` for none.
    fn answer(output: &str) -> String {
        answer_number(output).unwrap_or_else(|| "none".to_string())
    }

    #[test]
    fn decimals_compare_exactly() {
        assert_eq!(normalise("42.0").as_deref(), Some("42"));
        assert_eq!(normalise("042").as_deref(), Some("42"));
        assert_eq!(normalise("1,234.500").as_deref(), Some("1234.5"));
        assert_eq!(normalise("-0.00").as_deref(), Some("0"));
        assert_eq!(normalise("-3.10").as_deref(), Some("-3.1"));
        assert_eq!(normalise("0.5").as_deref(), Some("0.5"));
        // Past f64's exact integers: still exact.
        assert_ne!(normalise("9007199254740993"), normalise("9007199254740992"));
    }

    #[test]
    fn the_last_number_without_a_marker() {
        assert_eq!(answer("3 + 4 = 7"), "7");
        assert_eq!(answer("Tom has 3 apples, buys 4: he has 7 apples."), "7");
        assert_eq!(answer("It costs $1,250.00 in total"), "1250");
        assert_eq!(answer("no digits here"), "none");
        assert_eq!(answer(""), "none");
        assert_eq!(answer("the answer: ٣"), "none", "ASCII digits only");
    }

    #[test]
    fn after_the_last_marker() {
        assert_eq!(answer("so 5 + 6 = 11\n#### 11\nNext question: 3 apples"), "11");
        assert_eq!(answer("The answer is 12, since 3 x 4 = 12 and 2 < 3"), "12");
        assert_eq!(answer("The Answer Is: 9 (checked twice: 4 + 5)"), "9");
        assert_eq!(answer("The answer is 5. Wait, the answer is 6."), "6");
        // A marker with no number after it: the last number of the output.
        assert_eq!(answer("7 apples; the answer is unclear"), "7");
        assert_eq!(answer("####42"), "42");
    }

    #[test]
    fn signs_commas_and_hyphens() {
        assert_eq!(answer("the temperature is -5"), "-5");
        assert_eq!(answer("5-3"), "3", "a hyphen, not a sign");
        assert_eq!(answer("pages 10-12"), "12");
        assert_eq!(answer("1,2,3"), "3", "a list, not thousands");
        assert_eq!(answer("12,345,678 people"), "12345678");
        assert_eq!(answer("it is 42."), "42", "a full stop, not a point");
        assert_eq!(answer("3.14159"), "3.14159");
    }

    #[test]
    fn references_are_one_number() {
        assert_eq!(reference_number(" 42 ").as_deref(), Some("42"));
        assert_eq!(reference_number("1,000").as_deref(), Some("1000"));
        assert_eq!(reference_number("-2.50").as_deref(), Some("-2.5"));
        assert_eq!(reference_number("42 apples"), None);
        assert_eq!(reference_number("$42"), None);
        assert_eq!(reference_number(""), None);
    }
}
