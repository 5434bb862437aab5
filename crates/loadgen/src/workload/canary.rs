//! Request canaries: request i of seed s must begin its visible reply with
//! `ANVIL_REQ_s_iiiii` and contain no other `ANVIL_REQ_` marker. A reply
//! carrying someone else's marker means responses were crossed (a batching,
//! caching or routing bug); a capture cut short cannot prove anything and
//! fails closed.

use serde::{Deserialize, Serialize};

const MARKER_PREFIX: &str = "ANVIL_REQ_";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanaryResult {
    pub capture_complete: bool,
    pub foreign_marker_count: u32,
    pub marker: String,
    pub marker_at_start: bool,
    pub observed_marker_count: u32,
    pub passed: bool,
}

/// Checks a captured visible reply against its marker.
pub fn evaluate(marker: &str, capture: &str, capture_complete: bool) -> CanaryResult {
    let mut observed = 0;
    let mut foreign = 0;
    for (at, _) in capture.match_indices(MARKER_PREFIX) {
        let rest = &capture[at..];
        // Our marker must not be the prefix of a longer one (…_00001 vs …_000012).
        let ours = rest.starts_with(marker)
            && !rest[marker.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if ours { observed += 1 } else { foreign += 1 }
    }
    let body = capture.trim_start();
    let marker_at_start = body.starts_with(marker)
        && !body[marker.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
    CanaryResult {
        capture_complete,
        foreign_marker_count: foreign,
        marker: marker.to_string(),
        marker_at_start,
        observed_marker_count: observed,
        passed: capture_complete && marker_at_start && foreign == 0,
    }
}

/// The reply's words after the leading marker, for `response_words` adherence.
pub fn words_after_marker(capture: &str, marker: Option<&str>) -> usize {
    let body = capture.trim_start();
    let body = match marker {
        Some(m) => body.strip_prefix(m).map(|rest| rest.trim_start_matches(['.', ':', ','])).unwrap_or(body),
        None => body,
    };
    body.split_whitespace().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = "ANVIL_REQ_17_00001";

    #[test]
    fn passes_with_own_marker_first() {
        let r = evaluate(M, "  ANVIL_REQ_17_00001 The answer.", true);
        assert!(r.passed && r.marker_at_start);
        assert_eq!((r.observed_marker_count, r.foreign_marker_count), (1, 0));
    }

    #[test]
    fn foreign_marker_fails() {
        let r = evaluate(M, "ANVIL_REQ_17_00001 and ANVIL_REQ_17_00002", true);
        assert!(!r.passed);
        assert_eq!(r.foreign_marker_count, 1);
        let longer = evaluate(M, "ANVIL_REQ_17_000012 text", true);
        assert!(!longer.marker_at_start && !longer.passed);
        assert_eq!(longer.foreign_marker_count, 1);
    }

    #[test]
    fn missing_or_late_marker_fails() {
        assert!(!evaluate(M, "Sure! ANVIL_REQ_17_00001", true).passed);
        assert!(!evaluate(M, "", true).passed);
    }

    #[test]
    fn truncated_capture_fails_closed() {
        let r = evaluate(M, "ANVIL_REQ_17_00001 fine so far", false);
        assert!(r.marker_at_start && !r.passed);
    }

    #[test]
    fn words_after_marker_counts_reply_words() {
        assert_eq!(words_after_marker("ANVIL_REQ_17_00001. one two three", Some(M)), 3);
        assert_eq!(words_after_marker("one two", None), 2);
    }
}
