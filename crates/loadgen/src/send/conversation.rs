//! Running multi-turn sessions ([`crate::workload::session`]): the turns of
//! each conversation one after another, each resending the whole history
//! once the previous reply has ended (and the think time passed, or the
//! trace's recorded time come), and what the sessions measured.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::observe::record::RequestRecord;
use crate::output::stats::Distribution;
use crate::workload::request::{Content, Message, Planned};
use crate::workload::session::SessionPlan;
use crate::workload::trace::Trace;

/// What sessions measured beyond the per-request records.
#[derive(Debug, Default)]
pub struct SessionTally {
    /// Per turn index: TTFTs of eligible requests, prompt tokens, cached tokens.
    turns: Vec<TurnTally>,
    /// Each session's time from its first send to its last reply's end, ms.
    session_ms: Vec<f64>,
}

#[derive(Debug, Default)]
struct TurnTally {
    requests: u64,
    ttft_ms: Vec<f64>,
    prompt_tokens: Vec<f64>,
    cached_tokens: Vec<f64>,
}

impl SessionTally {
    fn add(&mut self, turn: usize, rec: &RequestRecord) {
        if self.turns.len() <= turn {
            self.turns.resize_with(turn + 1, TurnTally::default);
        }
        let t = &mut self.turns[turn];
        t.requests += 1;
        if rec.performance_eligible {
            t.ttft_ms.extend(rec.ttft_ms);
        }
        t.prompt_tokens.extend(rec.prompt_tokens.map(|v| v as f64));
        t.cached_tokens.extend(rec.cached_prompt_tokens.map(|v| v as f64));
    }

    /// The artifact's `sessions` object: per turn index and per session.
    pub fn summary(&self) -> Value {
        let dist = |v: &[f64]| {
            Distribution::of(v).map(|d| {
                json!({"samples": d.samples, "mean": d.mean, "p50": d.percentile(50), "p90": d.percentile(90),
                       "p99": d.percentile(99), "min": d.min, "max": d.max})
            })
        };
        let per_turn: Vec<Value> = self
            .turns
            .iter()
            .enumerate()
            .map(|(k, t)| {
                json!({
                    "turn": k,
                    "requests": t.requests,
                    "ttft_ms": dist(&t.ttft_ms),
                    "prompt_tokens": dist(&t.prompt_tokens),
                    "cached_prompt_tokens": dist(&t.cached_tokens),
                    "cached_tokens_reported": t.cached_tokens.len(),
                })
            })
            .collect();
        json!({"per_turn": per_turn, "session_total_ms": dist(&self.session_ms), "sessions_measured": self.session_ms.len()})
    }
}

/// Sends one turn (the whole conversation) and returns its record, when
/// it ended, and the reply's visible text.
pub trait TurnSender: Send + Sync + 'static {
    fn plan(&self, index: u64) -> Planned;
    fn send_turn(
        &self,
        index: u64,
        run_start: Instant,
        intended: Instant,
        planned: Planned,
    ) -> impl std::future::Future<Output = (RequestRecord, Instant, String)> + Send;
    fn finished(&self, rec: RequestRecord);
}

/// Runs every session of one measured run (request `first + slot`).
pub async fn run<S: TurnSender>(
    sender: Arc<S>,
    plan: &SessionPlan,
    trace: Option<Arc<Trace>>,
    first: u64,
    tally: &Arc<Mutex<SessionTally>>,
) -> anyhow::Result<()> {
    let run_start = Instant::now();
    let mut tasks = JoinSet::new();
    for (number, turns) in plan.sessions.iter().enumerate() {
        let (sender, tally, trace, turns) = (sender.clone(), tally.clone(), trace.clone(), turns.clone());
        let (think, from_trace) = (plan.think_time, plan.from_trace);
        tasks.spawn(async move {
            let mut history: Vec<Message> = Vec::new();
            let mut next_due = run_start;
            let mut first_send: Option<f64> = None;
            let mut last_end = 0.0;
            for (turn, slot) in turns.iter().enumerate() {
                let index = first + slot;
                let mut planned = sender.plan(index);
                if let Content::Prompt(user) =
                    std::mem::replace(&mut planned.content, Content::Prompt(String::new()))
                {
                    history.push(Message { role: "user", text: user });
                }
                planned.content = Content::Messages(history.clone());
                // A later turn resends the history, whose tokens (replies, each
                // message's template) no plan counted: only a first turn is exact.
                if turn > 0 {
                    planned.exact_tokens = None;
                }
                planned.origin.session = Some(number as u64);
                planned.origin.turn = Some(turn as u32);
                // A recorded turn is due at its time; it still waits for the previous reply.
                let intended = match (&trace, from_trace) {
                    (Some(t), true) => run_start + t.due(*slot),
                    _ => next_due,
                };
                tokio::time::sleep_until(intended.max(next_due).into()).await;
                let (rec, finished, reply) = sender.send_turn(index, run_start, intended, planned).await;
                first_send.get_or_insert(rec.actual_send_ms);
                last_end = rec.finished_ms;
                tally.lock().map(|mut t| t.add(turn, &rec)).ok();
                sender.finished(rec);
                history.push(Message { role: "assistant", text: reply });
                next_due = finished + think;
            }
            if let Some(start) = first_send {
                tally.lock().map(|mut t| t.session_ms.push(last_end - start)).ok();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| anyhow::anyhow!("a session task panicked: {e}"))?;
    }
    Ok(())
}
