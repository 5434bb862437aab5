//! Which values a claim reads are sampled and which are exact: the one
//! place that says so, for gates judged over intervals
//! (`run/interval_verdict.rs`) and for the error a decision states
//! (`error_bound.rs`).
//!
//! Exact by name: a cell's counts (`completed`, `failed`, `requests`, each
//! distribution's `_samples` and `_batches`, tokens, chunks, canaries,
//! tasks, a scored dataset's `accuracy.correct` and `.n`), its flags and
//! names (`simulated`, `engine`, `schema`), its settings (`load.…`) and
//! what it kept of its answers (`answers.…`); every field of a check, a
//! task, a param, a server.
//! Everything else a cell measures is sampled: latencies, rates, shares
//! (`goodput_rate`, `prefix_cache_hit_avg`, `task_deadline_share`), job
//! metrics, the summaries across repeats (`repeats.…`), the interval ends
//! themselves. A new field is sampled until it is listed here as exact, so
//! forgetting one costs a verdict (undecided), never a wrong confidence.

use anvil_expr::{PathSegment, Reference};

/// How a claim may read a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldClass {
    /// The same on every reading of the same result: read as it is.
    Exact,
    /// A measurement with noise: read over its interval, or undecided.
    Sampled,
    /// Another step's verdict (a gate, a screen, a decision, a search):
    /// exact as read, with an error of its own that the decision states.
    Verdict,
}

/// A cell's exact fields by their last key (counts, flags, names).
const EXACT_CELL_FIELDS: &[&str] = &[
    "completed",
    "failed",
    "requests",
    "responses_received",
    "canaries_passed",
    "schema",
    "engine",
    "simulated",
    "performance_eligible",
    "throughput_performance_eligible",
    "interval_truth",
    "stopping_confidence",
    "output_tokens",
    "prompt_tokens",
    "content_chunks",
    "reasoning_chunks",
    "controlled_output_samples",
    "controlled_output_exact_adherence",
    "controlled_output_unobservable",
    "request_canary_samples",
    "request_canary_passed",
    "goodput_requests",
    "tasks",
    "tasks_completed",
    "task_deadline_met",
    // A scored dataset's `accuracy`: its counts (the share is sampled).
    "correct",
    "n",
    "unanswered",
    "items",
];

/// A cell's exact blocks: every field below them is exact.
const EXACT_CELL_BLOCKS: &[&str] = &["load", "output_token_sources", "answers"];

/// Counts of a distribution: `ttft_samples`, `e2e_batches`.
const EXACT_CELL_SUFFIXES: &[&str] = &["_samples", "_batches"];

/// How `reference` reads: exact, sampled or another step's verdict.
pub fn classify(reference: &Reference) -> FieldClass {
    match reference.kind.as_str() {
        "check" | "task" | "param" | "server" | "workload" => FieldClass::Exact,
        "gate" | "screen" | "decision" | "search" => FieldClass::Verdict,
        "cell" => cell_field(&reference.field),
        // A search's probe reads a cell's metrics by name (`probe.ttft_p99_ms`).
        "probe" => {
            let name = PathSegment::Key(reference.name.clone());
            cell_field(&[std::slice::from_ref(&name), reference.field.as_slice()].concat())
        }
        // A kind this list does not know: assume noise.
        _ => FieldClass::Sampled,
    }
}

/// Whether `reference` reads a sampled measurement.
pub fn is_sampled(reference: &Reference) -> bool {
    classify(reference) == FieldClass::Sampled
}

fn cell_field(field: &[PathSegment]) -> FieldClass {
    let keys: Vec<&str> = field
        .iter()
        .filter_map(|segment| match segment {
            PathSegment::Key(key) => Some(key.as_str()),
            PathSegment::Index(_) => None,
        })
        .collect();
    let Some(last) = keys.last() else { return FieldClass::Sampled };
    let in_block = keys.iter().any(|key| EXACT_CELL_BLOCKS.contains(key));
    // `repeats.ttft_p50_ms.samples`: how many repeats, a count.
    let counted = EXACT_CELL_SUFFIXES.iter().any(|suffix| last.ends_with(suffix)) || *last == "samples";
    // `_effective_samples` is an estimate from the data, not a count.
    let estimated = last.ends_with("_effective_samples");
    if in_block || EXACT_CELL_FIELDS.contains(last) || (counted && !estimated) {
        FieldClass::Exact
    } else {
        FieldClass::Sampled
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::run::interval_verdict::interval_of;

    /// Two stored cell results from simulated runs (`anvil show RECIPE:CELL
    /// --json`'s `result`): one with SLOs and `repeat=2`, one replaying
    /// agent traces (job metrics).
    const CELLS: &str = include_str!("../../tests/fixtures/cell-results.json");

    fn reference(cell: &str, path: &[String]) -> Reference {
        let text = format!("cell.{cell}.{} > 0", path.join("."));
        anvil_expr::parse(&text).unwrap().references().remove(0)
    }

    /// Every leaf under `value`, as its key path.
    fn leaves(value: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    path.push(key.clone());
                    leaves(inner, path, out);
                    path.pop();
                }
            }
            leaf => out.push((path.clone(), leaf.clone())),
        }
    }

    /// Walks every field of real cell results: whatever carries an
    /// interval is sampled; whatever is exact is a count, a flag, a name or
    /// a setting (an integer, a bool, a string, or under `load`), never a
    /// fractional number such as a rate or a share.
    #[test]
    fn every_field_of_a_real_cell_is_classified() {
        let cells: Value = serde_json::from_str(CELLS).unwrap();
        let inputs = serde_json::json!({ "cell": cells });
        let (mut exact, mut sampled) = (0, 0);
        for (cell, result) in cells.as_object().unwrap() {
            let mut fields = Vec::new();
            leaves(result, &mut Vec::new(), &mut fields);
            for (path, value) in fields {
                let reference = reference(cell, &path);
                let class = classify(&reference);
                if interval_of(&inputs, &reference).is_some() {
                    assert_eq!(class, FieldClass::Sampled, "{reference} has an interval");
                }
                if class == FieldClass::Exact {
                    exact += 1;
                    let whole = value.is_i64() || value.is_u64() || value.is_boolean() || value.is_string();
                    assert!(
                        whole || path[0] == "load" || value.is_null(),
                        "{reference} = {value} read as exact"
                    );
                } else {
                    sampled += 1;
                }
            }
        }
        assert!(exact > 50 && sampled > 500, "{exact} exact, {sampled} sampled");
    }

    #[test]
    fn shares_rates_repeats_and_job_metrics_are_sampled() {
        for path in [
            "metrics.goodput_rate",
            "metrics.prefix_cache_hit_avg",
            "metrics.tasks_per_min",
            "metrics.task_deadline_share",
            "metrics.ttft_p99_ms",
            "metrics.ttft_p99_ci95_high_ms",
            "metrics.e2e_effective_samples",
            "repeats.throughput_tok_s.mean",
            "aggregate_tok_s",
            "accuracy.share",
        ] {
            let parts: Vec<String> = path.split('.').map(str::to_string).collect();
            assert_eq!(classify(&reference("a", &parts)), FieldClass::Sampled, "{path}");
        }
        for path in [
            "completed",
            "metrics.ttft_samples",
            "repeats.ttft_p50_ms.samples",
            "load.resolved.seed",
            "accuracy.correct",
            "accuracy.n",
            "answers.kept",
        ] {
            let parts: Vec<String> = path.split('.').map(str::to_string).collect();
            assert_eq!(classify(&reference("a", &parts)), FieldClass::Exact, "{path}");
        }
        let other = |src: &str| classify(&anvil_expr::parse(src).unwrap().references()[0]);
        assert_eq!(other("check.j.passed"), FieldClass::Exact);
        assert_eq!(other("gate.g.passed"), FieldClass::Verdict);
        assert_eq!(other("probe.ttft_p99_ms < 1"), FieldClass::Sampled);
        assert_eq!(other("probe.completed > 1"), FieldClass::Exact);
    }
}
