//! `until "ttft_p99_ms" within="5%"` with `min-requests`, `max-requests`
//! and `max-duration`: a cell that stops when its named metrics' intervals
//! are narrow enough (the rule: `anvil_loadgen`'s `workload::stopping`).

use serde_json::Value;

use super::super::super::problem::Problems;
use super::super::super::settings::Draft;

/// `until` as declared: the metrics and the precision they must reach.
#[derive(Debug, Clone, PartialEq)]
pub struct UntilDecl {
    /// Artifact metric keys (`ttft_p99_ms`), checked.
    pub metrics: Vec<String>,
    /// Largest interval half-width relative to the estimate (0.05 for "5%").
    pub within: f64,
}

/// The names of the settings read here, from `LoadDecl`'s declaration.
pub(super) struct Keys {
    pub until: &'static str,
    pub bounds: [&'static str; 3],
    pub repeat: &'static str,
    pub stage: &'static str,
    pub sessions: &'static str,
    pub agents: &'static str,
}

/// `within="5%"` as a share (0.05).
fn share(text: &str) -> Option<f64> {
    let number: f64 = text.trim().strip_suffix('%')?.trim().parse().ok()?;
    (number.is_finite() && number > 0.0 && number < 100.0).then_some(number / 100.0)
}

/// The declaration's `until` (None without one), each part checked; a
/// bound without `until` and a rule the cell cannot follow are problems.
pub(super) fn build(draft: &Draft, keys: &Keys, problems: &mut Problems) -> Option<UntilDecl> {
    let s = &draft.settings;
    let Some(declared) = s.get(keys.until) else {
        for bound in keys.bounds.into_iter().filter(|b| s.contains(b)) {
            problems.push(
                draft
                    .problem_at(
                        bound,
                        format!("`{bound}` bounds a stopping rule, and {} has no `until`", draft.what()),
                    )
                    .label("no `until`")
                    .help("add `until \"ttft_p99_ms\" within=\"5%\"`, or set `requests` for a fixed count"),
            );
        }
        return None;
    };
    let mut fail = |message: String, label: &str, help: &str| {
        problems.push(draft.problem_at(keys.until, message).label(label.to_string()).help(help.to_string()));
    };
    let metrics: Vec<String> = declared
        .get("values")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(|m| m.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let mut valid = true;
    for metric in &metrics {
        if let Err(problem) = anvil_loadgen::watched_metric(metric) {
            fail(
                problem.to_string(),
                "not a watchable metric",
                "name a latency percentile or mean: \"ttft_p99_ms\", \"e2e_mean_ms\"",
            );
            valid = false;
        }
    }
    let within = match declared.get("within") {
        Some(Value::String(text)) => share(text),
        _ => None,
    };
    if within.is_none() {
        let found = declared.get("within").map_or("nothing".to_string(), |v| v.to_string());
        fail(
            format!(
                "`until` needs `within=\"N%\"` (the interval's half-width relative to the estimate), found {found}"
            ),
            "no precision",
            "within=\"5%\": stop once each metric's interval is within ±5% of its estimate",
        );
    }
    for (other, why) in [
        (keys.repeat, "a stopping rule measures one run: drop `repeat`"),
        (keys.stage, "a staged cell's stages fix its length: drop `until` or the stages"),
        (keys.sessions, "sessions cannot stop mid-conversation: drop `until` or the sessions"),
        (keys.agents, "agent tasks cannot stop mid-task: drop `until` or the agents"),
    ] {
        if s.contains(other) && !(other == keys.repeat && s.u64(other) == Some(1)) {
            fail(format!("{}: {why}", draft.what()), "conflicts", why);
            valid = false;
        }
    }
    for key in declared.as_object().into_iter().flat_map(|o| o.keys()) {
        if key != "values" && key != "within" {
            fail(
                format!("`until` has no property `{key}`"),
                "unknown property",
                "`until` takes `within=\"N%\"`",
            );
            valid = false;
        }
    }
    Some(UntilDecl { metrics, within: within? }).filter(|_| valid)
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn within_reads_a_percentage() {
        assert_eq!(share("5%"), Some(0.05));
        assert_eq!(share(" 2.5 % "), Some(0.025));
        for wrong in ["5", "0%", "-1%", "100%", "x%"] {
            assert_eq!(share(wrong), None, "{wrong}");
        }
    }
}
