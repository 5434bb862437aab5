//! Canary markers (`ANVIL_REQ_<seed>_<5-digit index>`) and the verdict on
//! one reply: it must begin with its own marker and carry no other.

use serde::Serialize;

pub const CANARY_PREFIX: &str = "ANVIL_REQ_";

/// The marker request `index` of `seed` must begin its reply with.
pub fn marker(seed: u64, index: u32) -> String {
    format!("{CANARY_PREFIX}{seed}_{index:05}")
}

/// Same fields and meaning as `request_canary` in the benchmark artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CanaryVerdict {
    pub marker: String,
    /// The stream ended properly (`[DONE]` seen, nothing cut).
    pub capture_complete: bool,
    /// The visible reply begins with the marker (leading whitespace allowed).
    pub marker_at_start: bool,
    /// Times the request's own marker appears.
    pub observed_marker_count: usize,
    /// Other `ANVIL_REQ_` occurrences (another request's marker, or a mangled one).
    pub foreign_marker_count: usize,
    /// Up to five foreign occurrences as seen in the reply.
    pub foreign_markers: Vec<String>,
    pub passed: bool,
}

/// Judge `content` (the visible reply) against `own` marker. Fails closed:
/// an incomplete capture never passes.
pub fn judge(own: &str, content: &str, capture_complete: bool) -> CanaryVerdict {
    let mut observed = 0;
    let mut foreign = Vec::new();
    for (at, _) in content.match_indices(CANARY_PREFIX) {
        let found = marker_at(&content[at..]);
        if found == own {
            observed += 1;
        } else {
            foreign.push(found.to_owned());
        }
    }
    let marker_at_start = {
        let start = content.trim_start();
        start.starts_with(own) && !start[own.len()..].starts_with(|c: char| c.is_ascii_digit())
    };
    let foreign_marker_count = foreign.len();
    foreign.truncate(5);
    CanaryVerdict {
        marker: own.to_owned(),
        capture_complete,
        marker_at_start,
        observed_marker_count: observed,
        foreign_marker_count,
        foreign_markers: foreign,
        passed: capture_complete && marker_at_start && foreign_marker_count == 0,
    }
}

/// The marker-like token at the start of `text` (which begins with the
/// prefix): the prefix and the digits and underscores after it.
fn marker_at(text: &str) -> &str {
    let tail = &text[CANARY_PREFIX.len()..];
    let len = tail.find(|c: char| !(c.is_ascii_digit() || c == '_')).unwrap_or(tail.len());
    &text[..CANARY_PREFIX.len() + len]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_markers() {
        assert_eq!(marker(17, 3), "ANVIL_REQ_17_00003");
    }

    #[test]
    fn own_marker_first_passes() {
        let v = judge("ANVIL_REQ_1_00002", "\nANVIL_REQ_1_00002 hello. ANVIL_REQ_1_00002", true);
        assert!(v.passed, "{v:?}");
        assert_eq!(v.observed_marker_count, 2);
    }

    #[test]
    fn failures() {
        let own = "ANVIL_REQ_1_00002";
        let leak = judge(own, "ANVIL_REQ_1_00002 a ANVIL_REQ_1_00003 b", true);
        assert!(
            !leak.passed && leak.foreign_marker_count == 1 && leak.foreign_markers == ["ANVIL_REQ_1_00003"]
        );
        assert!(!judge(own, "hello ANVIL_REQ_1_00002", true).marker_at_start);
        assert!(!judge(own, "ANVIL_REQ_1_000021 x", true).marker_at_start);
        let mangled = judge(own, "ANVIL_REQ_1_00002 ANVIL_REQ_x", true);
        assert_eq!(mangled.foreign_markers, ["ANVIL_REQ_"]);
        let truncated = judge(own, "ANVIL_REQ_1_00002 fine so far", false);
        assert!(!truncated.passed && truncated.marker_at_start);
    }
}
