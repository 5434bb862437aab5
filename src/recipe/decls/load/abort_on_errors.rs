//! `abort-on-errors "20%" after=50`: stop a cell once that share of its
//! measured requests has failed (the rule: `anvil_loadgen`'s
//! `workload::error_budget`).

use serde_json::Value;

use super::super::super::problem::Problems;
use super::super::super::settings::Draft;

/// `abort-on-errors` as declared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AbortOnErrorsDecl {
    /// The share of failed requests that stops the cell (0.2 for "20%").
    pub share: f64,
    /// Ended requests before the share is judged (unset: 50).
    pub after: Option<u64>,
}

/// `"20%"` as a share (0.2): above 0, at most 100%.
fn share(text: &str) -> Option<f64> {
    let number: f64 = text.trim().strip_suffix('%')?.trim().parse().ok()?;
    (number.is_finite() && number > 0.0 && number <= 100.0).then_some(number / 100.0)
}

/// The declaration's `abort-on-errors` (None without one), checked.
pub(super) fn build(draft: &Draft, key: &'static str, problems: &mut Problems) -> Option<AbortOnErrorsDecl> {
    let declared = draft.settings.get(key)?;
    let mut fail = |message: String, help: &str| {
        problems.push(draft.problem_at(key, message).label(key).help(help.to_string()));
    };
    let values: Vec<&Value> =
        declared.get("values").and_then(Value::as_array).map(|v| v.iter().collect()).unwrap_or_default();
    let share = match values.as_slice() {
        [Value::String(text)] => share(text),
        _ => None,
    };
    if share.is_none() {
        let found = values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" ");
        let found = if found.is_empty() { "nothing".to_string() } else { found };
        fail(
            format!(
                "`{key}` takes one share of failed requests, \"N%\" (above 0, at most 100%), found {found}"
            ),
            "abort-on-errors \"20%\" after=50: stop once a fifth of the first 50 or more requests failed",
        );
    }
    let after = match declared.get("after") {
        None => None,
        Some(value) => match value.as_u64() {
            Some(n) if n >= 1 && n <= u64::from(u32::MAX) => Some(n),
            _ => {
                fail(
                    format!("`{key} after=` takes a count of requests, at least 1, found {value}"),
                    "after=50",
                );
                return None;
            }
        },
    };
    for property in declared.as_object().into_iter().flat_map(|o| o.keys()) {
        if property != "values" && property != "after" {
            fail(format!("`{key}` has no property `{property}`"), "`abort-on-errors` takes `after=N`");
            return None;
        }
    }
    Some(AbortOnErrorsDecl { share: share?, after })
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn the_share_reads_a_percentage() {
        assert_eq!(share("20%"), Some(0.2));
        assert_eq!(share("100%"), Some(1.0));
        for wrong in ["20", "0%", "-5%", "101%", "x%"] {
            assert_eq!(share(wrong), None, "{wrong}");
        }
    }
}
