//! What a `search` probes: each probe is a cell (its own preimage and
//! fingerprint, as a hand-written cell with the same settings would have),
//! and the walk decides the next probe from the outcomes so far. The walk is
//! a pure function of the probes' stored results and the search's settings,
//! so `plan` can replay it over the store and a rerun resumes where an
//! interrupted one stopped.

use anvil_store::{Fingerprint, Store};
use anvil_words::words;
use serde_json::Value;

use super::extra_repeats::{Artifacts, ExtraRepeat, extra_of, pooled_result};
use super::fingerprint::fingerprint_of;
use super::planned::Plan;
use super::preimage::{EngineMode, Upstream, World, preimage_of};
pub use super::probe_verdict::{ProbeError, ProbeOutcome, ProbeVerdict, judge, probe_view};
use crate::number_text::format_value;
use crate::recipe::decls::SearchDecl;
pub use crate::recipe::search_error::{StatedError, stated_error};
use crate::recipe::{Decl, Recipe, Spec};
use crate::words::{SearchMethod, SearchVariable};

/// Everything needed to name, fingerprint and judge a search's probes,
/// owned so an executor can carry it.
#[derive(Debug, Clone)]
pub struct ProbeSite {
    pub name: String,
    pub search: SearchDecl,
    /// The recipe without its steps: what a cell's preimage reads of it.
    recipe: Recipe,
    server_fingerprint: Fingerprint,
    mode: EngineMode,
    /// The campaign seed: an extra repeat of a probe is measured under a
    /// seed of its own derived from it.
    seed: u64,
    /// Its server's declaration: what resolving a probe reads.
    server_decl: Decl,
}

/// Where one probe stands in the store.
pub enum Replayed {
    /// Judged, after the extra repeats it needed.
    Judged(ProbeOutcome),
    /// The probe itself is to be measured.
    Probe(Probe),
    /// An undecided probe's next extra repeat is to be measured.
    Extra(Probe, ExtraRepeat),
}

/// One probe as the plan sees it: a cell declaration and its identity.
pub struct Probe {
    pub value: f64,
    pub decl: Decl,
    pub preimage: Value,
    pub fingerprint: Fingerprint,
}

impl Probe {
    /// Its name as a cell (`{search}@rate=4`).
    pub fn name(&self) -> &str {
        &self.decl.name
    }
}

impl ProbeSite {
    /// `probe` as it is measured under `seed` (the campaign's, or an extra
    /// repeat's own), as a cell's step document would hold it.
    pub fn cell_of(&self, probe: &Probe, seed: u64) -> Option<crate::document::cell::CellExec> {
        let server = self.server_fingerprint.to_string();
        super::resolved_cell::cell_exec(&probe.decl, Some(&self.server_decl), seed, &self.recipe.key, server)
    }

    pub fn probe(&self, value: f64) -> Probe {
        let decl = self.search.probe(value);
        let upstream = [("server".to_string(), Upstream::Fingerprint(self.server_fingerprint.to_string()))];
        let (preimage, _) = preimage_of(&decl, &self.recipe, &upstream, self.mode, &mut World::default());
        Probe { value, fingerprint: fingerprint_of(&preimage), decl, preimage }
    }

    /// The stored probe at `value`, judged against the SLO (None: it, or
    /// an extra repeat it needs, is not stored).
    pub fn stored(&self, store: &Store, value: f64) -> Result<Option<ProbeOutcome>, ProbeError> {
        match self.replay(store, value, &mut Artifacts::new())? {
            Replayed::Judged(outcome) => Ok(Some(outcome)),
            Replayed::Probe(_) | Replayed::Extra(..) => Ok(None),
        }
    }

    /// Judge the probe at `value` over the store: while it is undecided and
    /// `extra-repeats` allows, pool its next extra repeat and judge again
    /// (as a gate measures more, `run/measure_more.rs`); what is not stored
    /// is returned to be measured. After the last extra repeat an undecided
    /// probe stays undecided: it does not pass.
    pub fn replay(&self, store: &Store, value: f64, read: &mut Artifacts) -> Result<Replayed, ProbeError> {
        let probe = self.probe(value);
        let result = match store.read_result(&probe.fingerprint) {
            Ok(Some(result)) => result,
            Ok(None) => return Ok(Replayed::Probe(probe)),
            Err(source) => return Err(ProbeError::Read { probe: probe.decl.name, source }),
        };
        let mut outcome = judge(&self.search, value, probe.fingerprint, &result)?;
        let budget = if self.search.confidence.is_some() { self.search.extra_repeats } else { 0 };
        let mut extras: Vec<ExtraRepeat> = Vec::new();
        while outcome.verdict == ProbeVerdict::Undecided && (extras.len() as u64) < budget {
            let round = u32::try_from(extras.len() + 1).unwrap_or(u32::MAX);
            let extra = extra_of(&probe.decl.name, probe.fingerprint, self.seed, round);
            if !store.contains(&extra.fingerprint) {
                return Ok(Replayed::Extra(probe, extra));
            }
            extras.push(extra);
            let pooled =
                pooled_result(store, read, (&probe.decl.name, probe.fingerprint), &extras, result.clone());
            let judged = pooled.map_err(|e| e.to_string()).and_then(|pooled| {
                judge(&self.search, value, probe.fingerprint, &pooled).map_err(|e| e.to_string())
            });
            match judged {
                Ok(again) => outcome = ProbeOutcome { extra_repeats: Vec::new(), ..again },
                // Pooling cannot re-derive what the SLO reads (an agent's
                // job metric): the probe stays as it was, undecided.
                Err(why) => {
                    outcome.details.push(format!("its extra repeats could not be pooled: {why}"));
                    outcome.extra_repeats = extras.iter().map(|e| e.fingerprint).collect();
                    return Ok(Replayed::Judged(outcome));
                }
            }
            outcome.extra_repeats = extras.iter().map(|e| e.fingerprint).collect();
        }
        Ok(Replayed::Judged(outcome))
    }
}

impl Plan {
    /// The probes of search step `i` (None for another kind, or a search
    /// whose server is not in the plan).
    pub fn probe_site(&self, i: usize) -> Option<ProbeSite> {
        let Spec::Search(search) = &self.recipe.steps[i].spec else { return None };
        let server = self.server_of(i)?;
        let r = &self.recipe;
        let recipe = Recipe {
            path: r.path.clone(),
            key: r.key.clone(),
            campaign: r.campaign.clone(),
            params: r.params.clone(),
            overrides: r.overrides.clone(),
            steps: Vec::new(),
            workloads: Vec::new(),
            executor: None,
            files: Vec::new(),
            sources: Vec::new(),
        };
        Some(ProbeSite {
            name: self.nodes[i].name.clone(),
            search: search.clone(),
            recipe,
            server_fingerprint: self.nodes[server].fingerprint,
            mode: self.mode,
            seed: r.campaign.seed,
            server_decl: self.recipe.steps[server].clone(),
        })
    }
}

words! {
    /// Why a search stopped probing.
    pub enum Stop {
        /// The highest pass and the lowest fail are within the precision.
        Precision = "precision",
        /// Doubling the variable no longer grew throughput by `saturation-pct`.
        Saturation = "saturation",
        /// A probe had failed requests (`stop-on-errors`).
        Errors = "errors",
        /// The probe budget is spent.
        Budget = "budget",
        /// The top of the range passed: the capacity is at least `max`.
        TopOfRange = "top-of-range",
        /// The bottom of the range failed: the capacity is below `min`.
        BottomOfRange = "bottom-of-range",
        /// Every rung of the ladder was probed.
        LadderDone = "ladder-done",
    }
}

/// The next thing a search does, given its probes in the order made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    Probe(f64),
    Stop(Stop),
}

/// The probes a walk replayed, and what it needs next.
#[derive(Debug, Clone)]
pub struct Walk {
    pub probes: Vec<ProbeOutcome>,
    pub next: Next,
}

/// Replay the search over `lookup` (a probe's outcome, or None when it is
/// not measured yet) until it needs an unmeasured probe or stops; Err: the
/// first error `lookup` returns.
pub fn walk<E>(
    search: &SearchDecl,
    mut lookup: impl FnMut(f64) -> Result<Option<ProbeOutcome>, E>,
) -> Result<Walk, E> {
    let mut probes: Vec<ProbeOutcome> = Vec::new();
    loop {
        let next = decide(search, &probes);
        let Next::Probe(value) = next else { return Ok(Walk { probes, next }) };
        match lookup(value)? {
            Some(outcome) => probes.push(outcome),
            None => return Ok(Walk { probes, next }),
        }
    }
}

/// The search's rule: bracket (double from `min` until a probe fails, then
/// bisect between the highest pass and the lowest fail) or the ladder in order.
pub fn decide(search: &SearchDecl, probes: &[ProbeOutcome]) -> Next {
    if let Some(last) = probes.last()
        && search.stop_on_errors
        && last.failed > 0
    {
        return Next::Stop(Stop::Errors);
    }
    if saturated(search, probes) {
        return Next::Stop(Stop::Saturation);
    }
    let next = match search.method {
        SearchMethod::Ladder => match search.ladder.get(probes.len()) {
            Some(&rung) => Next::Probe(search.snap(rung)),
            None => Next::Stop(Stop::LadderDone),
        },
        SearchMethod::Bracket => bracket(search, probes),
    };
    match next {
        Next::Probe(_) if probes.len() as u64 >= search.budget => Next::Stop(Stop::Budget),
        other => other,
    }
}

fn bracket(search: &SearchDecl, probes: &[ProbeOutcome]) -> Next {
    if probes.is_empty() {
        return Next::Probe(search.snap(search.min));
    }
    let lowest_fail = probes.iter().filter(|p| !p.passed).map(|p| p.value).reduce(f64::min);
    let highest_pass_below =
        |limit: f64| probes.iter().filter(|p| p.passed && p.value < limit).map(|p| p.value).reduce(f64::max);
    let Some(fail) = lowest_fail else {
        // Still doubling.
        let top = probes.iter().map(|p| p.value).fold(f64::MIN, f64::max);
        if top >= search.max {
            return Next::Stop(Stop::TopOfRange);
        }
        return Next::Probe(search.snap(top * 2.0));
    };
    let Some(pass) = highest_pass_below(fail) else { return Next::Stop(Stop::BottomOfRange) };
    if search.precision.reached(pass, fail) {
        return Next::Stop(Stop::Precision);
    }
    let next = match search.confidence {
        // Bisecting would test several values above the capacity, each a
        // chance to pass falsely; stepping up from the highest pass until
        // the first probe that does not pass tests one
        // (`plan/search_error.rs`).
        Some(_) => step_up(search, pass),
        None => search.snap((pass + fail) / 2.0),
    };
    if next <= pass || next >= fail || probes.iter().any(|p| p.value == next) {
        // The variable cannot be split finer (a whole concurrency).
        return Next::Stop(Stop::Precision);
    }
    Next::Probe(next)
}

/// The value one precision above `pass` (a whole concurrency at least one more).
fn step_up(search: &SearchDecl, pass: f64) -> f64 {
    let next = search.snap(pass + search.precision.width_at(pass));
    match search.variable {
        SearchVariable::Concurrency => next.max(search.snap(pass + 1.0)),
        SearchVariable::Rate => next,
    }
}

/// Whether the last probe doubled the variable of the one before and grew
/// throughput by less than `saturation-pct`.
fn saturated(search: &SearchDecl, probes: &[ProbeOutcome]) -> bool {
    let (Some(pct), [.., before, last]) = (search.saturation_pct, probes) else { return false };
    let doubled = last.value > before.value && before.passed;
    match (before.throughput_tok_s, last.throughput_tok_s) {
        (Some(b), Some(l)) if doubled && b > 0.0 => (l - b) / b * 100.0 < pct,
        _ => false,
    }
}

/// The highest value that passed with no failing probe at or below it.
pub fn highest_pass(probes: &[ProbeOutcome]) -> Option<f64> {
    let lowest_fail = probes.iter().filter(|p| !p.passed).map(|p| p.value).fold(f64::INFINITY, f64::min);
    probes.iter().filter(|p| p.passed && p.value < lowest_fail).map(|p| p.value).reduce(f64::max)
}

/// What `plan` says of a pending search: how many probes are stored and how
/// many it may still make.
pub(super) fn explain(plan: &Plan, i: usize, store: Option<&Store>) -> (String, bool) {
    let Some(site) = plan.probe_site(i) else { return ("search: its server is not planned".into(), true) };
    let budget = site.search.budget;
    let Some(store) = store else { return (format!("search {}: up to {budget} probes", site.name), true) };
    match walk(&site.search, |value| site.stored(store, value)) {
        Ok(Walk { probes, next: Next::Stop(stop) }) => (
            format!(
                "search {}: re-evaluates {} stored probes, sends no request (stops: {})",
                site.name,
                probes.len(),
                stop.as_str()
            ),
            false,
        ),
        Ok(Walk { probes, next: Next::Probe(value) }) => {
            let left = budget.saturating_sub(probes.len() as u64);
            let probe = format!("{}={}", site.search.variable, format_value(value));
            // The probe may be stored and undecided, waiting for an extra repeat.
            let next = match site.replay(store, value, &mut Artifacts::new()) {
                Ok(Replayed::Extra(_, extra)) => format!("extra repeat {} of {probe}", extra.round),
                _ => probe,
            };
            (
                format!("search {}: up to {left} probes, {} stored (next: {next})", site.name, probes.len()),
                true,
            )
        }
        Err(why) => (format!("search {}: {why}", site.name), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::testing::load_text;

    fn search(settings: &str) -> SearchDecl {
        let text = format!("server \"sim\"\nsearch \"s\" server=\"sim\" {{\n{settings}\n}}\n");
        let recipe = load_text(&text).expect("loads");
        let Spec::Search(search) = &recipe.step("s").expect("search").spec else { panic!("not a search") };
        search.clone()
    }

    pub(in crate::plan) fn outcome(value: f64, passed: bool) -> ProbeOutcome {
        ProbeOutcome {
            value,
            fingerprint: Fingerprint::from(blake3::hash(&value.to_le_bytes())),
            verdict: if passed { ProbeVerdict::Passed } else { ProbeVerdict::Failed },
            passed,
            details: Vec::new(),
            metrics: serde_json::Map::new(),
            throughput_tok_s: None,
            completed: 1,
            failed: 0,
            simulated: true,
            extra_repeats: Vec::new(),
        }
    }

    /// Run the walk to its end against a server whose outcome is `passes(value)`.
    fn run(search: &SearchDecl, passes: impl Fn(f64) -> (bool, f64)) -> (Vec<f64>, Stop) {
        let mut made: Vec<ProbeOutcome> = Vec::new();
        loop {
            let walked =
                walk(search, |v| Ok::<_, ProbeError>(made.iter().find(|p| p.value == v).cloned())).unwrap();
            match walked.next {
                Next::Stop(stop) => return (walked.probes.iter().map(|p| p.value).collect(), stop),
                Next::Probe(value) => {
                    let (passed, throughput) = passes(value);
                    let mut outcome = outcome(value, passed);
                    outcome.throughput_tok_s = Some(throughput);
                    made.push(outcome);
                }
            }
        }
    }

    #[test]
    fn bracket_doubles_then_bisects_to_the_precision() {
        let s = search("variable \"rate\"\nrange 2 100\nslo \"probe.ok\"\nprecision 1");
        let (values, stop) = run(&s, |v| (v <= 37.3, v));
        assert_eq!(values, [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 48.0, 40.0, 36.0, 38.0, 37.0]);
        assert_eq!(stop, Stop::Precision);
    }

    #[test]
    fn each_stop_rule() {
        let s = search("variable \"concurrency\"\nrange 1 16\nslo \"probe.ok\"\nbudget 3");
        assert_eq!(run(&s, |v| (true, v)), (vec![1.0, 2.0, 4.0], Stop::Budget));
        let s = search("variable \"concurrency\"\nrange 1 16\nslo \"probe.ok\"");
        assert_eq!(run(&s, |v| (true, v)), (vec![1.0, 2.0, 4.0, 8.0, 16.0], Stop::TopOfRange));
        assert_eq!(run(&s, |_| (false, 1.0)), (vec![1.0], Stop::BottomOfRange));
        // Whole concurrencies: 5 passes, 6 fails, within the default precision of 1.
        assert_eq!(run(&s, |v| (v <= 5.0, v)), (vec![1.0, 2.0, 4.0, 8.0, 6.0, 5.0], Stop::Precision));
        let s = search("variable \"concurrency\"\nrange 1 64\nslo \"probe.ok\"\nsaturation-pct 10");
        // Throughput flat from 4 on: doubling 4 → 8 grew it by less than 10%.
        assert_eq!(run(&s, |v| (true, v.min(4.0))), (vec![1.0, 2.0, 4.0, 8.0], Stop::Saturation));
        let s = search("variable \"rate\"\nladder 3 1 2\nslo \"probe.ok\"");
        assert_eq!(run(&s, |v| (v != 1.0, v)), (vec![3.0, 1.0, 2.0], Stop::LadderDone));
    }

    /// With a confidence the bracket steps up from the highest pass by the
    /// precision (never back below a value that did not pass), so it tests
    /// one value above the capacity after the doubling's.
    #[test]
    fn with_a_confidence_the_bracket_steps_up_from_the_highest_pass() {
        let s = search("variable \"rate\"\nrange 2 100\nslo \"probe.ok\"\nprecision 1\nconfidence 0.95");
        let (values, stop) = run(&s, |v| (v <= 37.3, v));
        assert_eq!(values, [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0]);
        assert_eq!(stop, Stop::Precision);
        let s =
            search("variable \"rate\"\nrange 10 100\nslo \"probe.ok\"\nprecision \"10%\"\nconfidence 0.95");
        let (values, _) = run(&s, |v| (v <= 14.0, v));
        assert_eq!(values, [10.0, 20.0, 11.0, 12.1, 13.31, 14.641]);
        // Whole concurrencies, a relative precision below one: one more at least.
        let s = search(
            "variable \"concurrency\"\nrange 1 16\nslo \"probe.ok\"\nprecision \"10%\"\nconfidence 0.95",
        );
        assert_eq!(run(&s, |v| (v <= 5.0, v)), (vec![1.0, 2.0, 4.0, 8.0, 5.0, 6.0], Stop::Precision));
    }

    #[test]
    fn the_answer_is_the_highest_pass_below_every_fail() {
        assert_eq!(highest_pass(&[outcome(1.0, true), outcome(2.0, false), outcome(3.0, true)]), Some(1.0));
        assert_eq!(highest_pass(&[outcome(1.0, false)]), None);
    }
}
