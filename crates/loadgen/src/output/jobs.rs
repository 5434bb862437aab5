//! Agent tasks judged as jobs (docs/workloads.md "Job metrics"): per task,
//! its completion time, the critical path that set it and how that path
//! split between the server, the tools and the client; per cell, tasks
//! completed per minute, task latency percentiles with their intervals,
//! and goodput against the tasks' deadline.
//!
//! Everything here follows from the calls' records (`agent` beside each
//! record's times), so `anvil verify` re-derives it from `request_timings`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use statrs::distribution::{Beta, ContinuousCDF};

use crate::observe::record::RequestRecord;
use crate::output::stats::{nearest_rank, quantile_interval_ranks};

/// What one call did, for its task's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallFacts {
    pub intended_ms: f64,
    pub sent_ms: f64,
    pub end_ms: f64,
    pub delay_ms: f64,
    pub ok: bool,
    pub prompt_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    pub ideal_cached_tokens: Option<u64>,
}

impl CallFacts {
    pub fn of(rec: &RequestRecord, delay_ms: f64) -> CallFacts {
        CallFacts {
            intended_ms: rec.intended_send_ms,
            sent_ms: rec.actual_send_ms,
            end_ms: rec.finished_ms,
            delay_ms,
            ok: rec.performance_eligible,
            prompt_tokens: rec.prompt_tokens,
            output_tokens: rec.output_tokens,
            cached_tokens: rec.cached_prompt_tokens,
            ideal_cached_tokens: rec.ideal_cached_tokens,
        }
    }
}

/// What one task did: its calls (`None`: never sent) and its graph.
#[derive(Debug, Clone)]
pub struct TaskFacts {
    pub repeat: u32,
    pub task: u64,
    pub task_id: String,
    pub start_ms: f64,
    pub deadline_ms: Option<f64>,
    pub parents: Vec<Vec<u32>>,
    pub calls: Vec<Option<CallFacts>>,
}

/// One task's row of the artifact's `jobs.tasks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskRow {
    pub repeat: u32,
    pub task: u64,
    pub task_id: String,
    /// ms after its repeat's start.
    pub start_ms: f64,
    pub end_ms: f64,
    /// Completion time: its last reply's end after its start.
    pub latency_ms: f64,
    /// Every call got a whole, eligible reply.
    pub completed: bool,
    pub calls: u32,
    pub failed_calls: u32,
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    /// Summed over the calls whose server reported it.
    pub cached_tokens: Option<u64>,
    pub ideal_cached_tokens: Option<u64>,
    /// The chain of calls that set the completion time, first to last.
    pub critical_path: Vec<u32>,
    /// Of `latency_ms`, along the critical path: the calls' time on the
    /// server (send to reply's end), their delays (tools, thinking), and
    /// the rest (the client's send lags).
    pub server_ms: f64,
    pub tool_ms: f64,
    pub client_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_met: Option<bool>,
}

/// The artifact's `jobs`: the per-cell figures (also in `metrics`, where
/// gates read them) and one row per task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Jobs {
    pub metrics: Map<String, Value>,
    pub tasks: Vec<TaskRow>,
}

impl Jobs {
    /// A cell figure as a number (`None` when absent or null: unbounded).
    pub fn metric(&self, key: &str) -> Option<f64> {
        self.metrics.get(key).and_then(Value::as_f64)
    }
}

impl TaskFacts {
    pub fn row(&self) -> TaskRow {
        let sent: Vec<(usize, &CallFacts)> =
            self.calls.iter().enumerate().filter_map(|(c, f)| f.as_ref().map(|f| (c, f))).collect();
        let end_ms = sent.iter().map(|(_, f)| f.end_ms).fold(self.start_ms, f64::max);
        let latency_ms = end_ms - self.start_ms;
        let failed_calls = sent.iter().filter(|(_, f)| !f.ok).count() as u32;
        let completed = failed_calls == 0 && sent.len() == self.calls.len();
        let sum = |get: fn(&CallFacts) -> Option<u64>| -> Option<u64> {
            let values: Vec<u64> = sent.iter().filter_map(|(_, f)| get(f)).collect();
            (!values.is_empty()).then(|| values.iter().sum())
        };
        // The critical path: from the call that ended last, back through
        // the parent that ended last (ties: the earlier call).
        let end_of = |c: usize| self.calls[c].as_ref().map_or(f64::NEG_INFINITY, |f| f.end_ms);
        let latest = |calls: &mut dyn Iterator<Item = usize>| {
            calls.fold(None, |best: Option<usize>, c| match best {
                Some(b) if end_of(b) >= end_of(c) => Some(b),
                _ => Some(c),
            })
        };
        let mut path = Vec::new();
        let mut at = latest(&mut sent.iter().map(|(c, _)| *c));
        while let Some(c) = at {
            path.push(c as u32);
            at = latest(&mut self.parents[c].iter().map(|&p| p as usize));
        }
        path.reverse();
        let on_path = || path.iter().filter_map(|&c| self.calls[c as usize].as_ref());
        let server_ms: f64 = on_path().map(|f| f.end_ms - f.sent_ms).sum();
        let tool_ms: f64 = on_path().map(|f| f.delay_ms).sum();
        let deadline_met = self.deadline_ms.map(|d| completed && latency_ms <= d);
        TaskRow {
            repeat: self.repeat,
            task: self.task,
            task_id: self.task_id.clone(),
            start_ms: self.start_ms,
            end_ms,
            latency_ms,
            completed,
            calls: sent.len() as u32,
            failed_calls,
            prompt_tokens: sum(|f| f.prompt_tokens).unwrap_or(0),
            output_tokens: sum(|f| f.output_tokens).unwrap_or(0),
            cached_tokens: sum(|f| f.cached_tokens),
            ideal_cached_tokens: sum(|f| f.ideal_cached_tokens),
            critical_path: path,
            server_ms,
            tool_ms,
            client_ms: latency_ms - server_ms - tool_ms,
            deadline_ms: self.deadline_ms,
            deadline_met,
        }
    }
}

/// The two-sided 95% Clopper–Pearson interval of `k` in `n`.
fn share_interval(k: u64, n: u64) -> (f64, f64) {
    let (k, n) = (k as f64, n as f64);
    let quantile = |a: f64, b: f64, p: f64| Beta::new(a, b).map(|d| d.inverse_cdf(p));
    let low = if k == 0.0 { 0.0 } else { quantile(k, n - k + 1.0, 0.025).unwrap_or(0.0) };
    let high = if k == n { 1.0 } else { quantile(k + 1.0, n - k, 0.975).unwrap_or(1.0) };
    (low, high)
}

/// The per-cell figures of `rows` (every repeat's tasks).
pub fn summarize(mut rows: Vec<TaskRow>) -> Jobs {
    rows.sort_by_key(|r| (r.repeat, r.task));
    let mut m = Map::new();
    let completed: Vec<&TaskRow> = rows.iter().filter(|r| r.completed).collect();
    m.insert("tasks".into(), json!(rows.len()));
    m.insert("tasks_completed".into(), json!(completed.len()));
    // The time tasks ran: per repeat, first start to last end.
    let mut span_ms = 0.0;
    for repeat in rows.iter().map(|r| r.repeat).collect::<std::collections::BTreeSet<_>>() {
        let of = rows.iter().filter(|r| r.repeat == repeat);
        let start = of.clone().map(|r| r.start_ms).fold(f64::INFINITY, f64::min);
        let end = of.map(|r| r.end_ms).fold(f64::NEG_INFINITY, f64::max);
        span_ms += (end - start).max(0.0);
    }
    m.insert("tasks_span_ms".into(), json!(span_ms));
    let per_min = |n: usize| (span_ms > 0.0).then(|| n as f64 * 60_000.0 / span_ms);
    m.insert("tasks_per_min".into(), json!(per_min(completed.len())));
    let mut latencies: Vec<f64> = completed.iter().map(|r| r.latency_ms).collect();
    latencies.sort_by(f64::total_cmp);
    if !latencies.is_empty() {
        m.insert("task_mean_ms".into(), json!(latencies.iter().sum::<f64>() / latencies.len() as f64));
        m.insert("task_max_ms".into(), json!(latencies[latencies.len() - 1]));
        for p in [50u32, 90, 95, 99] {
            m.insert(format!("task_p{p}_ms"), json!(nearest_rank(&latencies, p)));
            // Exact order-statistic ranks: tasks are the sample units.
            let (low, high) = quantile_interval_ranks(latencies.len(), p);
            m.insert(format!("task_p{p}_ci95_low_ms"), json!(low.map(|r| latencies[r - 1])));
            m.insert(format!("task_p{p}_ci95_high_ms"), json!(high.map(|r| latencies[r - 1])));
        }
    }
    let with_deadline: Vec<&TaskRow> = rows.iter().filter(|r| r.deadline_ms.is_some()).collect();
    if !with_deadline.is_empty() {
        let met = with_deadline.iter().filter(|r| r.deadline_met == Some(true)).count();
        let (low, high) = share_interval(met as u64, with_deadline.len() as u64);
        m.insert("task_deadline_met".into(), json!(met));
        m.insert("task_deadline_share".into(), json!(met as f64 / with_deadline.len() as f64));
        m.insert("task_deadline_share_ci95_low".into(), json!(low));
        m.insert("task_deadline_share_ci95_high".into(), json!(high));
        m.insert("task_goodput_per_min".into(), json!(per_min(met)));
    }
    let total_latency: f64 = completed.iter().map(|r| r.latency_ms).sum();
    if total_latency > 0.0 {
        let share = |f: fn(&TaskRow) -> f64| completed.iter().map(|r| f(r)).sum::<f64>() / total_latency;
        m.insert("task_server_share".into(), json!(share(|r| r.server_ms)));
        m.insert("task_tool_share".into(), json!(share(|r| r.tool_ms)));
    }
    let prompt: u64 = rows.iter().filter(|r| r.cached_tokens.is_some()).map(|r| r.prompt_tokens).sum();
    if prompt > 0 {
        let cached: u64 = rows.iter().filter_map(|r| r.cached_tokens).sum();
        m.insert("task_cached_share".into(), json!(cached as f64 / prompt as f64));
    }
    let all_prompt: u64 = rows.iter().map(|r| r.prompt_tokens).sum();
    if all_prompt > 0 && rows.iter().any(|r| r.ideal_cached_tokens.is_some()) {
        let ideal: u64 = rows.iter().filter_map(|r| r.ideal_cached_tokens).sum();
        m.insert("task_ideal_cached_share".into(), json!(ideal as f64 / all_prompt as f64));
    }
    if !rows.is_empty() {
        let mean = |f: fn(&TaskRow) -> u64| rows.iter().map(|r| f(r) as f64).sum::<f64>() / rows.len() as f64;
        m.insert("task_calls_mean".into(), json!(mean(|r| u64::from(r.calls))));
        m.insert("task_prompt_tokens_mean".into(), json!(mean(|r| r.prompt_tokens)));
        m.insert("task_output_tokens_mean".into(), json!(mean(|r| r.output_tokens)));
    }
    Jobs { metrics: m, tasks: rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(sent: f64, end: f64, delay: f64) -> Option<CallFacts> {
        Some(CallFacts {
            intended_ms: sent,
            sent_ms: sent,
            end_ms: end,
            delay_ms: delay,
            ok: true,
            prompt_tokens: Some(100),
            output_tokens: Some(10),
            cached_tokens: Some(50),
            ideal_cached_tokens: Some(64),
        })
    }

    /// A plan call (0–100), two branches after delays of 50 and 10
    /// (150–400 and 110–200), a join 20 after the later branch (420–500).
    fn fan_out_and_join() -> TaskFacts {
        TaskFacts {
            repeat: 0,
            task: 0,
            task_id: "t".into(),
            start_ms: 0.0,
            deadline_ms: Some(450.0),
            parents: vec![vec![], vec![0], vec![0], vec![1, 2]],
            calls: vec![
                call(0.0, 100.0, 0.0),
                call(150.0, 400.0, 50.0),
                call(110.0, 200.0, 10.0),
                call(420.0, 500.0, 20.0),
            ],
        }
    }

    #[test]
    fn the_critical_path_runs_through_the_branch_that_ended_last() {
        let row = fan_out_and_join().row();
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
    fn a_failed_call_fails_its_task_and_the_deadline() {
        let mut facts = fan_out_and_join();
        facts.deadline_ms = Some(1000.0);
        facts.calls[2].as_mut().unwrap().ok = false;
        let row = facts.row();
        assert!(!row.completed && row.failed_calls == 1);
        assert_eq!(row.deadline_met, Some(false));
    }

    #[test]
    fn cell_figures_count_tasks_over_the_time_they_ran() {
        let rows: Vec<TaskRow> = (0..20)
            .map(|k| {
                let mut f = fan_out_and_join();
                f.task = k;
                f.start_ms = k as f64 * 100.0;
                for c in f.calls.iter_mut().flatten() {
                    c.sent_ms += f.start_ms;
                    c.end_ms += f.start_ms;
                }
                f.deadline_ms = Some(if k % 2 == 0 { 1000.0 } else { 100.0 });
                f.row()
            })
            .collect();
        let jobs = summarize(rows);
        let m = &jobs.metrics;
        assert_eq!(m["tasks_completed"], 20);
        // 20 tasks from 0 to 1900 + 500 = 2400 ms.
        assert_eq!(m["tasks_span_ms"], 2400.0);
        assert_eq!(m["tasks_per_min"], 500.0);
        assert_eq!(m["task_p50_ms"], 500.0);
        assert_eq!(m["task_deadline_met"], 10);
        assert_eq!(m["task_goodput_per_min"], 250.0);
        let (low, high) = (
            m["task_deadline_share_ci95_low"].as_f64().unwrap(),
            m["task_deadline_share_ci95_high"].as_f64().unwrap(),
        );
        assert!((low - 0.2720).abs() < 1e-3 && (high - 0.7280).abs() < 1e-3, "{low} {high}");
        assert!(m["task_p99_ci95_high_ms"].is_null(), "20 tasks bound no p99 from above");
    }
}
