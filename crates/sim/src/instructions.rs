//! Instructions that benchmarks write into the prompt and the sim obeys:
//! a canary marker to begin the reply with, and a requested word count.

/// The literal prefix of every canary marker (`ANVIL_REQ_<seed>_<5 digits>`).
pub const CANARY_PREFIX: &str = "ANVIL_REQ_";

/// A canary marker found in a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canary {
    pub seed: u64,
    pub index: u32,
}

impl Canary {
    pub fn marker(&self) -> String {
        format!("{CANARY_PREFIX}{}_{:05}", self.seed, self.index)
    }

    /// A different request's marker (for the canary-leak fault).
    pub fn neighbour(&self) -> Canary {
        Canary { seed: self.seed, index: (self.index + 1) % 100_000 }
    }
}

/// The first well-formed marker (`ANVIL_REQ_\d+_\d{5}` not followed by a digit).
pub fn find_canary(text: &str) -> Option<Canary> {
    let mut rest = text;
    while let Some(at) = rest.find(CANARY_PREFIX) {
        let after = &rest[at + CANARY_PREFIX.len()..];
        if let Some(canary) = parse_canary_tail(after) {
            return Some(canary);
        }
        rest = after;
    }
    None
}

/// Parse `<seed>_<5 digits>` at the start of `tail`.
fn parse_canary_tail(tail: &str) -> Option<Canary> {
    let seed_len = tail.bytes().take_while(u8::is_ascii_digit).count();
    let seed: u64 = tail.get(..seed_len)?.parse().ok()?;
    let after_seed = tail.get(seed_len..)?.strip_prefix('_')?;
    let index_digits = after_seed.get(..5)?;
    if !index_digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if after_seed.as_bytes().get(5).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    Some(Canary { seed, index: index_digits.parse().ok()? })
}

/// The number in "about N words" / "exactly N words" / "N-word": the first
/// number directly followed by the word "words" (or "word").
pub fn requested_words(text: &str) -> Option<u32> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    tokens.windows(2).find_map(|pair| {
        let next = pair[1].trim_start_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase();
        if !next.starts_with("word") {
            return None;
        }
        let number: String = pair[0].chars().filter(|c| *c != ',' && *c != '_').collect();
        number.trim_start_matches('~').parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_canary() {
        let text = "Begin your reply with ANVIL_REQ_17_00003 and then write.";
        let c = find_canary(text).unwrap();
        assert_eq!(c, Canary { seed: 17, index: 3 });
        assert_eq!(c.marker(), "ANVIL_REQ_17_00003");
        assert_eq!(c.neighbour().marker(), "ANVIL_REQ_17_00004");
    }

    #[test]
    fn rejects_malformed_canaries_but_keeps_looking() {
        assert_eq!(find_canary("ANVIL_REQ_1_0003"), None);
        assert_eq!(find_canary("ANVIL_REQ_1_000033"), None);
        assert_eq!(find_canary("ANVIL_REQ__00003"), None);
        assert_eq!(find_canary("ANVIL_REQ_x then ANVIL_REQ_2_00001."), Some(Canary { seed: 2, index: 1 }));
    }

    #[test]
    fn finds_word_counts() {
        assert_eq!(requested_words("Write about 300 words on caching."), Some(300));
        assert_eq!(requested_words("Write exactly 1,024 words."), Some(1024));
        assert_eq!(requested_words("use 5 Words"), Some(5));
        assert_eq!(requested_words("write some words"), None);
        assert_eq!(requested_words("300"), None);
    }
}
