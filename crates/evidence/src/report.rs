//! What a re-derivation finds: the fields it checked, those that did not
//! match, and those it could not check (with why). Also the one numeric
//! comparison rule every check uses.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

/// Relative tolerance for floating-point figures.
pub const REL_TOL: f64 = 1e-9;
/// Absolute floor, for figures at or near zero (a picosecond in ms).
pub const ABS_TOL: f64 = 1e-12;

/// A stored figure that its own raw inputs do not reproduce.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mismatch {
    /// Where in the artifact: `metrics.ttft_p50_ms`, `request_timings[3].tpot_ms`.
    pub path: String,
    pub stored: Value,
    pub derived: Value,
}

/// A field present in the artifact that was not re-derived, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unchecked {
    pub path: String,
    pub reason: String,
}

/// The outcome of [`crate::rederive`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// Every path compared (matching or not), in the order checked.
    pub checked: Vec<String>,
    pub mismatches: Vec<Mismatch>,
    pub unchecked: Vec<Unchecked>,
    /// Assumptions the derivation had to make (e.g. how eligibility was inferred).
    pub notes: Vec<String>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// `checked 187 fields, 0 mismatches, 12 unchecked`.
    pub fn summary(&self) -> String {
        format!(
            "checked {} fields, {} mismatches, {} unchecked",
            self.checked.len(),
            self.mismatches.len(),
            self.unchecked.len()
        )
    }

    pub fn mismatch(&self, path: &str) -> Option<&Mismatch> {
        self.mismatches.iter().find(|m| m.path == path)
    }
}

/// Whether a stored value agrees with a derived one. Numbers: integers
/// (derived as JSON integers) must be equal exactly; other numbers within
/// `|s − d| ≤ 1e-9 · max(|s|, |d|) + 1e-12`. JSON numbers are printed with
/// the shortest round-trip form, so the artifact does not round: the
/// tolerance only absorbs summation order and serde_json's default float
/// parser, which is not always correctly rounded (±1 ulp). Arrays and objects compare
/// element-wise under the same rule; everything else must be equal.
pub fn values_match(stored: &Value, derived: &Value) -> bool {
    match (stored, derived) {
        (Value::Number(s), Value::Number(d)) => {
            if d.is_f64() {
                let (Some(s), Some(d)) = (s.as_f64(), d.as_f64()) else { return false };
                (s - d).abs() <= REL_TOL * s.abs().max(d.abs()) + ABS_TOL
            } else {
                s.as_f64() == d.as_f64() && (s.is_f64() || s == d)
            }
        }
        (Value::Array(s), Value::Array(d)) => {
            s.len() == d.len() && s.iter().zip(d).all(|(s, d)| values_match(s, d))
        }
        (Value::Object(s), Value::Object(d)) => {
            s.len() == d.len() && s.iter().all(|(k, v)| d.get(k).is_some_and(|dv| values_match(v, dv)))
        }
        _ => stored == derived,
    }
}

/// Looks up `a.b[3].c` in `root`.
pub fn lookup<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    for part in path.split('.') {
        let (key, indices) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            cur = cur.get(key)?;
        }
        for idx in indices.split('[').skip(1) {
            let i: usize = idx.trim_end_matches(']').parse().ok()?;
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

/// Accumulates a [`Report`] against one artifact.
pub struct Checker<'a> {
    root: &'a Value,
    report: Report,
    seen: BTreeSet<String>,
}

impl<'a> Checker<'a> {
    pub fn new(root: &'a Value) -> Self {
        Self { root, report: Report::default(), seen: BTreeSet::new() }
    }

    /// Compares the stored value at `path` with `derived`. A path the
    /// artifact does not carry is not a claim and is skipped.
    pub fn check(&mut self, path: &str, derived: Value) {
        let Some(stored) = lookup(self.root, path) else { return };
        if !self.seen.insert(path.to_string()) {
            return;
        }
        self.report.checked.push(path.to_string());
        if !values_match(stored, &derived) {
            self.report.mismatches.push(Mismatch { path: path.to_string(), stored: stored.clone(), derived });
        }
    }

    /// Lists `path` (if present) as not re-derived.
    pub fn uncheck(&mut self, path: &str, reason: impl Into<String>) {
        if lookup(self.root, path).is_some() && self.seen.insert(path.to_string()) {
            self.report.unchecked.push(Unchecked { path: path.to_string(), reason: reason.into() });
        }
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.report.notes.push(note.into());
    }

    /// Lists every leaf under `path` that no check or earlier listing
    /// covered, so nothing in a derived section passes silently.
    pub fn sweep(&mut self, path: &str, reason: &str) {
        let Some(v) = lookup(self.root, path) else { return };
        let mut leaves = Vec::new();
        collect_leaves(v, path, &mut leaves);
        for leaf in leaves {
            if !self.covered(&leaf) {
                self.seen.insert(leaf.clone());
                self.report.unchecked.push(Unchecked { path: leaf, reason: reason.to_string() });
            }
        }
    }

    fn covered(&self, path: &str) -> bool {
        let mut p = path;
        loop {
            if self.seen.contains(p) {
                return true;
            }
            match p.rfind(['.', '[']) {
                Some(i) => p = &p[..i],
                None => return false,
            }
        }
    }

    pub fn finish(self) -> Report {
        self.report
    }
}

fn collect_leaves(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                collect_leaves(x, &format!("{path}.{k}"), out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                collect_leaves(x, &format!("{path}[{i}]"), out);
            }
        }
        _ => out.push(path.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tolerance_and_integers() {
        assert!(values_match(&json!(1.0), &json!(1.0 + 1e-12)));
        assert!(!values_match(&json!(1.0), &json!(1.0 + 1e-6)));
        assert!(values_match(&json!(12), &json!(12)));
        assert!(values_match(&json!(12.0), &json!(12)));
        assert!(!values_match(&json!(13), &json!(12)));
        assert!(values_match(&json!(0.0), &json!(1e-15)));
        assert!(!values_match(&json!(null), &json!(1.0)));
        assert!(values_match(&json!({"a": 1}), &json!({"a": 1})));
        assert!(!values_match(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }

    #[test]
    fn paths() {
        let v = json!({"a": {"b": [{"c": 5}]}});
        assert_eq!(lookup(&v, "a.b[0].c"), Some(&json!(5)));
        assert_eq!(lookup(&v, "a.b[1].c"), None);
    }
}
