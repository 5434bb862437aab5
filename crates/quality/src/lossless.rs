//! Lossless means lossless: two arms' outputs for the same prompts (an arm
//! and its control under greedy decoding: speculative decoding, a kernel,
//! a parallelism change), the share that are identical, and where each
//! differing one first diverged.

use serde::Serialize;

use crate::accuracy::share_interval;

/// What one arm answered to one prompt: its text and, where the engine
/// gave them, its token ids.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Output {
    pub text: String,
    pub token_ids: Option<Vec<u32>>,
}

/// Where two outputs first differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Position {
    /// The index of the first differing token (both sides had token ids).
    Token(usize),
    /// The offset, in characters (Unicode scalar values), of the first
    /// differing character of the texts.
    Char(usize),
}

/// One prompt whose two outputs differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    pub id: String,
    pub at: Position,
    /// Each side around `at`, in `at`'s units: up to [`EXCERPT_CHARS`]
    /// characters before and after it (`…` where cut, `⟨end⟩` where a side
    /// stops), or up to [`EXCERPT_TOKENS`] token ids before and after,
    /// the first differing one in brackets.
    pub excerpt_a: String,
    pub excerpt_b: String,
}

/// Characters an excerpt shows on each side of a divergence.
pub const EXCERPT_CHARS: usize = 24;
/// Token ids an excerpt shows on each side of a divergence.
pub const EXCERPT_TOKENS: usize = 4;

/// The share of prompts whose two outputs are identical, with its
/// Clopper–Pearson interval at `level`, and the divergences.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Identity {
    pub identical: u64,
    pub n: u64,
    /// `identical / n`; NaN when `n` is 0.
    pub share: f64,
    pub low: f64,
    pub high: f64,
    pub level: f64,
    /// Each differing prompt, in the order given.
    pub diverged: Vec<Divergence>,
}

impl Identity {
    /// Prompts whose outputs differ.
    pub fn differing(&self) -> u64 {
        self.n - self.identical
    }
}

/// Compares two arms' outputs prompt by prompt: `(id, a, b)` each. Two
/// outputs are identical when their token ids are equal, where both sides
/// have them (the text is then not compared: a detokenizer's choice is not
/// the model's), else when their texts are equal byte for byte.
///
/// # Panics
/// When `level` is not strictly between 0 and 1.
pub fn identical_share(pairs: &[(&str, &Output, &Output)], level: f64) -> Identity {
    let diverged: Vec<Divergence> =
        pairs.iter().filter_map(|&(id, a, b)| divergence(a, b).map(|d| d.named(id))).collect();
    let n = pairs.len() as u64;
    let identical = n - diverged.len() as u64;
    let (low, high) = share_interval(identical, n, level);
    Identity { identical, n, share: identical as f64 / n as f64, low, high, level, diverged }
}

/// Where `a` and `b` first differ, with the excerpts; `None` when they
/// are identical ([`identical_share`]).
pub fn divergence(a: &Output, b: &Output) -> Option<Divergence> {
    if let (Some(x), Some(y)) = (&a.token_ids, &b.token_ids) {
        let at = first_difference(x, y)?;
        let (excerpt_a, excerpt_b) = (token_excerpt(x, at), token_excerpt(y, at));
        return Some(Divergence { id: String::new(), at: Position::Token(at), excerpt_a, excerpt_b });
    }
    let (x, y): (Vec<char>, Vec<char>) = (a.text.chars().collect(), b.text.chars().collect());
    let at = first_difference(&x, &y)?;
    let (excerpt_a, excerpt_b) = (char_excerpt(&x, at), char_excerpt(&y, at));
    Some(Divergence { id: String::new(), at: Position::Char(at), excerpt_a, excerpt_b })
}

impl Divergence {
    fn named(self, id: &str) -> Self {
        Self { id: id.to_string(), ..self }
    }
}

/// The first index where `x` and `y` differ, the shorter one's length when
/// it is a prefix of the other; `None` when equal.
fn first_difference<T: PartialEq>(x: &[T], y: &[T]) -> Option<usize> {
    match x.iter().zip(y).position(|(p, q)| p != q) {
        Some(at) => Some(at),
        None => (x.len() != y.len()).then_some(x.len().min(y.len())),
    }
}

fn char_excerpt(text: &[char], at: usize) -> String {
    let start = at.saturating_sub(EXCERPT_CHARS);
    let end = (at + EXCERPT_CHARS).min(text.len());
    let mut excerpt = String::new();
    if start > 0 {
        excerpt.push('…');
    }
    excerpt.extend(&text[start..at.min(text.len())]);
    if at >= text.len() {
        excerpt.push_str("⟨end⟩");
    } else {
        excerpt.extend(&text[at..end]);
        if end < text.len() {
            excerpt.push('…');
        }
    }
    excerpt
}

fn token_excerpt(ids: &[u32], at: usize) -> String {
    let start = at.saturating_sub(EXCERPT_TOKENS);
    let end = (at + 1 + EXCERPT_TOKENS).min(ids.len());
    let mut words: Vec<String> = Vec::new();
    if start > 0 {
        words.push("…".into());
    }
    words.extend(ids[start..at.min(ids.len())].iter().map(u32::to_string));
    if at >= ids.len() {
        words.push("[⟨end⟩]".into());
    } else {
        words.push(format!("[{}]", ids[at]));
        words.extend(ids[at + 1..end].iter().map(u32::to_string));
        if end < ids.len() {
            words.push("…".into());
        }
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::{Output, Position, divergence, identical_share};

    fn text(t: &str) -> Output {
        Output { text: t.into(), token_ids: None }
    }

    fn ids(t: &str, ids: &[u32]) -> Output {
        Output { text: t.into(), token_ids: Some(ids.to_vec()) }
    }

    #[test]
    fn by_characters() {
        let d = divergence(&text("The capital is Paris."), &text("The capital is Lyon.")).unwrap();
        assert_eq!(d.at, Position::Char(15));
        assert_eq!(d.excerpt_a, "The capital is Paris.");
        let d = divergence(&text("héllo wörld"), &text("héllo world")).unwrap();
        assert_eq!(d.at, Position::Char(7), "characters, not bytes");
        let d = divergence(&text("abc"), &text("abcdef")).unwrap();
        assert_eq!(d.at, Position::Char(3));
        assert_eq!((d.excerpt_a.as_str(), d.excerpt_b.as_str()), ("abc⟨end⟩", "abcdef"));
        let long = "x".repeat(100);
        let d = divergence(&text(&format!("{long}A{long}")), &text(&format!("{long}B{long}"))).unwrap();
        assert_eq!(d.excerpt_a, format!("…{}A{}…", "x".repeat(24), "x".repeat(23)));
        assert!(divergence(&text("same"), &text("same")).is_none());
    }

    #[test]
    fn by_tokens_when_both_have_them() {
        let d =
            divergence(&ids("a", &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]), &ids("a", &[1, 2, 3, 4, 5, 6, 0]))
                .unwrap();
        assert_eq!(d.at, Position::Token(6));
        assert_eq!(d.excerpt_a, "… 3 4 5 6 [7] 8 9 10 11");
        assert_eq!(d.excerpt_b, "… 3 4 5 6 [0]");
        let d = divergence(&ids("a", &[1, 2]), &ids("a", &[1, 2, 3])).unwrap();
        assert_eq!((d.at, d.excerpt_a.as_str()), (Position::Token(2), "1 2 [⟨end⟩]"));
        // Equal ids, different text: identical (the ids are the model's).
        assert!(divergence(&ids("a b", &[5]), &ids("a  b", &[5])).is_none());
        // One side without ids: the texts.
        let d = divergence(&ids("ab", &[5]), &text("ac")).unwrap();
        assert_eq!(d.at, Position::Char(1));
    }

    #[test]
    fn the_share_and_its_interval() {
        let (same, other) = (text("4"), text("5"));
        let pairs: Vec<(&str, &Output, &Output)> =
            (0..10).map(|i| if i == 3 { ("q3", &same, &other) } else { ("q", &same, &same) }).collect();
        let identity = identical_share(&pairs, 0.95);
        assert_eq!((identity.identical, identity.n, identity.differing()), (9, 10, 1));
        assert_eq!(identity.diverged.len(), 1);
        assert_eq!(identity.diverged[0].id, "q3");
        // 9 of 10 at 95%: [0.5550, 0.9975].
        assert!((identity.low - 0.5550).abs() < 1e-4 && (identity.high - 0.9975).abs() < 1e-4);
    }
}
