//! Replaying agent tasks ([`crate::workload::agent_plan`]): every call of a
//! task is sent once each of its parents' replies has ended plus its own
//! delay (a root: the task's start plus its delay), so fan-out runs in
//! parallel and a join waits for its last parent. Nothing is on a wall
//! clock inside a task: a slow server makes the task slow, as it would an
//! agent.
//!
//! Tasks start as a fixed number of agents become free (closed loop: an
//! agent takes the next task when its last one ended) or at their due
//! times (open loop: the cell's arrival rate in tasks per second, or the
//! trace's recorded arrivals).
//!
//! "Ended" is the reply's end as the call's record states it
//! (`finished_ms`), so a child's `intended_send_ms` is exactly its latest
//! parent's `finished_ms` plus its delay, and the job metrics re-derive
//! from the records alone. A failed call still releases its children (the
//! trace fixes every prompt, not the reply) and fails its task.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::observe::record::AgentCallRecord;
use crate::output::jobs::{CallFacts, TaskFacts};
use crate::send::conversation::TurnSender;
use crate::workload::agent_plan::AgentPlan;

/// When tasks start.
#[derive(Debug, Clone)]
pub enum TaskArrivals {
    /// This many agents, each taking the next task when its last one ended.
    Agents(u32),
    /// Each task's due time after the run's start, in task order.
    Due(Vec<Duration>),
}

/// Runs every task of one measured run (its calls are requests `first + slot`).
pub async fn run<S: TurnSender>(
    sender: Arc<S>,
    plan: Arc<AgentPlan>,
    arrivals: TaskArrivals,
    first: u64,
    repeat: u32,
    tasks_done: &Arc<Mutex<Vec<TaskFacts>>>,
) -> anyhow::Result<()> {
    let run_start = Instant::now();
    let mut runners = JoinSet::new();
    match arrivals {
        TaskArrivals::Agents(agents) => {
            let next = Arc::new(AtomicUsize::new(0));
            for _ in 0..agents.max(1) {
                let (sender, plan, next, done) =
                    (sender.clone(), plan.clone(), next.clone(), tasks_done.clone());
                runners.spawn(async move {
                    loop {
                        let task = next.fetch_add(1, Ordering::Relaxed);
                        if task >= plan.tasks.len() {
                            break;
                        }
                        let facts =
                            run_task(&sender, &plan, task, first, repeat, run_start, Instant::now()).await;
                        done.lock().map(|mut d| d.push(facts)).ok();
                    }
                });
            }
        }
        TaskArrivals::Due(due) => {
            for (task, at) in due.into_iter().enumerate().take(plan.tasks.len()) {
                let (sender, plan, done) = (sender.clone(), plan.clone(), tasks_done.clone());
                runners.spawn(async move {
                    let start = run_start + at;
                    tokio::time::sleep_until(start.into()).await;
                    let facts = run_task(&sender, &plan, task, first, repeat, run_start, start).await;
                    done.lock().map(|mut d| d.push(facts)).ok();
                });
            }
        }
    }
    while let Some(done) = runners.join_next().await {
        done.map_err(|e| anyhow::anyhow!("an agent task panicked: {e}"))?;
    }
    Ok(())
}

fn ms_since(t: Instant, run_start: Instant) -> f64 {
    t.saturating_duration_since(run_start).as_secs_f64() * 1000.0
}

/// Sends every call of task `t`, each when its parents have ended plus
/// its delay, and returns what the task did.
async fn run_task<S: TurnSender>(
    sender: &Arc<S>,
    plan: &Arc<AgentPlan>,
    t: usize,
    first: u64,
    repeat: u32,
    run_start: Instant,
    task_start: Instant,
) -> TaskFacts {
    let task = &plan.tasks[t];
    let task_start_ms = ms_since(task_start, run_start);
    let deadline_ms = task.deadline_ms.or(plan.spec.deadline_ms);
    // Each call's end (ms after the run's start, as its record says), once known.
    let (ends, waits): (Vec<_>, Vec<_>) = (0..task.calls.len()).map(|_| watch::channel(None::<f64>)).unzip();
    let mut calls = JoinSet::new();
    for (c, end) in ends.into_iter().enumerate() {
        let parents: Vec<u32> = task.calls[c].parents.clone();
        let parent_ends: Vec<watch::Receiver<Option<f64>>> =
            parents.iter().map(|&p| waits[p as usize].clone()).collect();
        let (sender, plan) = (sender.clone(), plan.clone());
        let index = first + plan.first_call[t] + c as u64;
        calls.spawn(async move {
            let mut ready_ms = task_start_ms;
            for mut parent in parent_ends {
                // The sender is kept until its value is set: `wait_for` sees it.
                if let Ok(v) = parent.wait_for(Option::is_some).await {
                    ready_ms = ready_ms.max(v.unwrap_or(task_start_ms));
                }
            }
            let delay_ms = plan.delay_ms(t, c as u32);
            let intended_ms = if parents.is_empty() { task_start_ms + delay_ms } else { ready_ms + delay_ms };
            let intended = run_start + Duration::from_secs_f64(intended_ms / 1000.0);
            tokio::time::sleep_until(intended.into()).await;
            let planned = sender.plan(index);
            let (mut rec, _, _) = sender.send_turn(index, run_start, intended, planned).await;
            // Exactly the intended time: the record's own rounding aside, a
            // child's `intended_send_ms` is its parents' end plus its delay.
            rec.intended_send_ms = intended_ms;
            let task = &plan.tasks[t];
            rec.agent = Some(AgentCallRecord {
                task: t as u64,
                task_id: task.id.clone(),
                call: c as u32,
                call_id: task.calls[c].id.clone(),
                parents,
                delay_ms,
                task_start_ms,
                deadline_ms,
            });
            let facts = CallFacts::of(&rec, delay_ms);
            end.send_replace(Some(rec.finished_ms));
            sender.finished(rec);
            (c, facts)
        });
    }
    drop(waits);
    let mut facts: Vec<Option<CallFacts>> = vec![None; task.calls.len()];
    while let Some(done) = calls.join_next().await {
        if let Ok((c, f)) = done {
            facts[c] = Some(f);
        }
    }
    TaskFacts {
        repeat,
        task: t as u64,
        task_id: task.id.clone(),
        start_ms: task_start_ms,
        deadline_ms,
        parents: task.calls.iter().map(|c| c.parents.clone()).collect(),
        calls: facts,
    }
}
