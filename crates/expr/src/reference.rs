//! A reference is a dotted path that reads a result: `KIND.NAME.FIELD...`.
//! The language knows nothing about kinds or fields; the resolver does, so
//! new node kinds and fields need no change here.

use std::fmt;

use crate::error::SelectError;
use crate::span::Span;

/// One step of a reference's field path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathSegment {
    /// `.name` — an object key.
    Key(String),
    /// `[2]` — a list index (zero-based).
    Index(usize),
}

/// A path read by an expression, e.g. `cell.tp2.latency.p99[0]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    /// The node kind: `cell`, `check`, `server`, `param`, ...
    pub kind: String,
    /// The node name; may contain `*` wildcards (`sglang-d*`).
    pub name: String,
    /// The path inside the node's result; empty for `param.depth`.
    pub field: Vec<PathSegment>,
    /// `(offset, len)` of the whole path in the expression source.
    pub span: Span,
}

impl Reference {
    /// True when `name` contains `*`, so the reference reads a list of nodes.
    pub fn is_wildcard(&self) -> bool {
        self.name.contains('*')
    }

    /// Does a node called `node_name` match this reference's name (glob)?
    pub fn matches_name(&self, node_name: &str) -> bool {
        glob_match(&self.name, node_name)
    }

    /// Walks `field` inside one node's result. The error says which step
    /// failed, for a `Resolved::Missing` reason.
    pub fn select<'v>(
        &self,
        node_result: &'v serde_json::Value,
    ) -> Result<&'v serde_json::Value, SelectError> {
        let mut current = node_result;
        let mut walked = format!("{}.{}", self.kind, self.name);
        for segment in &self.field {
            current = match (segment, current) {
                (PathSegment::Key(key), serde_json::Value::Object(map)) => match map.get(key) {
                    Some(next) => next,
                    None => return Err(SelectError::NoField { walked, key: key.clone() }),
                },
                (PathSegment::Index(index), serde_json::Value::Array(items)) => match items.get(*index) {
                    Some(next) => next,
                    None => return Err(SelectError::NoIndex { walked, len: items.len(), index: *index }),
                },
                (PathSegment::Key(key), _) => {
                    return Err(SelectError::NotObject { walked, key: key.clone() });
                }
                (PathSegment::Index(index), _) => {
                    return Err(SelectError::NotList { walked, index: *index });
                }
            };
            write_segment(&mut walked, segment);
        }
        Ok(current)
    }
}

fn write_segment(out: &mut String, segment: &PathSegment) {
    match segment {
        PathSegment::Key(key) => {
            out.push('.');
            out.push_str(key);
        }
        PathSegment::Index(index) => {
            out.push('[');
            out.push_str(&index.to_string());
            out.push(']');
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut path = format!("{}.{}", self.kind, self.name);
        for segment in &self.field {
            write_segment(&mut path, segment);
        }
        f.write_str(&path)
    }
}

/// Glob match where `*` stands for any run of characters (possibly empty).
/// Iterative with one backtrack point, so it is linear-ish and never recurses.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // Position of the last `*` seen and the text position it was tried at.
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == '*' {
            backtrack = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star, tried)) = backtrack {
            // Let the last `*` swallow one more character and retry.
            p = star + 1;
            t = tried + 1;
            backtrack = Some((star, tried + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_prefixes_suffixes_and_middles() {
        assert!(glob_match("sglang-d*", "sglang-d8"));
        assert!(glob_match("sglang-d*", "sglang-d"));
        assert!(!glob_match("sglang-d*", "vllm-d8"));
        assert!(glob_match("*-json", "tp2-json"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(glob_match("*", ""));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
    }

    #[test]
    fn select_walks_keys_and_indexes_and_explains_failures() {
        let reference = Reference {
            kind: "cell".into(),
            name: "tp1".into(),
            field: vec![PathSegment::Key("runs".into()), PathSegment::Index(1)],
            span: (0, 0),
        };
        let result = serde_json::json!({"runs": [10, 20]});
        assert_eq!(reference.select(&result), Ok(&serde_json::json!(20)));
        let short = serde_json::json!({"runs": [10]});
        let short = reference.select(&short).unwrap_err();
        assert_eq!(short, SelectError::NoIndex { walked: "cell.tp1.runs".into(), len: 1, index: 1 });
        assert_eq!(short.to_string(), "cell.tp1.runs has 1 items, no [1]");
        let absent = serde_json::json!({});
        assert_eq!(reference.select(&absent).unwrap_err().to_string(), "cell.tp1 has no field `runs`");
        assert_eq!(reference.to_string(), "cell.tp1.runs[1]");
    }
}
