//! What a re-derivation finds: the fields it checked, those that did not
//! match, and those it could not check (with why). Also the one numeric
//! comparison rule every check uses.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Value};

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
    /// Every path compared (matching or not) outside the records, in the order checked.
    pub checked: Vec<String>,
    /// Per-request fields compared, counted per field: `request_timings[*].tpot_ms`
    /// → how many records had it checked (one string per field, not per
    /// request; a mismatch is still listed at its own `request_timings[3].tpot_ms`).
    pub checked_per_request: BTreeMap<String, u64>,
    pub mismatches: Vec<Mismatch>,
    /// Fields not re-derived, with why. A per-request field is listed once,
    /// as `request_timings[*].FIELD` (with the first record's reason), and
    /// counted in [`Report::unchecked_per_request`].
    pub unchecked: Vec<Unchecked>,
    /// `request_timings[*].FIELD` → how many records had it unchecked.
    pub unchecked_per_request: BTreeMap<String, u64>,
    /// Assumptions the derivation had to make (e.g. how eligibility was inferred).
    pub notes: Vec<String>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// How many fields were compared, per-request ones included.
    pub fn fields_checked(&self) -> u64 {
        self.checked.len() as u64 + self.checked_per_request.values().sum::<u64>()
    }

    /// How many fields were not re-derived, per-request ones included.
    pub fn fields_unchecked(&self) -> u64 {
        let patterns = self.unchecked_per_request.len() as u64;
        self.unchecked.len() as u64 - patterns + self.unchecked_per_request.values().sum::<u64>()
    }

    /// Whether `path` was compared: a `request_timings[3].tpot_ms` path
    /// counts when its field was checked in some record.
    pub fn was_checked(&self, path: &str) -> bool {
        match per_request_field(path) {
            Some(field) => self.checked_per_request.contains_key(&format!("{RECORDS}[*].{field}")),
            None => self.checked.iter().any(|p| p == path),
        }
    }

    /// `checked 187 fields, 0 mismatches, 12 unchecked` (per-request fields each counted).
    pub fn summary(&self) -> String {
        format!(
            "checked {} fields, {} mismatches, {} unchecked",
            self.fields_checked(),
            self.mismatches.len(),
            self.fields_unchecked()
        )
    }

    pub fn mismatch(&self, path: &str) -> Option<&Mismatch> {
        self.mismatches.iter().find(|m| m.path == path)
    }
}

const RECORDS: &str = "request_timings";

/// `tpot_ms` of `request_timings[3].tpot_ms`; `None` for a path outside the records.
fn per_request_field(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(RECORDS)?.strip_prefix('[')?;
    let (index, field) = rest.split_once("].")?;
    index.parse::<usize>().ok().map(|_| field)
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
    walk(root, path.split('.'))
}

/// Looks up `a.b[3].c` in an object's members.
pub fn lookup_in<'a>(root: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let first = parts.next()?;
    let (key, indices) = match first.find('[') {
        Some(i) => (&first[..i], &first[i..]),
        None => (first, ""),
    };
    let mut cur = root.get(key)?;
    for idx in indices.split('[').skip(1) {
        let i: usize = idx.trim_end_matches(']').parse().ok()?;
        cur = cur.get(i)?;
    }
    walk(cur, parts)
}

fn walk<'a, 'p>(root: &'a Value, parts: impl Iterator<Item = &'p str>) -> Option<&'a Value> {
    let mut cur = root;
    for part in parts {
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

/// Accumulates a [`Report`] against one artifact's top-level members (its
/// head: every member but `request_timings`, whose records are checked one
/// at a time through [`Checker::record`]).
pub struct Checker<'a> {
    root: &'a Map<String, Value>,
    report: Report,
    seen: BTreeSet<String>,
}

impl<'a> Checker<'a> {
    pub fn new(root: &'a Map<String, Value>) -> Self {
        Self { root, report: Report::default(), seen: BTreeSet::new() }
    }

    /// Compares the stored value at `path` with `derived`. A path the
    /// artifact does not carry is not a claim and is skipped.
    pub fn check(&mut self, path: &str, derived: Value) {
        let Some(stored) = lookup_in(self.root, path) else { return };
        if !self.seen.insert(path.to_string()) {
            return;
        }
        self.report.checked.push(path.to_string());
        if !values_match(stored, &derived) {
            self.report.mismatches.push(Mismatch { path: path.to_string(), stored: stored.clone(), derived });
        }
    }

    /// [`Self::check`] of a difference of stored numbers (see
    /// [`RecordChecker::check_difference`]): within `1e-9` of `scale`, the
    /// operands' magnitude, not of the difference itself.
    pub fn check_difference(&mut self, path: &str, derived: f64, scale: f64) {
        let Some(stored) = lookup_in(self.root, path) else { return };
        if !self.seen.insert(path.to_string()) {
            return;
        }
        self.report.checked.push(path.to_string());
        let agree =
            stored.as_f64().is_some_and(|s| (s - derived).abs() <= REL_TOL * scale.max(s.abs()) + ABS_TOL);
        if !agree {
            let (path, stored) = (path.to_string(), stored.clone());
            self.report.mismatches.push(Mismatch { path, stored, derived: serde_json::json!(derived) });
        }
    }

    /// A claim the artifact makes by what it is rather than by a stored
    /// field (every agent call replayed by the rule), refuted: a mismatch
    /// at `path`, whether or not the artifact carries it.
    pub fn fail(&mut self, path: &str, stored: Value, derived: Value) {
        self.seen.insert(path.to_string());
        self.report.mismatches.push(Mismatch { path: path.to_string(), stored, derived });
    }

    /// Counts `n` records whose `field` a check after the pass compared
    /// (one across records, such as the agent replay rule).
    pub fn count_per_request(&mut self, field: &str, n: u64) {
        if n > 0 {
            *self.report.checked_per_request.entry(format!("{RECORDS}[*].{field}")).or_default() += n;
        }
    }

    /// Lists `path` (if present) as not re-derived.
    pub fn uncheck(&mut self, path: &str, reason: impl Into<String>) {
        if lookup_in(self.root, path).is_some() && self.seen.insert(path.to_string()) {
            self.report.unchecked.push(Unchecked { path: path.to_string(), reason: reason.into() });
        }
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.report.notes.push(note.into());
    }

    /// Lists every leaf under `path` that no check or earlier listing
    /// covered, so nothing in a derived section passes silently.
    pub fn sweep(&mut self, path: &str, reason: &str) {
        let Some(v) = lookup_in(self.root, path) else { return };
        let mut leaves = Vec::new();
        collect_leaves(v, path, &mut leaves);
        for leaf in leaves {
            if !covered(&self.seen, &leaf) {
                self.seen.insert(leaf.clone());
                self.report.unchecked.push(Unchecked { path: leaf, reason: reason.to_string() });
            }
        }
    }

    /// The checks of record `pos` (`raw`), which forget the record's paths
    /// when done: what stays is a count per field.
    pub fn record<'r>(&'r mut self, pos: usize, raw: &'r Map<String, Value>) -> RecordChecker<'r> {
        RecordChecker { report: &mut self.report, raw, pos, seen: BTreeSet::new() }
    }

    pub fn finish(self) -> Report {
        self.report
    }
}

/// A [`Checker`] for one record's own fields (paths relative to the record).
pub struct RecordChecker<'r> {
    report: &'r mut Report,
    raw: &'r Map<String, Value>,
    pos: usize,
    seen: BTreeSet<String>,
}

impl RecordChecker<'_> {
    fn path(&self, field: &str) -> String {
        format!("{RECORDS}[{}].{field}", self.pos)
    }

    /// [`Checker::check`] of the record's `field`.
    pub fn check(&mut self, field: &str, derived: Value) {
        self.check_with(field, derived, values_match);
    }

    /// [`Self::check`] of a difference `a − b` of two stored numbers: its
    /// tolerance scales with the operands (`scale = max(|a|, |b|)`), not
    /// with the difference. Two send times of ~10⁴ ms each parsed to within
    /// an ulp (~2·10⁻¹² ms) differ from the stored sub-microsecond lag by
    /// more than the lag's own relative tolerance allows.
    pub fn check_difference(&mut self, field: &str, derived: f64, scale: f64) {
        self.check_with(field, serde_json::json!(derived), |stored, _| {
            stored.as_f64().is_some_and(|s| (s - derived).abs() <= REL_TOL * scale.max(s.abs()) + ABS_TOL)
        });
    }

    fn check_with(&mut self, field: &str, derived: Value, agree: impl Fn(&Value, &Value) -> bool) {
        let Some(stored) = lookup_in(self.raw, field) else { return };
        if !self.seen.insert(field.to_string()) {
            return;
        }
        *self.report.checked_per_request.entry(format!("{RECORDS}[*].{field}")).or_default() += 1;
        if !agree(stored, &derived) {
            let path = self.path(field);
            self.report.mismatches.push(Mismatch { path, stored: stored.clone(), derived });
        }
    }

    /// [`Checker::uncheck`] of the record's `field`.
    pub fn uncheck(&mut self, field: &str, reason: impl Into<String>) {
        if lookup_in(self.raw, field).is_some() && self.seen.insert(field.to_string()) {
            self.unchecked(field, reason.into());
        }
    }

    /// Counts `field` as unchecked; its first record lists it (with why).
    fn unchecked(&mut self, field: &str, reason: String) {
        let path = format!("{RECORDS}[*].{field}");
        let n = self.report.unchecked_per_request.entry(path.clone()).or_default();
        *n += 1;
        if *n == 1 {
            self.report.unchecked.push(Unchecked { path, reason });
        }
    }

    /// [`Checker::sweep`] under the record's `field`.
    pub fn sweep(&mut self, field: &str, reason: &str) {
        let Some(v) = lookup_in(self.raw, field) else { return };
        let mut leaves = Vec::new();
        collect_leaves(v, field, &mut leaves);
        for leaf in leaves {
            if !covered(&self.seen, &leaf) {
                self.unchecked(&leaf, reason.to_string());
                self.seen.insert(leaf);
            }
        }
    }
}

/// Whether `path` or a path above it was already checked or listed.
fn covered(seen: &BTreeSet<String>, path: &str) -> bool {
    let mut p = path;
    loop {
        if seen.contains(p) {
            return true;
        }
        match p.rfind(['.', '[']) {
            Some(i) => p = &p[..i],
            None => return false,
        }
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
        let m = v.as_object().unwrap();
        assert_eq!(lookup_in(m, "a.b[0].c"), Some(&json!(5)));
        assert_eq!(
            per_request_field("request_timings[3].request_canary.passed"),
            Some("request_canary.passed")
        );
        assert_eq!(per_request_field("repeats.runs[0].repeat"), None);
    }
}
