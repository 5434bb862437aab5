//! A verdict with a confidence: an expression judged over the 95%
//! intervals of the measurements it reads, not over their point values.
//! Each number the expression reads that carries an interval in its
//! result (a percentile's `_ci95_low`/`_high`, a mean's batch-means
//! interval, a repeated cell's throughput across repeats) is set to each
//! end of that interval in turn, every combination of ends; the verdict is
//! `passed` when the expression holds at every combination, `rejected`
//! when it fails at every one, and `undecided` otherwise: the intervals
//! allow either answer. For an expression that moves one way with each
//! number it reads (a comparison of sums, products and ratios of
//! non-negative measurements with a threshold), the combinations of ends
//! are where its extremes lie, so "holds at every one" is "holds anywhere
//! in the intervals".

use anvil_expr::{Evaluation, JsonResolver, PathSegment, Reference, Resolved, Resolver};
use serde_json::{Value, json};

use crate::recipe::Expression;
use crate::recipe::error_bound::is_sampled;

/// Most numbers with intervals one expression may read: 2^k evaluations.
const MOST_INTERVALS: usize = 8;

/// An interval's ends; an unbounded side is 0 below (every measurement
/// read this way is non-negative) and without limit above.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ends {
    pub low: f64,
    pub high: f64,
}

impl std::fmt::Display for Ends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let high = if self.high == f64::MAX { "unbounded".to_string() } else { fmt(self.high) };
        write!(f, "{}–{high}", fmt(self.low))
    }
}

/// How an expression fared over its inputs' intervals.
#[derive(Debug, Clone, PartialEq)]
pub enum IntervalVerdict {
    Passed(String),
    Rejected(String),
    Undecided(String),
    /// Not judged over intervals (missing input, error): the plain evaluation.
    Plain(Evaluation),
}

/// The `metrics` key that marks a cell measured under a stopping rule
/// (`until`): the level of the intervals its rule guarantees.
const STOPPING_CONFIDENCE: &str = "stopping_confidence";

/// The interval keys beside a metric key, most specific first: a
/// percentile's, then a mean's batch-means and independent ones. In a
/// stopped cell's block (`stopped`), only the stopping rule's interval
/// (`e2e_mean_stopping_low_ms`): the stop was chosen by looking at the
/// intervals, so the `_ci95_` ones do not hold at 95% there (docs/metrics.md
/// "Stopping rules"), and a metric the rule did not watch has none.
fn interval_keys(key: &str, stopped: bool) -> Vec<(String, String)> {
    let (base, unit) = match key.strip_suffix("_ms") {
        Some(base) => (base, "_ms"),
        None => (key, ""),
    };
    if stopped {
        return vec![(format!("{base}_stopping_low{unit}"), format!("{base}_stopping_high{unit}"))];
    }
    let mut keys = Vec::new();
    if let Some(metric) = base.strip_suffix("_mean") {
        keys.push((
            format!("{metric}_mean_batch_ci95_low{unit}"),
            format!("{metric}_mean_batch_ci95_high{unit}"),
        ));
    }
    keys.push((format!("{base}_ci95_low{unit}"), format!("{base}_ci95_high{unit}")));
    keys
}

/// The interval of the number `reference` reads in `inputs`, if its result holds one.
pub fn interval_of(inputs: &Value, reference: &Reference) -> Option<Ends> {
    let node = inputs.get(&reference.kind)?.get(&reference.name)?;
    let Some((PathSegment::Key(last), parent_path)) = reference.field.split_last() else { return None };
    let parent = Reference { field: parent_path.to_vec(), ..reference.clone() };
    let parent = parent.select(node).ok()?;
    let side = |v: Option<&Value>, unbounded: f64| match v {
        Some(Value::Null) => Some(unbounded),
        Some(v) => v.as_f64(),
        None => None,
    };
    let stopped = parent.get(STOPPING_CONFIDENCE).is_some_and(Value::is_number);
    for (low, high) in interval_keys(last, stopped) {
        if let (Some(l), Some(h)) = (side(parent.get(&low), 0.0), side(parent.get(&high), f64::MAX)) {
            return Some(Ends { low: l, high: h });
        }
    }
    // A cell's throughput: its interval across repeats.
    if reference.kind == "cell" && reference.field.len() == 1 && last == "aggregate_tok_s" {
        let across = node.get("repeats")?.get("throughput_tok_s")?;
        return Some(Ends {
            low: across.get("ci95_low")?.as_f64()?,
            high: across.get("ci95_high")?.as_f64()?,
        });
    }
    None
}

/// Whether two references read the same path (wherever they are written).
fn same_path(a: &Reference, b: &Reference) -> bool {
    a.kind == b.kind && a.name == b.name && a.field == b.field
}

/// A resolver that reads some references at chosen values.
struct Pinned<'a> {
    inner: &'a dyn Resolver,
    values: Vec<(Reference, Value)>,
}

impl Resolver for Pinned<'_> {
    fn resolve(&self, reference: &Reference) -> Resolved {
        match self.values.iter().find(|(r, _)| same_path(r, reference)) {
            Some((_, value)) => Resolved::Value(value.clone()),
            None => self.inner.resolve(reference),
        }
    }
}

/// A verdict over intervals and how many distinct sampled intervals it
/// read: the verdict can be wrong only when one of them misses its truth.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub verdict: IntervalVerdict,
    pub intervals: usize,
}

/// `expression` judged over the intervals of what it reads in `inputs`.
pub fn judge(expression: &Expression, inputs: &Value) -> IntervalVerdict {
    judge_inputs(expression, inputs).verdict
}

/// [`judge`], with the count of intervals it read.
pub fn judge_inputs(expression: &Expression, inputs: &Value) -> Judged {
    let interval = |reference: &Reference| interval_of(inputs, reference);
    judge_with(expression, &JsonResolver::new(inputs), &interval, &is_sampled)
}

/// `expression` judged over intervals from any source: `points` resolves
/// every reference to its point value, `interval` gives a sampled one's
/// interval, `sampled` says whether a reference is sampled (one without an
/// interval leaves the verdict undecided) or exact (read as its point).
pub fn judge_with(
    expression: &Expression,
    points: &dyn Resolver,
    interval: &dyn Fn(&Reference) -> Option<Ends>,
    sampled: &dyn Fn(&Reference) -> bool,
) -> Judged {
    let plain = |verdict| Judged { verdict, intervals: 0 };
    let point = expression.parsed.eval(points);
    if !matches!(point, Evaluation::Passed { .. } | Evaluation::Rejected { .. }) {
        return plain(IntervalVerdict::Plain(point));
    }
    let mut seen: Vec<Reference> = Vec::new();
    let mut intervals: Vec<(Reference, Ends)> = Vec::new();
    let mut without: Vec<String> = Vec::new();
    for reference in expression.parsed.references() {
        if reference.is_wildcard() || seen.iter().any(|r| same_path(r, &reference)) {
            continue;
        }
        seen.push(reference.clone());
        match interval(&reference) {
            Some(ends) => intervals.push((reference, ends)),
            None if sampled(&reference) => without.push(reference.to_string()),
            // A count, a check's verdict, a setting: exact, read as it is.
            None => {}
        }
    }
    let text = &expression.text;
    if !without.is_empty() {
        return plain(IntervalVerdict::Undecided(format!(
            "\"{text}\" reads {} without an interval, so no verdict at 95% confidence (point value: {}; latency percentiles and means carry intervals, a cell's throughput with `repeat` 2 or more)",
            without.join(", "),
            point.detail()
        )));
    }
    if intervals.is_empty() {
        // Nothing sampled: the verdict is exact.
        return plain(match point {
            Evaluation::Passed { detail } => {
                IntervalVerdict::Passed(format!("{detail} (exact: reads no sampled measurement)"))
            }
            Evaluation::Rejected { detail } => {
                IntervalVerdict::Rejected(format!("{detail} (exact: reads no sampled measurement)"))
            }
            other => IntervalVerdict::Plain(other),
        });
    }
    let count = intervals.len();
    Judged { verdict: over_corners(expression, points, &point, &intervals), intervals: count }
}

fn over_corners(
    expression: &Expression,
    points: &dyn Resolver,
    point: &Evaluation,
    intervals: &[(Reference, Ends)],
) -> IntervalVerdict {
    let text = &expression.text;
    if intervals.len() > MOST_INTERVALS {
        // Reading the rest as points would claim a confidence they lack.
        return IntervalVerdict::Undecided(format!(
            "\"{text}\" reads {} numbers with intervals; at most {MOST_INTERVALS} are judged together (every corner of their intervals): split it into several `require` lines (point value: {})",
            intervals.len(),
            point.detail()
        ));
    }
    let (mut held, mut failed) = (0u32, 0u32);
    for corner in 0u32..(1 << intervals.len()) {
        let values = intervals
            .iter()
            .enumerate()
            .map(|(i, (r, ends))| (r.clone(), json!(if corner >> i & 1 == 1 { ends.high } else { ends.low })))
            .collect();
        match expression.parsed.eval(&Pinned { inner: points, values }) {
            Evaluation::Passed { .. } => held += 1,
            Evaluation::Rejected { .. } => failed += 1,
            // An end the expression cannot take (a division by 0): no verdict either way.
            _ => {
                held += 1;
                failed += 1;
            }
        }
    }
    let read: Vec<String> = intervals.iter().map(|(r, e)| format!("{r} in {e}")).collect();
    let mut read = read.join(", ");
    // Right whenever every interval holds its truth: at least 1 − k·5%.
    if intervals.len() > 1 {
        let k = intervals.len();
        read.push_str(&format!(
            "; {k} intervals: right with probability at least {}",
            fmt(1.0 - 0.05 * k as f64)
        ));
    }
    match (held, failed) {
        (_, 0) => {
            IntervalVerdict::Passed(format!("{} (holds over the 95% intervals: {read})", point.detail()))
        }
        (0, _) => {
            IntervalVerdict::Rejected(format!("{} (fails over the 95% intervals: {read})", point.detail()))
        }
        _ => IntervalVerdict::Undecided(format!(
            "undecided at 95% confidence: {} at the point values, but the 95% intervals ({read}) allow either answer",
            point.detail()
        )),
    }
}

fn fmt(x: f64) -> String {
    anvil_expr::format_number(x)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(inputs: &Value, path: &str) -> Option<Ends> {
        let parsed = anvil_expr::parse(&format!("{path} > 0")).unwrap();
        interval_of(inputs, &parsed.references()[0])
    }

    /// A stopped cell's 95% intervals were looked at to choose the stop, so
    /// a verdict reads the rule's (wider) intervals there, and none for a
    /// metric the rule did not watch; a cell measured without a rule reads
    /// its 95% ones as before.
    #[test]
    fn a_stopped_cell_is_judged_on_its_rules_intervals_only() {
        let block = json!({
            "e2e_mean_ms": 100.0,
            "e2e_mean_batch_ci95_low_ms": 98.0, "e2e_mean_batch_ci95_high_ms": 102.0,
            "e2e_p90_ms": 150.0, "e2e_p90_ci95_low_ms": 140.0, "e2e_p90_ci95_high_ms": 160.0,
            "e2e_batches": 10,
        });
        let plain = json!({ "cell": { "a": { "metrics": block.clone() } } });
        assert_eq!(read(&plain, "cell.a.metrics.e2e_mean_ms"), Some(Ends { low: 98.0, high: 102.0 }));
        assert_eq!(read(&plain, "cell.a.metrics.e2e_p90_ms"), Some(Ends { low: 140.0, high: 160.0 }));

        let mut stopped = block;
        let m = stopped.as_object_mut().unwrap();
        m.insert("stopping_confidence".into(), json!(0.9909));
        m.insert("e2e_mean_stopping_low_ms".into(), json!(97.0));
        m.insert("e2e_mean_stopping_high_ms".into(), json!(103.0));
        let stopped = json!({ "cell": { "a": { "metrics": stopped } } });
        assert_eq!(read(&stopped, "cell.a.metrics.e2e_mean_ms"), Some(Ends { low: 97.0, high: 103.0 }));
        // p90 was not watched: its 95% interval is not valid at the stop, and no other is given.
        assert_eq!(read(&stopped, "cell.a.metrics.e2e_p90_ms"), None);
    }
}
