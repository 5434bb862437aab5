//! A verdict with a confidence: an expression judged over the 95%
//! intervals of the measurements it reads, not over their point values.
//! Each sampled number the expression reads (`claims/field_class.rs`) is
//! replaced by the interval its result holds (a percentile's
//! `_ci95_low`/`_high`, a mean's batch-means interval, a repeated cell's
//! throughput across repeats) and the expression is evaluated once in
//! interval arithmetic (`anvil_expr::Expr::judge_over`): `passed` when it
//! holds for every value in the intervals' box, `rejected` when it fails
//! for every one, `undecided` otherwise. This holds for expressions that
//! move both ways with an input (`abs`, a difference of two cells), whose
//! extremes need not lie at the box's corners.
//!
//! Its error: a wrong verdict needs the true values outside the box, so at
//! least one of the k distinct intervals read must miss its truth, which
//! each does with probability at most 5% (two-sided): at most k × 5%.

use std::cell::RefCell;

use anvil_expr::{Evaluation, JsonResolver, PathSegment, Range, Reading, Reference, Resolver, Truth};
use serde_json::Value;

use crate::claims::field_class::is_sampled;
use crate::document::expression::ExpressionText;

/// How often one 95% interval misses its true value (either side).
pub const INTERVAL_MISS: f64 = 0.05;

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
    // A summary across repeats (`repeats.ttft_p50_ms.mean`): its t-interval.
    if last == "mean"
        && let (Some(low), Some(high)) = (parent.get("ci95_low"), parent.get("ci95_high"))
    {
        return Some(Ends { low: low.as_f64()?, high: high.as_f64()? });
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

/// A verdict over intervals and the distinct sampled numbers it read
/// through an interval: it can be wrong only when one of them misses its
/// truth, so it errs at most `intervals × INTERVAL_MISS`.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub verdict: IntervalVerdict,
    pub intervals: usize,
    /// Those numbers' paths (a wildcard's items by their node names).
    pub read: Vec<String>,
}

/// `expression` judged over the intervals of what it reads in `inputs`
/// (`{kind: {name: result}}`, as gates read them).
pub fn judge_inputs(expression: &ExpressionText, inputs: &Value) -> Judged {
    let interval = |reference: &Reference| interval_of(inputs, reference);
    judge_with(expression, &JsonResolver::new(inputs), &interval, &is_sampled)
}

/// What one judgement read: the intervals, and the sampled numbers that
/// had none (each read as "any number").
#[derive(Default)]
struct Read {
    intervals: Vec<(Reference, Ends)>,
    without: Vec<Reference>,
}

/// `expression` judged over intervals from any source: `points` resolves
/// every reference to its point value, `interval` gives a reference's
/// interval, `sampled` says whether one without an interval is sampled
/// (then it may be any number: the verdict is undecided unless the rest
/// decides alone) or exact (read at its point).
pub fn judge_with(
    expression: &ExpressionText,
    points: &dyn Resolver,
    interval: &dyn Fn(&Reference) -> Option<Ends>,
    sampled: &dyn Fn(&Reference) -> bool,
) -> Judged {
    let point = expression.parsed.eval(points);
    if !matches!(point, Evaluation::Passed { .. } | Evaluation::Rejected { .. }) {
        return Judged { verdict: IntervalVerdict::Plain(point), intervals: 0, read: Vec::new() };
    }
    let read = RefCell::new(Read::default());
    let reading = |reference: &Reference| {
        let mut read = read.borrow_mut();
        match interval(reference) {
            Some(ends) => {
                if !read.intervals.iter().any(|(r, _)| same_path(r, reference)) {
                    read.intervals.push((reference.clone(), ends));
                }
                Reading::Within(Range { low: ends.low, high: ends.high })
            }
            None if sampled(reference) => {
                if !read.without.iter().any(|r| same_path(r, reference)) {
                    read.without.push(reference.clone());
                }
                Reading::Unbounded
            }
            // A count, a check's verdict, a setting: exact, read as it is.
            None => Reading::Exact,
        }
    };
    let truth = expression.parsed.judge_over(points, &reading);
    let read = read.into_inner();
    let paths: Vec<String> = read.intervals.iter().map(|(r, _)| path(r)).collect();
    Judged { verdict: verdict(&expression.text, &point, truth, &read), intervals: paths.len(), read: paths }
}

/// `kind.name.field…` as read, whatever spacing it was written with.
fn path(reference: &Reference) -> String {
    let mut text = format!("{}.{}", reference.kind, reference.name);
    for segment in &reference.field {
        match segment {
            PathSegment::Key(key) => text.push_str(&format!(".{key}")),
            PathSegment::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

/// The verdict and its detail, from the truth over the intervals.
fn verdict(text: &str, point: &Evaluation, truth: Truth, read: &Read) -> IntervalVerdict {
    let point = point.detail();
    if read.intervals.is_empty() && read.without.is_empty() {
        let exact = format!("{point} (exact: reads no sampled measurement)");
        return match truth {
            Truth::True => IntervalVerdict::Passed(exact),
            Truth::False => IntervalVerdict::Rejected(exact),
            Truth::Unknown => IntervalVerdict::Undecided(exact),
        };
    }
    let intervals: Vec<String> = read.intervals.iter().map(|(r, e)| format!("{} in {e}", path(r))).collect();
    let k = intervals.len();
    let mut over = intervals.join(", ");
    if k > 0 {
        over.push_str(&format!(
            "; wrong only if one of these {k} intervals misses: at most {}",
            fmt(k as f64 * INTERVAL_MISS)
        ));
    }
    match truth {
        Truth::True => IntervalVerdict::Passed(format!("{point} (holds over the 95% intervals: {over})")),
        Truth::False => IntervalVerdict::Rejected(format!("{point} (fails over the 95% intervals: {over})")),
        Truth::Unknown if !read.without.is_empty() => {
            let without: Vec<String> = read.without.iter().map(path).collect();
            IntervalVerdict::Undecided(format!(
                "\"{text}\" reads {} without an interval, so no verdict at 95% confidence (point value: {point}; latency percentiles and means carry intervals, a cell's throughput with `repeat` 2 or more)",
                without.join(", ")
            ))
        }
        Truth::Unknown => IntervalVerdict::Undecided(format!(
            "undecided at 95% confidence: {point} at the point values, but the 95% intervals ({over}) allow either answer"
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

    fn expression(text: &str) -> ExpressionText {
        crate::document::testing::requirement(text)
    }

    fn p50(value: f64, low: f64, high: f64) -> Value {
        json!({ "completed": 200, "metrics": {
            "e2e_p50_ms": value, "e2e_p50_ci95_low_ms": low, "e2e_p50_ci95_high_ms": high,
            "goodput_rate": 0.95,
        }})
    }

    /// Two medians within 10%: where the box allows a ratio of 1 the
    /// verdict is undecided (each corner alone fails), and it names the two
    /// intervals it read; narrow intervals around equal medians pass.
    #[test]
    fn a_requirement_that_moves_both_ways_is_judged_over_its_whole_box() {
        let same = expression("abs(cell.a.metrics.e2e_p50_ms / cell.b.metrics.e2e_p50_ms - 1) < 0.1");
        let wide = json!({ "cell": { "a": p50(100.0, 80.0, 125.0), "b": p50(100.0, 99.0, 101.0) } });
        let judged = judge_inputs(&same, &wide);
        assert!(matches!(judged.verdict, IntervalVerdict::Undecided(_)), "{judged:?}");
        assert_eq!(judged.read, ["cell.a.metrics.e2e_p50_ms", "cell.b.metrics.e2e_p50_ms"]);
        let narrow = json!({ "cell": { "a": p50(100.0, 98.0, 103.0), "b": p50(100.0, 99.0, 101.0) } });
        assert!(matches!(judge_inputs(&same, &narrow).verdict, IntervalVerdict::Passed(_)));
    }

    /// A wildcard's items each count as an interval; a sampled share with
    /// no interval leaves the verdict undecided unless an exact part
    /// decides alone; exact values read nothing sampled.
    #[test]
    fn what_is_read_is_counted_and_what_has_no_interval_is_unknown() {
        let cells = json!({ "cell": { "a": p50(100.0, 90.0, 110.0), "b": p50(120.0, 110.0, 130.0) } });
        let max = judge_inputs(&expression("max(cell.*.metrics.e2e_p50_ms) < 200"), &cells);
        assert!(matches!(max.verdict, IntervalVerdict::Passed(_)), "{max:?}");
        assert_eq!(max.intervals, 2);
        let share = judge_inputs(&expression("cell.a.metrics.goodput_rate > 0.9"), &cells);
        assert!(
            matches!(&share.verdict, IntervalVerdict::Undecided(d) if d.contains("without an interval")),
            "{share:?}"
        );
        let decided =
            judge_inputs(&expression("cell.a.metrics.goodput_rate > 0.9 || cell.a.completed > 100"), &cells);
        assert!(matches!(decided.verdict, IntervalVerdict::Passed(_)), "{decided:?}");
        let exact = judge_inputs(&expression("cell.a.completed == 200"), &cells);
        assert!(matches!(&exact.verdict, IntervalVerdict::Passed(d) if d.contains("exact")), "{exact:?}");
        assert_eq!(exact.intervals, 0);
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

    /// The mean across repeats reads its t-interval; the other summaries
    /// across repeats (stddev, min, max) have none.
    #[test]
    fn a_mean_across_repeats_reads_its_interval() {
        let cells = json!({ "cell": { "a": { "repeats": { "ttft_p50_ms": {
            "mean": 10.0, "ci95_low": 9.0, "ci95_high": 11.5, "stddev": 0.4, "samples": 3,
        }}}}});
        assert_eq!(read(&cells, "cell.a.repeats.ttft_p50_ms.mean"), Some(Ends { low: 9.0, high: 11.5 }));
        assert_eq!(read(&cells, "cell.a.repeats.ttft_p50_ms.stddev"), None);
    }
}
