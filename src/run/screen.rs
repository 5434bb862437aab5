//! `screen` steps: pick the best variant of a sweep by one metric, and say
//! why — or that there is no meaningful difference.

use anvil_expr::{JsonResolver, Reference, Value as ExprValue};
use serde_json::Value;

use super::interval_verdict;
use super::outcome::{Failure, Produced};
use crate::document::ScreenExec;
use crate::results::{self, ScreenResult};
use crate::words::Goal;

pub fn run_screen(screen: &ScreenExec, inputs: &Value) -> Result<Produced, Failure> {
    let scored = scored_variants(screen, inputs)?;
    let maximize = screen.goal == Goal::Maximize;
    let mut ranked = scored.clone();
    ranked.sort_by(|a, b| if maximize { b.1.total_cmp(&a.1) } else { a.1.total_cmp(&b.1) });
    let (winner, meaningful, reason) = match screen.confidence {
        Some(_) => at_confidence(screen, inputs, &ranked),
        None => {
            let (meaningful, reason) = by_point_estimates(screen, inputs, &ranked);
            (Some(ranked[0].0.clone()), meaningful, reason)
        }
    };
    let summary = match &winner {
        Some(w) => format!("winner {w}: {reason}"),
        None => format!("no winner: {reason}"),
    };
    let result = ScreenResult {
        metric: screen.metric.clone(),
        goal: screen.goal,
        // A value that is not finite is stored as null (as JSON has it).
        values: scored.iter().map(|(n, v)| (n.clone(), Some(*v))).collect(),
        ranking: ranked.iter().map(|(n, _)| n.clone()).collect(),
        winner,
        meaningful,
        selection_reason: reason,
        confidence: screen.confidence,
        measured_more: None,
    };
    Ok(Produced { summary, result: results::to_value(&result), ..Produced::default() })
}

/// Each variant the screen's `over` matched, with its metric (a number each).
fn scored_variants(screen: &ScreenExec, inputs: &Value) -> Result<Vec<(String, f64)>, Failure> {
    let expression =
        screen.expression.as_ref().ok_or_else(|| Failure::new("a screen needs `over` and `metric`"))?;
    let text = &expression.text;
    let value = anvil_expr::evaluate_value(&expression.parsed, &JsonResolver::new(inputs))
        .map_err(|e| Failure::new(format!("screen `{text}`: {e}")))?;
    let ExprValue::List(items) = value else {
        return Err(Failure::new(format!(
            "`over` must match a sweep (a name with `*`), got one value for `{text}`"
        )));
    };
    let mut scored: Vec<(String, f64)> = Vec::new();
    for item in items {
        let name = item.name.clone().unwrap_or_default();
        match item.value {
            ExprValue::Number(x) => scored.push((name, x)),
            other => {
                return Err(Failure::new(format!(
                    "{name}: `{}` is {}, not a number",
                    screen.metric,
                    other.type_name()
                )));
            }
        }
    }
    if scored.is_empty() {
        return Err(Failure::new(format!("`{text}` matched no results")));
    }
    Ok(scored)
}

/// A screen without `confidence`: the leader (`ranked[0]`) against the
/// others by their 95% intervals where the cells have them, else by the
/// `min-delta-pct` threshold on single measurements. Whether the win is
/// meaningful, and why.
fn by_point_estimates(screen: &ScreenExec, inputs: &Value, ranked: &[(String, f64)]) -> (bool, String) {
    let (winner, best) = (&ranked[0].0, ranked[0].1);
    let min_delta = screen.min_delta_pct;
    let metric = screen.metric.as_str();
    let Some((second, value)) = ranked.get(1) else {
        return (true, format!("{winner} is the only variant"));
    };
    let margin = if *value == 0.0 { f64::INFINITY } else { (best - value).abs() / value.abs() * 100.0 };
    // The leader against every other variant with an interval: one
    // that overlaps is a variant the leader may not beat.
    let overlapping =
        ranked[1..].iter().find(|(other, _)| intervals_overlap(inputs, winner, other, metric) == Some(true));
    let overlap = match overlapping {
        Some(_) => Some(true),
        None => intervals_overlap(inputs, winner, second, metric),
    };
    let (second, value) = overlapping.map_or((second, value), |(n, v)| (n, v));
    match overlap {
        Some(true) => (
            false,
            format!(
                "no meaningful difference: {winner} ({}) and {second} ({}) have overlapping 95% confidence intervals",
                fmt(best),
                fmt(*value)
            ),
        ),
        Some(false) => (
            true,
            format!(
                "{winner} ({}) beats {second} ({}) by {:.1}% with disjoint 95% confidence intervals",
                fmt(best),
                fmt(*value),
                margin
            ),
        ),
        None if margin < min_delta => (
            false,
            format!(
                "no meaningful difference: {winner} ({}) leads {second} ({}) by {:.1}%, under the {min_delta}% threshold (no confidence intervals: use `repeat` for them)",
                fmt(best),
                fmt(*value),
                margin
            ),
        ),
        None => (
            true,
            format!(
                "{winner} ({}) beats {second} ({}) by {:.1}% (threshold {min_delta}%; single measurement each)",
                fmt(best),
                fmt(*value),
                margin
            ),
        ),
    }
}

/// A screen with `confidence`: the leader wins only when its 95% interval
/// of the metric lies wholly on the better side of every other variant's
/// (a comparison with the best: the runner-up by point estimate may have a
/// narrow interval while a third variant's wide one still reaches past the
/// leader's); otherwise it names no winner. Returns the winner, whether it
/// is one, and why.
fn at_confidence(
    screen: &ScreenExec,
    inputs: &Value,
    ranked: &[(String, f64)],
) -> (Option<String>, bool, String) {
    let (leader, best) = &ranked[0];
    if ranked.len() == 1 {
        return (Some(leader.clone()), true, format!("{leader} is the only variant"));
    }
    let reference = screen.expression.as_ref().and_then(|e| e.parsed.references().into_iter().next());
    let interval = |name: &str| {
        let reference = Reference { name: name.to_string(), ..reference.clone()? };
        interval_verdict::interval_of(inputs, &reference)
    };
    let intervals: Vec<_> = ranked.iter().map(|(name, _)| interval(name)).collect();
    let without: Vec<&str> =
        ranked.iter().zip(&intervals).filter(|(_, i)| i.is_none()).map(|((n, _), _)| n.as_str()).collect();
    if !without.is_empty() {
        let (second, value) = &ranked[1];
        return (
            None,
            false,
            format!(
                "undecided at 95% confidence: {} has no 95% interval of `{}` ({leader} {} leads {second} {}); latency percentiles and means carry one, throughput with `repeat` 2 or more",
                without.join(" and "),
                screen.metric,
                fmt(*best),
                fmt(*value)
            ),
        );
    }
    let intervals: Vec<_> = intervals.into_iter().flatten().collect();
    let a = &intervals[0];
    let separated_from = |b: &interval_verdict::Ends| match screen.goal {
        Goal::Maximize => a.low > b.high,
        Goal::Minimize => a.high < b.low,
    };
    // The first variant the leader's interval does not clear, if any.
    let overlapping = ranked.iter().zip(&intervals).skip(1).find(|(_, b)| !separated_from(b));
    match overlapping {
        None => {
            let others = ranked.len() - 1;
            let (second, value) = &ranked[1];
            let reason = format!(
                "{leader} ({}, 95% interval {a}) beats every other variant ({others}; the runner-up {second} {}, {}): the intervals are separated",
                fmt(*best),
                fmt(*value),
                intervals[1]
            );
            (Some(leader.clone()), true, reason)
        }
        Some(((other, value), b)) => {
            let reason = format!(
                "undecided at 95% confidence: {leader} ({}, 95% interval {a}) and {other} ({}, {b}) overlap, so either may be the better; measure more (`repeat`, more requests, `extra-repeats`) to separate them",
                fmt(*best),
                fmt(*value)
            );
            (None, false, reason)
        }
    }
}

/// Whether two cells' across-repeat CIs of the metric overlap (None when a
/// cell has no CI, i.e. it was measured once).
fn intervals_overlap(inputs: &Value, a: &str, b: &str, metric: &str) -> Option<bool> {
    let key = if metric == "aggregate_tok_s" { "throughput_tok_s" } else { metric };
    let ci = |name: &str| -> Option<(f64, f64)> {
        let c = inputs.get("cell")?.get(name)?.get("repeats")?.get(key)?;
        Some((c.get("ci95_low")?.as_f64()?, c.get("ci95_high")?.as_f64()?))
    };
    let (al, ah) = ci(a)?;
    let (bl, bh) = ci(b)?;
    Some(al <= bh && bl <= ah)
}

fn fmt(x: f64) -> String {
    anvil_expr::format_number(x)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::results::ScreenResult;

    fn screen(confidence: bool) -> crate::document::ScreenExec {
        let confidence = if confidence { "confidence 0.95" } else { "" };
        crate::document::testing::screen(
            &format!(
                r#"
server "s" {{}}
cell "v-{{x}}" server="s" {{ sweep "x" "a" "b" "c"; }}
screen "pick" {{ over "cell.v-*"; metric "aggregate_tok_s"; {confidence} }}
"#
            ),
            "pick",
        )
    }

    /// The leader clears the runner-up's narrow interval, but a third
    /// variant's wide interval reaches past its own: no winner.
    fn inputs() -> serde_json::Value {
        let cell = |value: f64, low: f64, high: f64| json!({"aggregate_tok_s": value, "repeats": {"throughput_tok_s": {"ci95_low": low, "ci95_high": high}}});
        json!({"cell": {"v-a": cell(100.0, 96.0, 104.0), "v-b": cell(90.0, 88.0, 92.0), "v-c": cell(80.0, 50.0, 110.0)}})
    }

    #[test]
    fn a_winner_must_beat_every_other_variant_not_only_the_runner_up() {
        for confident in [true, false] {
            let produced = super::run_screen(&screen(confident), &inputs()).expect("screen");
            let result: ScreenResult = serde_json::from_value(produced.result).expect("a screen result");
            assert!(!result.meaningful, "{confident}: {}", result.selection_reason);
            assert!(result.selection_reason.contains("v-c"), "{confident}: {}", result.selection_reason);
        }
        // Without the wide third variant, the leader wins.
        let mut two = inputs();
        two["cell"]["v-c"]["repeats"]["throughput_tok_s"] = json!({"ci95_low": 70.0, "ci95_high": 85.0});
        let produced = super::run_screen(&screen(true), &two).expect("screen");
        let result: ScreenResult = serde_json::from_value(produced.result).expect("a screen result");
        assert!(result.meaningful && result.winner.as_deref() == Some("v-a"), "{}", result.selection_reason);
    }
}
