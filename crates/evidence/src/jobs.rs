//! Agent tasks judged as jobs, re-derived from the calls' records (the
//! `agent` object beside each record's times), without the load
//! generator's code, and compared with the artifact's `jobs` (its
//! `metrics` and one row per task in `tasks`) and the same keys in
//! `metrics`.
//!
//! # A task
//!
//! The records sharing (`repeat`, `agent.task`). Its start is
//! `agent.task_start_ms`; its end the latest `finished_ms` of its calls;
//! its latency end − start. It completed when every call it lists is
//! present (call places `0..=max`, every parent among them) and
//! performance-eligible. Tokens: the sums over its calls (`cached_tokens`
//! and `ideal_cached_tokens` over the calls reporting them, null when none
//! does). Its critical path starts at the call that ended last (ties: the
//! lower place) and steps to the parent that ended last (ties: the lower
//! place) until a root; `server_ms` = Σ (`finished_ms` − `actual_send_ms`)
//! and `tool_ms` = Σ `delay_ms` along it, `client_ms` = latency − both.
//! A deadline (`agent.deadline_ms`) is met when the task completed and its
//! latency is at most the deadline.
//!
//! # The replay rule, per call
//!
//! `intended_send_ms` = (a root: `task_start_ms`; else the latest
//! `finished_ms` of its parents) + `delay_ms`, within 0.001 ms (float
//! rounding); and the call was not sent before that, nor before its
//! parents ended: `actual_send_ms` ≥ max(intended, parents' end) − 0.01 ms.
//! Every call off the rule is counted; the count is reported as a mismatch
//! at `replay_rule.calls_off_rule` (the replay claims 0), and the worst
//! call (largest excess past the tolerance) as a mismatch at its own
//! `request_timings[i].intended_send_ms` against the rule's time, or, when
//! its intended time is right but it went early, at `.actual_send_ms`
//! against the earliest time allowed. A call whose parent has no record
//! cannot be checked (its task is not completed either).
//!
//! # Per cell
//!
//! `tasks`, `tasks_completed`; `tasks_span_ms` = Σ over repeats of (latest
//! task end − earliest task start); `tasks_per_min` = completed · 60000 /
//! span (null for no span). Over the completed tasks' latencies:
//! `task_mean_ms`, `task_max_ms`, `task_pP_ms` (nearest rank, P in 50, 90,
//! 95, 99) and `task_pP_ci95_{low,high}_ms` (the exact order-statistic
//! interval of [`crate::quantile_interval`], null where unbounded). Over
//! the tasks with a deadline: `task_deadline_met`, `task_deadline_share`,
//! its Clopper–Pearson 95% interval, `task_goodput_per_min` = met · 60000 /
//! span. `task_server_share` / `task_tool_share` = Σ `server_ms` /
//! `tool_ms` ÷ Σ latency over the completed tasks; `task_cached_share` =
//! Σ cached ÷ Σ prompt tokens over the tasks reporting cached tokens;
//! `task_ideal_cached_share` = Σ ideal cached ÷ Σ prompt tokens over every
//! task; `task_calls_mean`, `task_prompt_tokens_mean`,
//! `task_output_tokens_mean` over every task. A key the definitions leave
//! out (no completed task, no deadline) is derived as absent: a stored
//! non-null value there is a mismatch.
//!
//! Memory: one small entry per agent call (the records' other fields are
//! not kept), so this grows with the number of agent calls only.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::binomial::clopper_pearson;
use crate::quantile_interval;
use crate::records::Req;
use crate::report::Checker;
use crate::stats::nearest_rank_index;

/// How far `intended_send_ms` may be from the rule's time (float rounding).
pub const INTENDED_TOLERANCE_MS: f64 = 0.001;
/// How early a call may be sent against its intended time (clock reads).
pub const EARLY_SEND_TOLERANCE_MS: f64 = 0.01;
/// Percentiles of the task latency the artifact carries.
const PERCENTILES: [u32; 4] = [50, 90, 95, 99];

/// What one agent call's record says.
#[derive(Debug, Clone)]
struct Call {
    pos: usize,
    place: u64,
    task_id: Option<String>,
    parents: Vec<u64>,
    delay_ms: f64,
    task_start_ms: f64,
    deadline_ms: Option<f64>,
    intended_ms: f64,
    sent_ms: f64,
    end_ms: f64,
    eligible: bool,
    prompt: Option<u64>,
    output: Option<u64>,
    cached: Option<u64>,
    ideal: Option<u64>,
}

/// The calls of a run's agent records, gathered during the pass.
#[derive(Debug, Default)]
pub struct JobCalls {
    /// By (repeat, task), in record order.
    tasks: BTreeMap<(u64, u64), Vec<Call>>,
    /// Records whose `agent` lacks an input: (position, what is missing).
    malformed: Vec<(usize, &'static str)>,
    /// The first of them's `agent`, as stored.
    first_malformed: Option<Value>,
}

/// One task's derived row (the artifact's `jobs.tasks[i]`).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub repeat: u64,
    pub task: u64,
    pub task_id: Option<String>,
    pub start_ms: f64,
    pub end_ms: f64,
    pub latency_ms: f64,
    pub completed: bool,
    pub calls: u64,
    pub failed_calls: u64,
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: Option<u64>,
    pub ideal_cached_tokens: Option<u64>,
    pub critical_path: Vec<u64>,
    pub server_ms: f64,
    pub tool_ms: f64,
    pub client_ms: f64,
    pub deadline_ms: Option<f64>,
    pub deadline_met: Option<bool>,
}

/// One call off the replay rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// Position of its record in `request_timings`.
    pub pos: usize,
    pub repeat: u64,
    pub task: u64,
    pub call: u64,
    /// `intended_send_ms` or `actual_send_ms`: the field the rule refutes.
    pub field: &'static str,
    pub stored_ms: f64,
    /// What the rule gives for that field (the earliest allowed, for a send).
    pub rule_ms: f64,
    /// How far past the tolerance's edge (ms): the worst is the largest.
    pub excess_ms: f64,
}

/// Everything derived from the agent records.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    /// Sorted by (repeat, task).
    pub rows: Vec<TaskRow>,
    /// Every cell key the definitions name, with its value (`None`: absent).
    pub metrics: Vec<(String, Option<Value>)>,
    /// Calls whose replay rule was checked.
    pub calls_checked: u64,
    pub violations: Vec<Violation>,
    /// Records whose task facts (start, id, deadline) disagree with the
    /// task's first record, or repeat a call place: (path, stored, derived).
    pub inconsistent: Vec<(String, Value, Value)>,
}

fn opt_u64(a: &Map<String, Value>, key: &str) -> Option<u64> {
    a.get(key).and_then(Value::as_u64)
}

impl JobCalls {
    /// Whether no record carried an `agent` object.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.malformed.is_empty()
    }

    /// Record `r`, if it is an agent call.
    pub fn add(&mut self, r: &Req<'_>) {
        let Some(agent) = r.get("agent") else { return };
        let Some(a) = agent.as_object() else {
            self.malformed(r.pos, "agent (an object)", agent);
            return;
        };
        let num = |k: &str| a.get(k).and_then(Value::as_f64);
        let parents: Option<Vec<u64>> =
            a.get("parents").and_then(Value::as_array).map(|p| p.iter().filter_map(Value::as_u64).collect());
        let parents_ok =
            a.get("parents").and_then(Value::as_array).is_some_and(|p| p.iter().all(Value::is_u64));
        let missing = [
            (opt_u64(a, "task").is_none(), "agent.task (an integer)"),
            (opt_u64(a, "call").is_none(), "agent.call (an integer)"),
            (!parents_ok, "agent.parents (integers)"),
            (num("delay_ms").is_none(), "agent.delay_ms (a number)"),
            (num("task_start_ms").is_none(), "agent.task_start_ms (a number)"),
            (r.num("intended_send_ms").is_none(), "intended_send_ms (a number)"),
            (r.num("actual_send_ms").is_none(), "actual_send_ms (a number)"),
            (r.num("finished_ms").is_none(), "finished_ms (a number)"),
        ];
        if let Some((_, what)) = missing.iter().find(|(m, _)| *m) {
            self.malformed(r.pos, what, agent);
            return;
        }
        let call = Call {
            pos: r.pos,
            place: opt_u64(a, "call").unwrap_or_default(),
            task_id: a.get("task_id").and_then(Value::as_str).map(str::to_string),
            parents: parents.unwrap_or_default(),
            delay_ms: num("delay_ms").unwrap_or_default(),
            task_start_ms: num("task_start_ms").unwrap_or_default(),
            deadline_ms: num("deadline_ms"),
            intended_ms: r.num("intended_send_ms").unwrap_or_default(),
            sent_ms: r.num("actual_send_ms").unwrap_or_default(),
            end_ms: r.num("finished_ms").unwrap_or_default(),
            eligible: r.eligible,
            prompt: r.int("prompt_tokens"),
            output: r.int("output_tokens"),
            cached: r.int("cached_prompt_tokens"),
            ideal: r.int("ideal_cached_tokens"),
        };
        let task = opt_u64(a, "task").unwrap_or_default();
        self.tasks.entry((r.repeat, task)).or_default().push(call);
    }

    fn malformed(&mut self, pos: usize, what: &'static str, agent: &Value) {
        if self.malformed.is_empty() {
            self.first_malformed = Some(agent.clone());
        }
        self.malformed.push((pos, what));
    }

    /// The rows, the cell figures and the replay rule's verdicts.
    pub fn derive(&self) -> Derived {
        let mut rows = Vec::new();
        let mut violations = Vec::new();
        let mut inconsistent = Vec::new();
        let mut calls_checked = 0;
        for (&(repeat, task), calls) in &self.tasks {
            inconsistent.extend(consistency(calls));
            let (row, checked) = task_row(repeat, task, calls, &mut violations);
            calls_checked += checked;
            rows.push(row);
        }
        let metrics = cell_metrics(&rows);
        Derived { rows, metrics, calls_checked, violations, inconsistent }
    }

    /// Derives and compares everything with the artifact (`head`: its
    /// top-level members), through `c`.
    pub fn check(&self, c: &mut Checker<'_>, head: &Map<String, Value>) {
        if self.is_empty() && !head.contains_key("jobs") {
            return;
        }
        if let Some(&(pos, what)) = self.malformed.first() {
            c.fail(
                &format!("request_timings[{pos}].agent"),
                self.first_malformed.clone().unwrap_or(Value::Null),
                json!(format!("an agent call record with {what}")),
            );
            let why = format!(
                "{} agent record(s) lack an input (first: request_timings[{pos}] lacks {what})",
                self.malformed.len()
            );
            for key in metric_keys() {
                c.uncheck(&format!("jobs.metrics.{key}"), why.clone());
                c.uncheck(&format!("metrics.{key}"), why.clone());
            }
            c.uncheck("jobs.tasks", why);
            return;
        }
        let d = self.derive();
        for (path, stored, derived) in &d.inconsistent {
            c.fail(path, stored.clone(), derived.clone());
        }
        c.count_per_request("intended_send_ms", d.calls_checked);
        if let Some(worst) = d.violations.iter().max_by(|a, b| a.excess_ms.total_cmp(&b.excess_ms)) {
            let total = d.violations.len();
            c.fail("replay_rule.calls_off_rule", json!(0), json!(total));
            c.fail(
                &format!("request_timings[{}].{}", worst.pos, worst.field),
                json!(worst.stored_ms),
                json!(worst.rule_ms),
            );
            c.note(format!(
                "replay rule: {total} of {} agent calls off it; worst request_timings[{}] (repeat {}, task {}, call {}): {} {} against {} by the rule",
                d.calls_checked, worst.pos, worst.repeat, worst.task, worst.call, worst.field, worst.stored_ms, worst.rule_ms
            ));
        }
        for (key, value) in &d.metrics {
            let v = value.clone().unwrap_or(Value::Null);
            c.check(&format!("jobs.metrics.{key}"), v.clone());
            c.check(&format!("metrics.{key}"), v);
        }
        check_rows(c, head, &d.rows);
    }
}

/// Every cell key the definitions name.
pub fn metric_keys() -> Vec<String> {
    let mut keys: Vec<String> =
        ["tasks", "tasks_completed", "tasks_span_ms", "tasks_per_min", "task_mean_ms", "task_max_ms"]
            .map(String::from)
            .to_vec();
    for p in PERCENTILES {
        keys.push(format!("task_p{p}_ms"));
        keys.push(format!("task_p{p}_ci95_low_ms"));
        keys.push(format!("task_p{p}_ci95_high_ms"));
    }
    keys.extend(
        [
            "task_deadline_met",
            "task_deadline_share",
            "task_deadline_share_ci95_low",
            "task_deadline_share_ci95_high",
            "task_goodput_per_min",
            "task_server_share",
            "task_tool_share",
            "task_cached_share",
            "task_ideal_cached_share",
            "task_calls_mean",
            "task_prompt_tokens_mean",
            "task_output_tokens_mean",
        ]
        .map(String::from),
    );
    keys
}

/// Records of one task that disagree with its first on the task's own
/// facts, or repeat a call place.
fn consistency(calls: &[Call]) -> Vec<(String, Value, Value)> {
    let mut out = Vec::new();
    let Some(first) = calls.first() else { return out };
    let mut places = BTreeSet::new();
    for c in calls {
        let at = |f: &str| format!("request_timings[{}].agent.{f}", c.pos);
        if c.task_start_ms.to_bits() != first.task_start_ms.to_bits() {
            out.push((at("task_start_ms"), json!(c.task_start_ms), json!(first.task_start_ms)));
        }
        if c.task_id != first.task_id {
            out.push((at("task_id"), json!(c.task_id), json!(first.task_id)));
        }
        if c.deadline_ms.map(f64::to_bits) != first.deadline_ms.map(f64::to_bits) {
            out.push((at("deadline_ms"), json!(c.deadline_ms), json!(first.deadline_ms)));
        }
        if !places.insert(c.place) {
            out.push((at("call"), json!(c.place), json!("a call place not already taken in its task")));
        }
    }
    out
}

/// One task's row, and how many of its calls the replay rule was checked
/// on (its violations are added to `violations`).
fn task_row(repeat: u64, task: u64, calls: &[Call], violations: &mut Vec<Violation>) -> (TaskRow, u64) {
    // By place (the first record of a repeated place wins; the repeat is reported).
    let mut by_place: BTreeMap<u64, &Call> = BTreeMap::new();
    for c in calls {
        by_place.entry(c.place).or_insert(c);
    }
    let first = &calls[0];
    let start_ms = first.task_start_ms;
    let end_ms = calls.iter().map(|c| c.end_ms).fold(f64::NEG_INFINITY, f64::max);
    let latency_ms = end_ms - start_ms;
    let max_place = by_place.keys().next_back().copied().unwrap_or(0);
    let all_present = by_place.len() as u64 == max_place + 1
        && by_place.values().all(|c| c.parents.iter().all(|p| by_place.contains_key(p)));
    let failed_calls = by_place.values().filter(|c| !c.eligible).count() as u64;
    let completed = all_present && failed_calls == 0;
    let sum = |get: fn(&Call) -> Option<u64>| {
        let vals: Vec<u64> = by_place.values().filter_map(|c| get(c)).collect();
        (!vals.is_empty()).then(|| vals.iter().sum::<u64>())
    };
    let path = critical_path(&by_place);
    let server_ms: f64 = path.iter().map(|p| by_place[p].end_ms - by_place[p].sent_ms).sum();
    let tool_ms: f64 = path.iter().map(|p| by_place[p].delay_ms).sum();
    let deadline_ms = first.deadline_ms;
    let checked = check_replay_rule(repeat, task, &by_place, violations);
    let row = TaskRow {
        repeat,
        task,
        task_id: first.task_id.clone(),
        start_ms,
        end_ms,
        latency_ms,
        completed,
        calls: by_place.len() as u64,
        failed_calls,
        prompt_tokens: sum(|c| c.prompt).unwrap_or(0),
        output_tokens: sum(|c| c.output).unwrap_or(0),
        cached_tokens: sum(|c| c.cached),
        ideal_cached_tokens: sum(|c| c.ideal),
        critical_path: path,
        server_ms,
        tool_ms,
        client_ms: latency_ms - server_ms - tool_ms,
        deadline_ms,
        deadline_met: deadline_ms.map(|d| completed && latency_ms <= d),
    };
    (row, checked)
}

/// The task's critical path, as places: backwards from the call that ended
/// last, through the parent of each that ended last, then reversed.
fn critical_path(by_place: &BTreeMap<u64, &Call>) -> Vec<u64> {
    let latest = |among: &mut dyn Iterator<Item = &Call>| -> Option<u64> {
        let mut best: Option<&Call> = None;
        for c in among {
            // Strictly later, so a tie keeps the lower place (visited first).
            if best.is_none_or(|b| c.end_ms > b.end_ms) {
                best = Some(c);
            }
        }
        best.map(|b| b.place)
    };
    let mut path = Vec::new();
    let mut at = latest(&mut by_place.values().copied());
    while let Some(p) = at {
        if path.contains(&p) {
            break; // a cycle (a malformed graph): the path stops
        }
        path.push(p);
        let c = by_place[&p];
        let mut parents = c.parents.iter().filter_map(|q| by_place.get(q).copied()).collect::<Vec<_>>();
        parents.sort_by_key(|c| c.place);
        at = latest(&mut parents.into_iter());
    }
    path.reverse();
    path
}

/// The replay rule, call by call: each call is meant to be sent its delay
/// after its parents ended (its task's start, for a root), and is not sent
/// before. Breaches go to `violations`; the calls checked (those whose
/// parents were all sent) are counted.
fn check_replay_rule(
    repeat: u64,
    task: u64,
    by_place: &BTreeMap<u64, &Call>,
    violations: &mut Vec<Violation>,
) -> u64 {
    let mut checked = 0;
    for c in by_place.values() {
        let parent_ends: Vec<f64> =
            c.parents.iter().filter_map(|q| by_place.get(q)).map(|p| p.end_ms).collect();
        let ready = if c.parents.is_empty() {
            c.task_start_ms
        } else if parent_ends.len() == c.parents.len() {
            parent_ends.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        } else {
            continue; // a parent never sent: its end is unknown
        };
        checked += 1;
        let rule = ready + c.delay_ms;
        let off = (c.intended_ms - rule).abs() - INTENDED_TOLERANCE_MS;
        let earliest = c.intended_ms.max(ready);
        let early = earliest - c.sent_ms - EARLY_SEND_TOLERANCE_MS;
        let violation = |field, stored_ms, rule_ms, excess_ms| Violation {
            pos: c.pos,
            repeat,
            task,
            call: c.place,
            field,
            stored_ms,
            rule_ms,
            excess_ms,
        };
        // An intended time off the rule is the cause; an early send is one
        // only when the intended time was right.
        if off > 0.0 {
            violations.push(violation("intended_send_ms", c.intended_ms, rule, off));
        } else if early > 0.0 {
            violations.push(violation("actual_send_ms", c.sent_ms, earliest, early));
        }
    }
    checked
}

/// The cell's figures over `rows`, every key of [`metric_keys`] in its order.
fn cell_metrics(rows: &[TaskRow]) -> Vec<(String, Option<Value>)> {
    let mut m: BTreeMap<String, Value> = BTreeMap::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    let done: Vec<&TaskRow> = rows.iter().filter(|r| r.completed).collect();
    put("tasks", json!(rows.len()));
    put("tasks_completed", json!(done.len()));
    let mut span: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for r in rows {
        let e = span.entry(r.repeat).or_insert((f64::INFINITY, f64::NEG_INFINITY));
        *e = (e.0.min(r.start_ms), e.1.max(r.end_ms));
    }
    let span_ms: f64 = span.values().map(|(s, e)| (e - s).max(0.0)).sum();
    put("tasks_span_ms", json!(span_ms));
    let per_min = |n: usize| if span_ms > 0.0 { json!(n as f64 * 60_000.0 / span_ms) } else { Value::Null };
    put("tasks_per_min", per_min(done.len()));
    let mut lat: Vec<f64> = done.iter().map(|r| r.latency_ms).collect();
    lat.sort_by(f64::total_cmp);
    if let Some(&max) = lat.last() {
        put("task_mean_ms", json!(lat.iter().sum::<f64>() / lat.len() as f64));
        put("task_max_ms", json!(max));
        for p in PERCENTILES {
            put(&format!("task_p{p}_ms"), json!(lat[nearest_rank_index(p, lat.len()) - 1]));
            let (low, high) = quantile_interval::interval(&lat, p);
            put(&format!("task_p{p}_ci95_low_ms"), json!(low));
            put(&format!("task_p{p}_ci95_high_ms"), json!(high));
        }
    }
    let with_deadline: Vec<&TaskRow> = rows.iter().filter(|r| r.deadline_ms.is_some()).collect();
    if !with_deadline.is_empty() {
        let (met, n) =
            (with_deadline.iter().filter(|r| r.deadline_met == Some(true)).count(), with_deadline.len());
        let (low, high) = clopper_pearson(met as u64, n as u64, 0.95);
        put("task_deadline_met", json!(met));
        put("task_deadline_share", json!(met as f64 / n as f64));
        put("task_deadline_share_ci95_low", json!(low));
        put("task_deadline_share_ci95_high", json!(high));
        put("task_goodput_per_min", per_min(met));
    }
    let total: f64 = done.iter().map(|r| r.latency_ms).sum();
    if total > 0.0 {
        put("task_server_share", json!(done.iter().map(|r| r.server_ms).sum::<f64>() / total));
        put("task_tool_share", json!(done.iter().map(|r| r.tool_ms).sum::<f64>() / total));
    }
    let reporting = rows.iter().filter(|r| r.cached_tokens.is_some());
    let prompt_reporting: u64 = reporting.clone().map(|r| r.prompt_tokens).sum();
    if prompt_reporting > 0 {
        let cached: u64 = reporting.filter_map(|r| r.cached_tokens).sum();
        put("task_cached_share", json!(cached as f64 / prompt_reporting as f64));
    }
    let prompt: u64 = rows.iter().map(|r| r.prompt_tokens).sum();
    if prompt > 0 && rows.iter().any(|r| r.ideal_cached_tokens.is_some()) {
        let ideal: u64 = rows.iter().filter_map(|r| r.ideal_cached_tokens).sum();
        put("task_ideal_cached_share", json!(ideal as f64 / prompt as f64));
    }
    if !rows.is_empty() {
        let n = rows.len() as f64;
        put("task_calls_mean", json!(rows.iter().map(|r| r.calls as f64).sum::<f64>() / n));
        put("task_prompt_tokens_mean", json!(rows.iter().map(|r| r.prompt_tokens as f64).sum::<f64>() / n));
        put("task_output_tokens_mean", json!(rows.iter().map(|r| r.output_tokens as f64).sum::<f64>() / n));
    }
    metric_keys().into_iter().map(|k| (k.clone(), m.remove(&k))).collect()
}

/// Compares `jobs.tasks[i]` with the derived row `i` (both by repeat, then task).
fn check_rows(c: &mut Checker<'_>, head: &Map<String, Value>, rows: &[TaskRow]) {
    let stored = head.get("jobs").and_then(|j| j.get("tasks")).and_then(Value::as_array);
    let Some(stored) = stored else { return };
    for (i, r) in rows.iter().enumerate() {
        let p = |f: &str| format!("jobs.tasks[{i}].{f}");
        if stored.get(i).is_none() {
            c.fail(&format!("jobs.tasks[{i}]"), Value::Null, json!({"repeat": r.repeat, "task": r.task}));
            continue;
        }
        c.check(&p("repeat"), json!(r.repeat));
        c.check(&p("task"), json!(r.task));
        c.check(&p("task_id"), json!(r.task_id));
        c.check(&p("start_ms"), json!(r.start_ms));
        c.check(&p("end_ms"), json!(r.end_ms));
        c.check(&p("latency_ms"), json!(r.latency_ms));
        c.check(&p("completed"), json!(r.completed));
        c.check(&p("calls"), json!(r.calls));
        c.check(&p("failed_calls"), json!(r.failed_calls));
        c.check(&p("prompt_tokens"), json!(r.prompt_tokens));
        c.check(&p("output_tokens"), json!(r.output_tokens));
        c.check(&p("cached_tokens"), json!(r.cached_tokens));
        c.check(&p("ideal_cached_tokens"), json!(r.ideal_cached_tokens));
        c.check(&p("critical_path"), json!(r.critical_path));
        c.check(&p("server_ms"), json!(r.server_ms));
        c.check(&p("tool_ms"), json!(r.tool_ms));
        // A small difference of large stored times: its tolerance scales with them.
        c.check_difference(&p("client_ms"), r.client_ms, r.latency_ms.abs().max(r.end_ms.abs()));
        c.check(&p("deadline_ms"), json!(r.deadline_ms));
        c.check(&p("deadline_met"), json!(r.deadline_met));
    }
    for (i, extra) in stored.iter().enumerate().skip(rows.len()) {
        c.fail(&format!("jobs.tasks[{i}]"), extra.clone(), Value::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(place: u64, parents: Vec<u64>, sent: f64, end: f64, delay: f64) -> Call {
        Call {
            pos: place as usize,
            place,
            task_id: Some("t".into()),
            parents,
            delay_ms: delay,
            task_start_ms: 0.0,
            deadline_ms: Some(450.0),
            intended_ms: sent,
            sent_ms: sent,
            end_ms: end,
            eligible: true,
            prompt: Some(100),
            output: Some(10),
            cached: Some(50),
            ideal: Some(64),
        }
    }

    /// A plan call (0–100), two branches after delays of 50 and 10
    /// (150–400 and 110–200), a join 20 after the later branch (420–500).
    fn fan_out_and_join() -> Vec<Call> {
        vec![
            call(0, vec![], 0.0, 100.0, 0.0),
            call(1, vec![0], 150.0, 400.0, 50.0),
            call(2, vec![0], 110.0, 200.0, 10.0),
            call(3, vec![1, 2], 420.0, 500.0, 20.0),
        ]
    }

    #[test]
    fn the_critical_path_runs_through_the_branch_that_ended_last() {
        let mut v = Vec::new();
        let (row, checked) = task_row(0, 0, &fan_out_and_join(), &mut v);
        assert_eq!((checked, v.len()), (4, 0), "{v:?}");
        assert_eq!(row.critical_path, vec![0, 1, 3]);
        assert_eq!(row.latency_ms, 500.0);
        assert_eq!(row.server_ms, 100.0 + 250.0 + 80.0);
        assert_eq!(row.tool_ms, 70.0);
        assert_eq!(row.client_ms, 0.0);
        assert_eq!(row.deadline_met, Some(false), "500 ms against 450");
        assert_eq!(
            (row.prompt_tokens, row.cached_tokens, row.ideal_cached_tokens),
            (400, Some(200), Some(256))
        );
    }

    #[test]
    fn ties_keep_the_lower_place() {
        let mut calls = fan_out_and_join();
        calls[2].end_ms = 400.0; // both branches end at 400
        calls[2].sent_ms = 110.0;
        calls[3].intended_ms = 420.0;
        let (row, _) = task_row(0, 0, &calls, &mut Vec::new());
        assert_eq!(row.critical_path, vec![0, 1, 3]);
    }

    #[test]
    fn a_missing_call_or_a_failed_one_fails_the_task() {
        let mut calls = fan_out_and_join();
        calls.remove(2);
        let (row, checked) = task_row(0, 0, &calls, &mut Vec::new());
        assert!(!row.completed && row.failed_calls == 0 && row.calls == 3);
        assert_eq!(checked, 2, "the join's parent 2 is missing: its rule cannot be checked");
        let mut calls = fan_out_and_join();
        calls[1].eligible = false;
        let (row, _) = task_row(0, 0, &calls, &mut Vec::new());
        assert!(!row.completed && row.failed_calls == 1);
    }

    #[test]
    fn the_replay_rule_names_the_worst_call() {
        let mut calls = fan_out_and_join();
        calls[3].intended_ms = 410.0; // 10 ms before parent 1 ended + 20
        calls[3].sent_ms = 410.0;
        calls[2].sent_ms = 109.5; // 0.5 ms before its intended 110
        let mut v = Vec::new();
        task_row(0, 0, &calls, &mut v);
        assert_eq!(v.len(), 2, "{v:?}");
        let worst = v.iter().max_by(|a, b| a.excess_ms.total_cmp(&b.excess_ms)).unwrap();
        assert_eq!((worst.call, worst.field, worst.rule_ms), (3, "intended_send_ms", 420.0));
        let early = v.iter().find(|x| x.call == 2).unwrap();
        assert_eq!((early.field, early.rule_ms), ("actual_send_ms", 110.0));
    }

    #[test]
    fn within_the_tolerances_is_on_the_rule() {
        let mut calls = fan_out_and_join();
        calls[3].intended_ms = 420.0009;
        calls[3].sent_ms = 419.992;
        let mut v = Vec::new();
        task_row(0, 0, &calls, &mut v);
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn cell_figures_count_tasks_over_the_time_they_ran() {
        let rows: Vec<TaskRow> = (0..20u64)
            .map(|k| {
                let mut calls = fan_out_and_join();
                for c in &mut calls {
                    c.task_start_ms = k as f64 * 100.0;
                    c.intended_ms += c.task_start_ms;
                    c.sent_ms += c.task_start_ms;
                    c.end_ms += c.task_start_ms;
                    c.deadline_ms = Some(if k % 2 == 0 { 1000.0 } else { 100.0 });
                }
                task_row(0, k, &calls, &mut Vec::new()).0
            })
            .collect();
        let m: BTreeMap<String, Option<Value>> = cell_metrics(&rows).into_iter().collect();
        let get = |k: &str| m[k].clone().unwrap_or(Value::Null);
        assert_eq!(get("tasks_completed"), 20);
        assert_eq!(get("tasks_span_ms"), 2400.0);
        assert_eq!(get("tasks_per_min"), 500.0);
        assert_eq!(get("task_p50_ms"), 500.0);
        assert_eq!(get("task_deadline_met"), 10);
        assert_eq!(get("task_goodput_per_min"), 250.0);
        let (low, high) = (
            get("task_deadline_share_ci95_low").as_f64().unwrap(),
            get("task_deadline_share_ci95_high").as_f64().unwrap(),
        );
        assert!((low - 0.2720).abs() < 1e-3 && (high - 0.7280).abs() < 1e-3, "{low} {high}");
        assert!(get("task_p99_ci95_high_ms").is_null(), "20 tasks bound no p99 from above");
        assert_eq!(get("task_server_share"), 430.0 / 500.0);
        assert_eq!(get("task_cached_share"), 0.5);
        assert_eq!(get("task_ideal_cached_share"), 0.64);
        assert_eq!(get("task_calls_mean"), 4.0);
    }
}
