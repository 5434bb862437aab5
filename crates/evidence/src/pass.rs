//! The one re-derivation engine: a single pass over the records, in order,
//! whatever holds them (a file read as it streams, or an array in memory).
//! Each record is checked on its own as it arrives, added to the streaming
//! tallies of the populations it belongs to, and written as one row of the
//! row file; the statistics over populations come after the pass, one
//! column at a time ([`crate::columns`]). Nothing kept grows with the
//! request count but the row file (on disk), `failures[]` and one small
//! entry per agent call ([`crate::jobs`]).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::civil_time::iso_seconds;
use crate::columns::{Col, KEYED, Row, RowWriter, Rows};
use crate::error::RederiveError;
use crate::fields::{DERIVED, INPUTS};
use crate::jobs::JobCalls;
use crate::metrics::{DISTRIBUTIONS, Derived, Group, metrics};
use crate::records::{Classifier, EligibilitySource, Req};
use crate::report::{Checker, Report};
use crate::stats::{P99_MIN_SAMPLES, Z95_PROTOCOL};
use crate::tally::Tally;
use crate::tokens::Tokens;

/// Knobs of a re-derivation. The default is the protocol.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// z of the 95% CI of the mean; the protocol's is exactly 1.96.
    pub ci_z: f64,
}

impl Default for Options {
    fn default() -> Self {
        Self { ci_z: Z95_PROTOCOL }
    }
}

/// Top-level figures that are counts over the records.
#[derive(Default)]
struct Top {
    responses_ok: u64,
    context: Map<String, Value>,
    failure_counts: Map<String, Value>,
    failures: Vec<Value>,
    open_loop: bool,
}

pub struct Pass<'h> {
    head: &'h Map<String, Value>,
    opts: Options,
    checker: Checker<'h>,
    classify: Classifier<'h>,
    rows: RowWriter,
    cell: Tally,
    repeats: BTreeMap<u64, Tally>,
    stages: BTreeMap<u64, Tally>,
    targets: Vec<(String, Tally)>,
    tokens: Tokens,
    top: Top,
    jobs: JobCalls,
}

fn io(e: std::io::Error) -> RederiveError {
    RederiveError::Scratch(e.to_string())
}

impl<'h> Pass<'h> {
    /// `head`: the artifact's top-level members but `request_timings`.
    pub fn new(head: &'h Map<String, Value>, opts: &Options) -> Result<Self, RederiveError> {
        Ok(Self {
            head,
            opts: *opts,
            checker: Checker::new(head),
            classify: Classifier::new(head),
            rows: RowWriter::new().map_err(io)?,
            cell: Tally::pooling(),
            repeats: BTreeMap::new(),
            stages: BTreeMap::new(),
            targets: Vec::new(),
            tokens: Tokens::default(),
            top: Top::default(),
            jobs: JobCalls::default(),
        })
    }

    /// Record `pos` of `request_timings`.
    pub fn record(&mut self, pos: usize, raw: &Map<String, Value>) -> Result<(), RederiveError> {
        let r = self.classify.req(pos, raw);
        let mut rc = self.checker.record(pos, raw);
        crate::per_request::check(&mut rc, self.head, &r);
        self.tokens.add(&mut rc, &r);
        self.jobs.add(&r);
        self.cell.add(&r);
        self.repeats.entry(r.repeat).or_default().add(&r);
        let stage = r.int("stage");
        if let Some(s) = stage {
            self.stages.entry(s).or_insert_with(Tally::pooling).add(&r);
        }
        let target = r.get("target").and_then(Value::as_str).map(|label| {
            match self.targets.iter().position(|(l, _)| l == label) {
                Some(i) => i,
                None => {
                    self.targets.push((label.to_string(), Tally::default()));
                    self.targets.len() - 1
                }
            }
        });
        if let Some(t) = target {
            self.targets[t].1.add(&r);
        }
        self.top_level(&r);
        let mut row = Row::default();
        for (key, col) in KEYED {
            row.set(col, r.num(key));
        }
        row.set(Col::OutputTokensInt, r.int("output_tokens").map(|n| n as f64));
        row.set(Col::StampBound, crate::client_error::bound(&r));
        row.set(Col::Repeat, Some(r.repeat as f64));
        row.set(Col::Stage, stage.map(|s| s as f64));
        row.set(Col::Target, target.map(|t| t as f64));
        row.set(Col::Eligible, Some(f64::from(u8::from(r.eligible))));
        self.rows.push(&row).map_err(io)
    }

    fn top_level(&mut self, r: &Req<'_>) {
        let top = &mut self.top;
        top.responses_ok += u64::from(r.int("http_status").is_some_and(|s| (200..300).contains(&s)));
        let bump = |m: &mut Map<String, Value>, k: String| {
            let n = m.get(&k).and_then(Value::as_u64).unwrap_or(0);
            m.insert(k, json!(n + 1));
        };
        bump(&mut top.context, r.int("planned_context_tokens").map_or("null".to_string(), |v| v.to_string()));
        if r.get("failure").is_some() {
            let class = r.failure_class.clone().unwrap_or_default();
            bump(&mut top.failure_counts, class.clone());
            top.failures.push(json!({
                "request_index": r.raw.get("request_index"),
                "repeat": r.raw.get("repeat"),
                "target": r.raw.get("target"),
                "class": class,
                "detail": r.raw.get("failure").and_then(|f| f.get("detail")),
                "http_status": r.raw.get("http_status"),
            }));
        }
        top.open_loop |= r.get("ttft_from_schedule_ms").is_some() || r.get("e2e_from_schedule_ms").is_some();
    }

    /// The figures over populations, once every record has been seen.
    pub fn finish(mut self) -> Result<Report, RederiveError> {
        let rows = self.rows.finish().map_err(io)?;
        let (head, ci_z) = (self.head, self.opts.ci_z);
        let c = &mut self.checker;
        match self.classify.source {
            EligibilitySource::Flag => {}
            EligibilitySource::FailureField => c.note("eligibility from each record's `failure` (no flag)"),
            EligibilitySource::FailuresList => c.note(
                "records carry no performance_eligible flag: eligibility inferred from failures[] and canary results",
            ),
        }
        let wall = match self.cell.wall_ms() {
            Some(w) => {
                c.check("wall_clock_ms", json!(w));
                Some(w)
            }
            None => {
                c.uncheck("wall_clock_ms", "records carry no actual_send_ms/finished_ms");
                let stored = head.get("wall_clock_ms").and_then(Value::as_f64);
                if stored.is_some() {
                    c.note("throughput checked against the stored wall_clock_ms (not re-derivable)");
                }
                stored
            }
        };
        let open_loop = self.top.open_loop;
        top_level(c, head, &self.cell, std::mem::take(&mut self.top));
        let everyone = |_: &Row| true;
        let cell = Group { tally: &self.cell, rows: &rows, member: &everyone };
        let mut derived = metrics(&cell, wall, ci_z, &|_| true);
        let repeats: Vec<u64> = self.repeats.keys().copied().collect();
        replicated(&mut derived, &rows, &self.cell, &repeats);
        for (key, d) in &derived {
            let path = format!("metrics.{key}");
            match d {
                Derived::Value(v) => c.check(&path, v.clone()),
                Derived::Unknown(why) => c.uncheck(&path, why.clone()),
            }
        }
        population(c, head, &self.cell, &derived);
        drop(derived);
        crate::repeats::check_repeats(c, head, &rows, &self.repeats, ci_z);
        crate::repeats::check_per_target(c, head, &rows, &self.targets, wall);
        crate::stages::check_stages(c, head, &rows, &self.stages, ci_z);
        crate::series::check_series(c, head, &rows);
        crate::client_error::check(c, head, &rows, open_loop);
        self.tokens.check(c, head);
        self.jobs.check(c, head);

        c.sweep("metrics", "not a metric benchmark/v1 defines");
        c.sweep("metric_population", "not a population field benchmark/v1 defines");
        c.sweep("repeats", "not a repeat field anvil defines");
        c.sweep("jobs", "not a job field anvil defines");
        c.sweep("per_target", "not a per-target field anvil defines");
        c.sweep(
            "tokens",
            "measured before the clock (the tokenizer, its words, the template probes), not in the records",
        );
        for key in head.keys() {
            if !INPUTS.contains(&key.as_str()) && !DERIVED.contains(&key.as_str()) {
                c.uncheck(key, "not defined by benchmark/v1 (added by the caller); not re-derived");
            }
        }
        if let Some(e) = rows.error() {
            return Err(io(e));
        }
        Ok(self.checker.finish())
    }
}

fn top_level(c: &mut Checker<'_>, head: &Map<String, Value>, all: &Tally, top: Top) {
    let (attempted, eligible) = (all.attempted, all.eligible);
    c.check("requests", json!(attempted));
    c.check("completed", json!(eligible));
    c.check("failed", json!(attempted - eligible));
    c.check("performance_eligible", json!(eligible > 0 && eligible == attempted));
    if all.has("http_status") {
        c.check("responses_received", json!(top.responses_ok));
    } else {
        c.uncheck("responses_received", "records carry no http_status");
    }
    if all.has("planned_context_tokens") {
        c.check("context_distribution", Value::Object(top.context));
    }
    if all.has("failure") {
        c.check("failure_counts", Value::Object(top.failure_counts));
        c.check("failures", Value::Array(top.failures));
    } else {
        c.uncheck("failures", "records carry no failure field: failures[] is the eligibility input");
        c.uncheck("failure_counts", "records carry no failure field");
    }
    for (iso, ns) in [("started_at", "started_at_unix_ns"), ("finished_at", "finished_at_unix_ns")] {
        match head.get(ns).and_then(Value::as_u64) {
            Some(ns) => c.check(iso, json!(iso_seconds(ns))),
            None => c.uncheck(iso, format!("no integer {ns}")),
        }
    }
}

/// A repeated cell's intervals are across its repeats
/// ([`crate::pool::across_replications`]): `derived`'s known figures with
/// those replaced.
fn replicated(derived: &mut [(String, Derived)], rows: &Rows, cell: &Tally, repeats: &[u64]) {
    if repeats.len() < 2 {
        return;
    }
    let mut known: Map<String, Value> = derived
        .iter()
        .filter_map(|(k, d)| match d {
            Derived::Value(v) => Some((k.clone(), v.clone())),
            Derived::Unknown(_) => None,
        })
        .collect();
    crate::pool::across_replications(rows, cell, repeats, &mut known);
    for (key, d) in derived.iter_mut() {
        if let (Derived::Value(v), Some(now)) = (d, known.remove(key.as_str())) {
            *v = now;
        }
    }
}

/// `metric_population`, from the cell's tally and its derived `metrics`.
fn population(c: &mut Checker<'_>, head: &Map<String, Value>, all: &Tally, derived: &[(String, Derived)]) {
    let (attempted, eligible) = (all.attempted, all.eligible);
    let p = |k: &str| format!("metric_population.{k}");
    c.check(&p("attempted_requests"), json!(attempted));
    c.check(&p("successful_requests"), json!(all.successful));
    c.check(&p("performance_eligible_requests"), json!(eligible));
    c.check(&p("excluded_requests"), json!(attempted - eligible));
    c.check(&p("aggregate_throughput_eligible"), json!(eligible > 0 && eligible == attempted));
    c.check(&p("p99_minimum_recommended_samples"), json!(P99_MIN_SAMPLES));
    c.uncheck(&p("failure_policy"), "policy text, not a figure");
    let label =
        |n: usize| if n >= P99_MIN_SAMPLES { "nearest-rank" } else { "descriptive-nearest-rank-only" };
    let listed: Vec<String> = head
        .get("metric_population")
        .and_then(|m| m.get("p99_samples_by_metric"))
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let mut smallest: Option<usize> = None;
    for name in &listed {
        let Some(def) = DISTRIBUTIONS.iter().find(|d| d.name == name) else {
            c.uncheck(&p(&format!("p99_samples_by_metric.{name}")), "unknown metric");
            smallest = None;
            break;
        };
        let samples = def.key("samples");
        let n = derived.iter().find(|(k, _)| *k == samples).and_then(|(_, d)| match d {
            Derived::Value(v) => v.as_u64().map(|n| n as usize),
            Derived::Unknown(_) => None,
        });
        let Some(n) = n else {
            c.uncheck(&p(&format!("p99_samples_by_metric.{name}")), "its source is not in the records");
            smallest = None;
            break;
        };
        c.check(&p(&format!("p99_samples_by_metric.{name}")), json!(n));
        c.check(&p(&format!("p99_interpretation_by_metric.{name}")), json!(label(n)));
        smallest = Some(smallest.map_or(n, |s: usize| s.min(n)));
    }
    if let Some(n) = smallest {
        c.check(&p("p99_interpretation"), json!(label(n)));
    }
}
