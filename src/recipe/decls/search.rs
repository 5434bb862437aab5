//! `search`: the highest rate (or concurrency) at which a server × workload
//! still meets an SLO. Each probe is an ordinary cell — the workload with the
//! variable set — so it has its own fingerprint and stored artifact; the
//! SLO and the stop rules belong to the search alone, never to a probe.

use std::collections::BTreeMap;

use anvil_loadgen::option_setting;
use serde_json::Value;

use super::super::expression::Expression;
use super::super::problem::Problems;
use super::super::settings::{self, Draft, Setting, SettingMap, Settings, settings};
use super::{cell, gate, load};
use crate::number_text::format_value;
use crate::step_kind::Kind;
use crate::words::{SearchMethod, SearchVariable};

/// The fields of a search's stored result (`anvil-serving.search-result/v1`),
/// which gates may read; `results::SearchResult` is tested against this list.
pub const RESULT_FIELDS: &[&str] = &[
    "schema",
    "variable",
    "method",
    "max_value",
    "max_rate",
    "max_concurrency",
    "lowest_fail",
    "boundary",
    "stopped",
    "detail",
    "slo",
    "precision",
    "budget",
    "curve",
    "simulated",
    "confidence",
    "error_rate",
    "error_basis",
    "cost",
];

/// A probe's `prompt-salt`: from its value (to a thousandth), so one value
/// always gets the same prompts and two values never share them (0 would
/// mean "no salt").
fn probe_salt(value: f64) -> u64 {
    1 + (value * 1000.0).round().max(0.0) as u64
}

/// The load generator's request count when a workload sets none.
const DEFAULT_PROBE_REQUESTS: u64 = 16;

/// The in-flight cap a rate probe sets when its workload sets no `concurrency`
/// (each request may be in flight, up to this many connections).
pub const MAX_IN_FLIGHT: u64 = 1024;

/// Probes a search makes at most when `budget` is unset.
pub const DEFAULT_BUDGET: u64 = 12;

/// The setting a search keeps its workload's settings under: they shape every
/// probe, so they enter the search's fingerprint too.
const PROBE_SETTINGS: &str = "probe-workload";

/// How close the highest passing and the lowest failing value must come.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Precision {
    /// Within this much of the variable (`precision 0.5`).
    Absolute(f64),
    /// Within this percentage of the passing value (`precision "10%"`).
    Relative(f64),
}

impl Precision {
    /// Whether `[pass, fail]` is narrow enough.
    pub fn reached(self, pass: f64, fail: f64) -> bool {
        match self {
            Precision::Absolute(width) => fail - pass <= width + 1e-9,
            Precision::Relative(pct) => fail - pass <= pass * pct / 100.0 + 1e-9,
        }
    }

    /// The width the precision allows above a passing value.
    pub fn width_at(self, pass: f64) -> f64 {
        match self {
            Precision::Absolute(width) => width,
            Precision::Relative(pct) => pass * pct / 100.0,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Precision::Absolute(width) => format!("{width}"),
            Precision::Relative(pct) => format!("{pct}%"),
        }
    }
}

settings! {
    #[derive(Debug, Clone)]
    pub struct SearchDecl {
        pub server: String = required "server" as Ref(Kind::Server) or String::new(),
        pub workload: Option<String> = "workload" as Ref(Kind::Workload),
        /// What the probes vary (the other parts of the build depend on it).
        key variable = required "variable" as Word(SearchVariable),
        pub variable: SearchVariable,
        /// `range 1 64`: the lowest and highest value.
        key range = "range" as Strings,
        key min = "min" as Number,
        key max = "max" as Number,
        pub min: f64,
        pub max: f64,
        /// The probe's limits, as expressions.
        key slo = required many "slo" as Strings,
        /// Every expression must hold for a probe to pass (`probe.ttft_p99_ms <= 2000`).
        pub slo: Vec<Expression>,
        key method = "method" as Word(SearchMethod),
        pub method: SearchMethod,
        key ladder = "ladder" as Strings,
        /// The values a `ladder` search probes, in order.
        pub ladder: Vec<f64>,
        key precision = "precision" as Strings,
        pub precision: Precision,
        /// Each probe's `repeat` (unset: the workload's).
        pub repeats: Option<u64> = "repeats" as Int,
        /// A rate probe sends `rate × this` requests (unset: the workload's
        /// `requests`), so every probe lasts as long whatever its rate.
        pub probe_duration: Option<std::time::Duration> = "probe-duration" as Duration,
        pub budget: u64 = "budget" as Int or DEFAULT_BUDGET,
        /// Stop when doubling the variable grows throughput by less than this (percent).
        pub saturation_pct: Option<f64> = "saturation-pct" as Number,
        /// Stop once a probe has failed requests.
        pub stop_on_errors: bool = "stop-on-errors" as Bool or false,
        /// Judge each probe over the 95% intervals of what its SLO reads
        /// (passed, failed or undecided) and state the answer as a bound
        /// with its error rate (`plan/search.rs`); unset, point values.
        key confidence = "confidence" as Number,
        pub confidence: Option<f64>,
        /// With `confidence`: an undecided probe is measured again, up to
        /// this many extra repeats pooled with it, before it counts as not
        /// passing.
        pub extra_repeats: u64 = "extra-repeats" as Int or 0,
        /// The probe cell without its variable: the search's name, source and
        /// the workload's settings.
        template: Draft,
    }
    /// The fields `build` makes by hand.
    struct SearchRest;
}

impl SearchDecl {
    /// The probe's declaration before its typed form is built (the probe
    /// itself, a [`Decl`](super::super::Decl), is `SearchDecl::probe`).
    pub(in crate::recipe) fn probe_draft(&self, value: f64) -> Draft {
        let mut draft = self.template.clone();
        draft.kind = Kind::Cell;
        draft.name = format!("{}@{}={}", self.template.name, self.variable, format_value(value));
        let mut set = |key: &str, value: Value| {
            let setting =
                Setting { value, span: draft.name_span, source: draft.source.clone(), hashed: true };
            draft.settings.0.insert(key.to_string(), setting);
        };
        match self.variable {
            SearchVariable::Rate => {
                let constant = self.template.settings.str(load::key::arrival) == Some("constant");
                set(load::key::arrival, Value::from(if constant { "constant" } else { "poisson" }));
                set(load::key::rate, number(value));
                // Past capacity the queue grows by (rate − capacity) each
                // second: a fixed request count makes fast probes too short
                // to show it, so a duration sets the count per rate.
                let requests = match self.probe_duration {
                    Some(duration) => {
                        let requests = (value * duration.as_secs_f64()).ceil().max(1.0) as u64;
                        set(load::key::requests, Value::from(requests));
                        requests
                    }
                    None => self.template.settings.u64(load::key::requests).unwrap_or(DEFAULT_PROBE_REQUESTS),
                };
                // An open loop's `concurrency` caps requests in flight; the
                // load generator's default (1) would queue them in the client
                // and hide the server's queue. Unset, no cap binds.
                if !self.template.settings.contains(load::key::concurrency) {
                    set(load::key::concurrency, Value::from(requests.clamp(1, MAX_IN_FLIGHT)));
                }
            }
            SearchVariable::Concurrency => set(load::key::concurrency, Value::from(value.round() as u64)),
        }
        if let Some(repeats) = self.repeats {
            set(load::key::repeat, Value::from(repeats));
        }
        // A rate probe clearly past capacity has lost: stop it there rather
        // than spend the rest of its duration on a growing queue.
        if self.variable == SearchVariable::Rate
            && !self.template.settings.contains(option_setting::stop_when_saturated)
        {
            set(option_setting::stop_when_saturated, Value::Bool(true));
        }
        // Probes share a server: with the same prompts a later probe would
        // find an earlier one's in the prefix cache and pass a rate a cold
        // server cannot hold. Each value gets prompts of its own.
        if !self.template.settings.contains(load::key::prompt_salt) {
            set(load::key::prompt_salt, Value::from(probe_salt(value)));
        }
        draft
    }

    /// A value as the variable takes it: concurrency is whole.
    pub fn snap(&self, value: f64) -> f64 {
        let value = value.clamp(self.min, self.max);
        match self.variable {
            SearchVariable::Concurrency => value.round().max(1.0),
            // Six decimals: a value's text (and the probe's fingerprint) never
            // carries binary noise such as 0.30000000000000004.
            SearchVariable::Rate => (value * 1e6).round() / 1e6,
        }
    }

    /// Why a gate's `search.NAME.FIELD…` cannot be read from this search's
    /// result (a field it never has), if it cannot.
    pub fn check_read(&self, reference: &anvil_expr::Reference) -> Option<String> {
        let Some(anvil_expr::PathSegment::Key(field)) = reference.field.first() else { return None };
        let other = match self.variable {
            SearchVariable::Rate => "max_concurrency",
            SearchVariable::Concurrency => "max_rate",
        };
        if field == other {
            return Some(format!(
                "search `{}` varies {}: read `{}` (or `max_value`)",
                reference.name,
                self.variable,
                self.answer_field()
            ));
        }
        (!RESULT_FIELDS.contains(&field.as_str())).then(|| {
            let hint = super::super::problem::did_you_mean(field, RESULT_FIELDS.iter().copied())
                .unwrap_or_else(|| format!("a search's result has: {}", RESULT_FIELDS.join(", ")));
            format!("a search's result has no field `{field}` ({hint})")
        })
    }

    /// The result field that holds the answer: `max_rate` or `max_concurrency`.
    pub fn answer_field(&self) -> &'static str {
        match self.variable {
            SearchVariable::Rate => "max_rate",
            SearchVariable::Concurrency => "max_concurrency",
        }
    }
}

fn number(value: f64) -> Value {
    serde_json::Number::from_f64(value).map(Value::Number).unwrap_or(Value::Null)
}

/// A search takes in its workload's settings for its probes (kept apart from
/// its own: a workload's `slo` is a probe setting, the search's `slo` is not).
pub(in crate::recipe) fn take_in_workload(
    search: &mut Draft,
    workloads: &BTreeMap<String, settings::Settings>,
) {
    let taken: serde_json::Map<String, Value> =
        match search.settings.str(key::workload).and_then(|name| workloads.get(name)) {
            Some(workload) => workload
                .0
                .iter()
                .filter(|(_, s)| s.hashed)
                .map(|(key, s)| (key.clone(), s.value.clone()))
                .collect(),
            None => serde_json::Map::new(),
        };
    let setting = Setting {
        value: Value::Object(taken),
        span: search.name_span,
        source: search.source.clone(),
        hashed: true,
    };
    search.settings.0.insert(PROBE_SETTINGS.into(), setting);
    if let Some(reference) = search.settings.0.get_mut(key::workload) {
        reference.hashed = false;
    }
}

pub(super) fn build(draft: &Draft, problems: &mut Problems) -> SearchDecl {
    let s = &draft.settings;
    let variable = s.str(key::variable).and_then(SearchVariable::from_word).unwrap_or(SearchVariable::Rate);
    let (min, max) = range(draft, problems);
    let ladder = numbers(draft, key::ladder, problems);
    let method = method(draft, &ladder, problems);
    let slo = slo_expressions(draft, problems);
    let mut template = draft.clone();
    template.settings = probe_settings(draft);
    let rest = SearchRest {
        variable,
        min,
        max,
        slo,
        method,
        ladder,
        precision: precision(draft, variable, problems),
        confidence: gate::confidence(draft, key::confidence, problems),
        template,
    };
    let search = SearchDecl::from_settings(s, rest);
    gate::check_extra_repeats(draft, key::extra_repeats, search.extra_repeats, problems);
    check_workload_leaves_the_load(draft, &search, problems);
    check_probe_limits(draft, &search, problems);
    search
}

/// `method`, or by default a ladder search when a `ladder` is given and a
/// bracket search otherwise; a method and a ladder that disagree are problems.
fn method(draft: &Draft, ladder: &[f64], problems: &mut Problems) -> SearchMethod {
    let s = &draft.settings;
    let method = match s.str(key::method).and_then(SearchMethod::from_word) {
        Some(method) => method,
        None if s.contains(key::ladder) => SearchMethod::Ladder,
        None => SearchMethod::Bracket,
    };
    if method == SearchMethod::Ladder && ladder.is_empty() && !s.contains(key::ladder) {
        problems.push(
            draft
                .problem_at(
                    key::method,
                    format!("{}: a ladder search needs `ladder` (the values to probe)", draft.what()),
                )
                .label("no ladder"),
        );
    }
    if method == SearchMethod::Bracket && s.contains(key::ladder) {
        problems.push(
            draft
                .problem_at(key::ladder, format!("{}: `ladder` is for `method \"ladder\"`", draft.what()))
                .label("unused")
                .help("remove `method \"bracket\"` to probe this ladder, or remove the ladder"),
        );
    }
    method
}

/// The search sets the load (its variable): a workload that decides the load
/// itself (a trace, sessions or stages), or whose probe is no valid cell, is
/// a problem.
fn check_workload_leaves_the_load(draft: &Draft, search: &SearchDecl, problems: &mut Problems) {
    for setting in [load::key::trace, load::key::sessions, load::key::stage] {
        if search.template.settings.contains(setting) {
            problems.push(
                draft
                    .problem_at(
                        key::workload,
                        format!("{}: its workload sets `{setting}`, which decides the load itself", draft.what()),
                    )
                    .label("a search varies the load")
                    .help(format!(
                        "a search's probes are its workload with `{}` set: use a workload of synthetic prompts or a dataset",
                        search.variable
                    )),
            );
        }
    }
    // A probe must be a valid cell (a workload with `stage`s or a trace sets
    // its own load, which the variable would contradict).
    let mut probe_problems = Problems::default();
    cell::build(&search.probe_draft(search.snap(search.min)), &mut probe_problems);
    if let Err(err) = probe_problems.into_result("", ()) {
        for problem in err.problems {
            problems.push(problem.help(format!(
                "{}'s probes are its workload with `{}` set: the workload must leave the load to it",
                draft.what(),
                search.variable
            )));
        }
    }
}

/// What bounds the probes: `probe-duration` (rate searches only, never
/// zero), a `budget` of one probe or more, and ladder rungs the variable
/// can take.
fn check_probe_limits(draft: &Draft, search: &SearchDecl, problems: &mut Problems) {
    let variable = search.variable;
    if search.probe_duration.is_some() && variable == SearchVariable::Concurrency {
        problems.push(
            draft
                .problem_at(
                    key::probe_duration,
                    format!("{}: `probe-duration` sets a rate probe's request count", draft.what()),
                )
                .label("for `variable \"rate\"`")
                .help("a concurrency probe sends the workload's `requests`"),
        );
    }
    if search.probe_duration.is_some_and(|d| d.is_zero()) {
        problems.push(draft.problem_at(
            key::probe_duration,
            format!("{}: a probe of no time measures nothing", draft.what()),
        ));
    }
    if search.budget == 0 {
        problems.push(
            draft.problem_at(key::budget, format!("{}: a budget of 0 probes measures nothing", draft.what())),
        );
    }
    if search
        .ladder
        .iter()
        .any(|&v| v <= 0.0 || (variable == SearchVariable::Concurrency && v.fract() != 0.0))
    {
        problems.push(
            draft
                .problem_at(
                    key::ladder,
                    format!("{}: every rung must be a positive {}", draft.what(), kind_of(variable)),
                )
                .label("invalid rung"),
        );
    }
}

fn kind_of(variable: SearchVariable) -> &'static str {
    match variable {
        SearchVariable::Rate => "rate (requests per second)",
        SearchVariable::Concurrency => "whole number",
    }
}

/// The probe's settings: the workload's, with the search's server reference.
fn probe_settings(draft: &Draft) -> Settings {
    let mut settings = SettingMap::default();
    if let Some(Value::Object(taken)) = draft.settings.get(PROBE_SETTINGS) {
        for (key, value) in taken {
            let setting = Setting {
                value: value.clone(),
                span: draft.name_span,
                source: draft.source.clone(),
                hashed: true,
            };
            settings.insert(key.clone(), setting);
        }
    }
    for (own, probe) in [(key::server, cell::key::server), (key::workload, cell::key::workload)] {
        if let Some(reference) = draft.settings.setting(own) {
            settings.insert(probe.to_string(), Setting { hashed: false, ..reference.clone() });
        }
    }
    Settings(settings)
}

/// `range 1 64`, or `min 1` and `max 64`.
fn range(draft: &Draft, problems: &mut Problems) -> (f64, f64) {
    let s = &draft.settings;
    let what = draft.what();
    let (min, max) = if s.contains(key::range) {
        if s.contains(key::min) || s.contains(key::max) {
            problems.push(
                draft
                    .problem_at(key::range, format!("{what}: give `range` or `min`/`max`, not both"))
                    .label("range given twice"),
            );
        }
        match numbers(draft, key::range, problems).as_slice() {
            [min, max] => (Some(*min), Some(*max)),
            _ => {
                problems.push(
                    draft
                        .problem_at(
                            key::range,
                            format!("{what}: `range` takes two numbers, the lowest and highest value"),
                        )
                        .label("e.g. range 1 64"),
                );
                (Some(1.0), Some(1.0))
            }
        }
    } else {
        (s.f64(key::min), s.f64(key::max))
    };
    let ladder = numbers(draft, key::ladder, &mut Problems::default());
    let lowest = ladder.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = ladder.iter().copied().fold(0.0, f64::max);
    match (min, max) {
        (Some(min), Some(max)) if min > 0.0 && min < max => (min, max),
        (Some(min), Some(max)) => {
            let setting = if s.contains(key::range) { key::range } else { key::min };
            problems.push(
                draft
                    .problem_at(
                        setting,
                        format!("{what}: the range must be 0 < min < max (got {min} … {max})"),
                    )
                    .label("empty range"),
            );
            (min.max(f64::MIN_POSITIVE), max.max(min))
        }
        // A ladder is its own range.
        (None, None) if !ladder.is_empty() => (lowest, highest.max(lowest)),
        _ => {
            problems.push(
                draft
                    .problem_at(
                        key::variable,
                        format!("{what} needs the values to search: `range 1 64` (or `min` and `max`)"),
                    )
                    .label("no range"),
            );
            (1.0, 1.0)
        }
    }
}

/// A setting of numbers (written as numbers or numeric strings).
fn numbers(draft: &Draft, key: &str, problems: &mut Problems) -> Vec<f64> {
    let mut out = Vec::new();
    for text in draft.settings.strings(key) {
        match text.trim().parse::<f64>() {
            Ok(value) if value.is_finite() => out.push(value),
            _ => problems.push(
                draft
                    .problem_at(key, format!("{}: `{key}` takes numbers, found \"{text}\"", draft.what()))
                    .label("not a number"),
            ),
        }
    }
    out
}

/// `precision 0.5` (absolute) or `precision "10%"` (relative); the default is
/// 10% for a rate and 1 for a concurrency.
fn precision(draft: &Draft, variable: SearchVariable, problems: &mut Problems) -> Precision {
    let default = match variable {
        SearchVariable::Rate => Precision::Relative(10.0),
        SearchVariable::Concurrency => Precision::Absolute(1.0),
    };
    let texts = draft.settings.strings(key::precision);
    let [text] = texts.as_slice() else {
        if !texts.is_empty() {
            problems.push(draft.problem_at(key::precision, "`precision` takes one value: 0.5 or \"10%\""));
        }
        return default;
    };
    let parsed = match text.trim().strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().ok().filter(|p| *p > 0.0).map(Precision::Relative),
        None => text.trim().parse::<f64>().ok().filter(|w| *w > 0.0).map(Precision::Absolute),
    };
    parsed.unwrap_or_else(|| {
        problems.push(
            draft
                .problem_at(
                    key::precision,
                    format!(
                        "{}: `precision` is a positive number or a percentage, found \"{text}\"",
                        draft.what()
                    ),
                )
                .label("invalid precision")
                .help("write e.g. `precision 0.5` (requests per second) or `precision \"10%\"`"),
        );
        default
    })
}

/// The SLO expressions; they read the probe (`probe.ttft_p99_ms`) and nothing else.
fn slo_expressions(draft: &Draft, problems: &mut Problems) -> Vec<Expression> {
    let Some(setting) = draft.settings.setting(key::slo) else { return Vec::new() };
    let mut out = Vec::new();
    for text in draft.settings.strings(key::slo) {
        match Expression::parse(&text, setting, (&draft.source, draft.span), &draft.what()) {
            Ok(expression) => {
                let foreign: Vec<String> = expression
                    .parsed
                    .references()
                    .into_iter()
                    .filter(|r| r.kind != "probe")
                    .map(|r| r.to_string())
                    .collect();
                if foreign.is_empty() {
                    out.push(expression);
                } else {
                    problems.push(
                        expression
                            .problem(format!(
                                "{}: an SLO reads only the probe (`probe.METRIC`), not {}",
                                draft.what(),
                                foreign.join(", ")
                            ))
                            .label("not a probe metric")
                            .help("e.g. `slo \"probe.ttft_p99_ms <= 2000\"`; use {param} to put a param's value in"),
                    );
                }
            }
            Err(problem) => problems.push(problem),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::recipe::Spec;
    use crate::recipe::testing::load_text;

    fn probe_settings(text: &str, value: f64) -> serde_json::Map<String, serde_json::Value> {
        let recipe = load_text(text).expect("loads");
        let Spec::Search(search) = &recipe.step("s").expect("search s").spec else { panic!("not a search") };
        search.probe(value).fingerprinted_settings(false).into_iter().collect()
    }

    #[test]
    fn a_rate_probe_is_the_workload_with_a_poisson_rate_and_nothing_of_the_slo() {
        let settings = probe_settings(
            r#"
server "sim"
workload "w" { requests 40; max-tokens 8; slo ttft="2s"; }
search "s" server="sim" workload="w" { variable "rate"; range 1 8; slo "probe.ttft_p99_ms <= 5"; repeats 3; }
"#,
            2.5,
        );
        let keys: Vec<&str> = settings.keys().map(String::as_str).collect();
        // The workload's own `slo` (goodput limits) is a probe setting; the
        // search's SLO, range and stop rules are not.
        assert_eq!(
            keys,
            [
                "arrival",
                "concurrency",
                "max-tokens",
                "prompt-salt",
                "rate",
                "repeat",
                "requests",
                "slo",
                "stop-when-saturated"
            ]
        );
        assert_eq!(settings["arrival"], "poisson");
        // A rate probe clearly past capacity stops there (and fails).
        assert_eq!(settings["stop-when-saturated"], true);
        // Prompts of its own: 2.5 req/s → salt 2501.
        assert_eq!(settings["prompt-salt"], 2501);
        assert_eq!(settings["rate"], 2.5);
        assert_eq!(settings["repeat"], 3);
        // No workload `concurrency`: the in-flight cap is the request count.
        assert_eq!(settings["concurrency"], 40);
    }

    #[test]
    fn a_probe_duration_sets_each_rate_probes_request_count() {
        let text = r#"
server "sim"
workload "w" { requests 40; max-tokens 8; }
search "s" server="sim" workload="w" { variable "rate"; range 1 64; slo "probe.failed == 0"; probe-duration "5s"; }
"#;
        let slow = probe_settings(text, 2.0);
        let fast = probe_settings(text, 32.5);
        assert_eq!((slow["requests"].clone(), slow["concurrency"].clone()), (10.into(), 10.into()));
        assert_eq!(fast["requests"], 163, "32.5 req/s for 5 s, rounded up");
        assert_eq!(fast["concurrency"], 163);
    }

    #[test]
    fn a_concurrency_probe_sets_only_the_concurrency() {
        let settings = probe_settings(
            r#"
server "sim"
workload "w" { requests 40; arrival "poisson"; rate 3; }
search "s" server="sim" workload="w" { variable "concurrency"; ladder 2 4; slo "probe.failed == 0"; }
"#,
            4.0,
        );
        assert_eq!(settings["concurrency"], 4);
        assert_eq!(settings["rate"], 3.0);
        assert!(!settings.contains_key("repeat"));
    }
}
