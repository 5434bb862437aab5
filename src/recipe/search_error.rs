//! How often a search with `confidence` states a bound above the true
//! capacity, and why.
//!
//! The claim. The search answers `max_value = v*`: "the SLO holds at v*".
//! Let the true capacity `t` be the highest value at which the SLO holds on
//! the true values of what it reads (the population percentiles and means
//! the probe's intervals estimate). Assume the SLO is monotone in load: it
//! holds at every value at or below `t` and fails above. The claim is wrong
//! exactly when `v* > t`, and `v*` is a probe that passed, so a wrong claim
//! needs a probe above `t` that passed falsely.
//!
//! One probe. A probe passes only when every SLO expression holds over the
//! whole box of the 95% intervals of what it reads (interval arithmetic,
//! `run/interval_verdict.rs`). If the SLO fails in truth, some expression
//! fails at the true values; for it to hold over its box, one of its `k`
//! intervals must miss its truth: at most `k · (1 − c)` by the union bound.
//! An undecided probe measured again looks up to `1 + extra-repeats` times,
//! each look such a test: a probe above `t` passes falsely at most
//! `ε = looks · k · (1 − c)` of the time, `k` the most sampled measurements
//! one expression reads (counts are exact: `k = 0` is an exact verdict).
//! This holds for a probe the walk chose from earlier probes' data because
//! each probe is a measurement of its own (its own prompts, its own seed
//! for an extra repeat): given that it is made, its data are fresh.
//!
//! The walk chooses probes from data, so ε is not the search's error: the
//! answer is the highest of several probes, and every probe made above `t`
//! is a chance to pass falsely. A bisection makes up to `log2(1/precision)`
//! probes above `t` (each later one nearer `t`, where a false pass is most
//! likely). With `confidence` the bracket instead doubles from `min` until
//! the first probe that does not pass, then steps up from the highest pass
//! by the precision until the first probe that does not pass. Both phases
//! only go up and stop at their first non-pass, and the values each tries
//! are fixed in advance (the doubling ladder `min · 2^i`; given the pass
//! `p` that ends it, the steps up from `p`). So if `v* > t`:
//!
//! - either `v*` came from the doubling ladder, which passed every rung up
//!   to it, including `g_t`, its lowest rung above `t`;
//! - or it came from the steps up from `p`. If `p > t`, `g_t ≤ p` passed
//!   falsely as before; else `p ≤ t < v*` makes `p` the rung below `g_t`,
//!   and the steps passed every step up to `v*`, including `s_t`, the
//!   lowest step above `t`.
//!
//! `g_t` and `s_t` depend on `t` alone, not on the data, so
//! `P(v* > t) ≤ P(g_t passes falsely) + P(s_t passes falsely) ≤ 2ε`.
//! A ladder is probed rung by rung whatever passes; its answer is the
//! highest pass below every non-pass, so `v* > t` needs `r_t`, the lowest
//! rung above `t`, to pass falsely: `P ≤ ε`. Stopping early (budget,
//! saturation, errors) only leaves probes out, which cannot add an error.
//!
//! What it leaves out: an SLO that is not monotone in load (a metric that
//! improves with load, so there is no one capacity) or probes that share
//! state (a warm cache from the probe before) break the argument; `(1 − c)` per interval is for a two-sided interval
//! missing on either side, where a false pass needs it to miss on one side
//! (the equal-tailed intervals miss there at most `(1 − c)/2`), so the
//! stated rate is conservative. The seeded tests in
//! `plan/search_error_tests.rs` count how often searches over known truths
//! state a bound above it. It lives with the recipe because a decision's
//! `family-error` reads it when the recipe loads (`search.X.max_rate >= v`).

use super::decls::SearchDecl;
use super::expression::Expression;
use crate::claims::error_bound::{is_sampled, round};
use crate::words::SearchMethod;

/// A search's stated error: at most this share of such searches state a
/// bound above the true capacity (Err: why no rate can be stated).
#[derive(Debug, Clone, PartialEq)]
pub struct StatedError {
    pub rate: Option<f64>,
    /// How the rate follows, or why there is none.
    pub basis: String,
}

/// The error rate of `search`'s bound, from its settings alone.
pub fn stated_error(search: &SearchDecl) -> StatedError {
    let Some(confidence) = search.confidence else {
        return StatedError {
            rate: None,
            basis: "no stated rate: probes are judged on their point values (add `confidence 0.95`)".into(),
        };
    };
    let k = most_sampled_reads(&search.slo);
    if k == 0 {
        return StatedError {
            rate: Some(0.0),
            basis: "exact: the SLO reads no sampled measurement, only counts".into(),
        };
    }
    let looks = 1 + search.extra_repeats;
    let (chances, how) = match search.method {
        SearchMethod::Ladder => (1, "the lowest rung above the capacity"),
        SearchMethod::Bracket => {
            (2, "the lowest doubling above the capacity and the lowest step up above it")
        }
    };
    let per_probe = looks as f64 * k as f64 * (1.0 - confidence);
    let rate = round((chances as f64 * per_probe).min(1.0));
    let basis = format!(
        "at most {rate}: a bound above the capacity needs {how} to pass falsely ({chances} × {looks} look{} × {k} interval{} × {}), if the SLO worsens with load and probes are independent",
        if looks == 1 { "" } else { "s" },
        if k == 1 { "" } else { "s" },
        round(1.0 - confidence),
    );
    StatedError { rate: Some(rate), basis }
}

/// The most sampled measurements one SLO expression reads: a probe passes
/// falsely only if an interval of the expression that fails in truth
/// misses its truth (the argument above).
pub fn most_sampled_reads(slo: &[Expression]) -> usize {
    let count = |e: &Expression| {
        let mut read: Vec<String> =
            e.parsed.references().iter().filter(|r| is_sampled(r)).map(|r| r.to_string()).collect();
        read.sort();
        read.dedup();
        read.len()
    };
    slo.iter().map(count).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::Spec;
    use crate::recipe::testing::load_text;

    fn stated(settings: &str) -> StatedError {
        let text = format!("server \"sim\"\nsearch \"s\" server=\"sim\" {{\n{settings}\n}}\n");
        let recipe = load_text(&text).expect("loads");
        let Spec::Search(search) = &recipe.step("s").expect("search").spec else { panic!("not a search") };
        stated_error(search)
    }

    #[test]
    fn the_rate_follows_the_walk_the_looks_and_the_intervals() {
        let base = "variable \"concurrency\"\nrange 1 16";
        assert_eq!(stated(&format!("{base}\nslo \"probe.ttft_p99_ms <= 5\"")).rate, None);
        let one = stated(&format!("{base}\nslo \"probe.ttft_p99_ms <= 5\"\nconfidence 0.95"));
        assert_eq!(one.rate, Some(0.1));
        assert!(one.basis.contains("2 × 1 look × 1 interval × 0.05"), "{}", one.basis);
        // The worst expression's intervals (intersection-union), each look counted.
        let two = "slo \"probe.ttft_p99_ms + probe.tpot_p90_ms <= 5\"\nslo \"probe.e2e_p50_ms <= 9\"";
        let more = stated(&format!("{base}\n{two}\nconfidence 0.95\nextra-repeats 2"));
        assert_eq!(more.rate, Some(0.6));
        let ladder =
            stated("variable \"rate\"\nladder 1 2 4\nslo \"probe.ttft_p99_ms <= 5\"\nconfidence 0.95");
        assert_eq!(ladder.rate, Some(0.05));
        // Counts are exact: nothing sampled, no error.
        assert_eq!(stated(&format!("{base}\nslo \"probe.failed == 0\"\nconfidence 0.95")).rate, Some(0.0));
    }

    /// A decision that claims a capacity (`search.s.max_rate >= v`) states
    /// the search's error when the recipe loads: `family-error` below it
    /// does not load, at it does.
    #[test]
    fn a_decision_on_a_capacity_states_the_searchs_error_at_load() {
        let text = |family: &str| {
            format!(
                "server \"sim\"\nsearch \"s\" server=\"sim\" {{\nvariable \"rate\"\nrange 1 8\nslo \"probe.ttft_p99_ms <= 5\"\nconfidence 0.95\n}}\ndecision \"d\" {{\nfamily-error {family}\nrule label=\"fast\" when=\"search.s.max_rate >= 4\"\n}}\n"
            )
        };
        match load_text(&text("0.05")) {
            Ok(_) => panic!("family-error 0.05 under a search that states 0.1 loaded"),
            Err(error) => {
                let message = error.problems.iter().map(|p| p.message.clone()).collect::<Vec<_>>().join("; ");
                assert!(message.contains("up to 0.1"), "{message}");
            }
        }
        assert!(load_text(&text("0.1")).is_ok());
    }

    #[test]
    fn confidence_and_extra_repeats_are_checked_at_load() {
        let text = |settings: &str| {
            format!(
                "server \"sim\"\nsearch \"s\" server=\"sim\" {{\nvariable \"rate\"\nrange 1 8\nslo \"probe.failed == 0\"\n{settings}\n}}\n"
            )
        };
        let error = |settings: &str| match load_text(&text(settings)) {
            Ok(_) => String::new(),
            Err(error) => error.problems.iter().map(|p| p.message.clone()).collect::<Vec<_>>().join("; "),
        };
        assert!(error("extra-repeats 2").contains("only when a verdict at a confidence is undecided"));
        assert!(error("confidence 0.9").contains("0.95"));
        assert!(error("confidence 0.95\nextra-repeats 99").contains("1 to 16"));
        assert!(load_text(&text("confidence 0.95\nextra-repeats 2")).is_ok());
    }
}
