//! Multi-turn sessions: conversations whose every turn resends the whole
//! history (the user's turns and the server's replies, chat API), so a
//! server's prefix cache can serve each turn's history.
//!
//! Sessions run side by side; within one, a turn is sent once the previous
//! reply has ended and the think time passed (synthetic `sessions N`), or
//! at its recorded time but never before the previous reply (a generic
//! JSONL trace's `session` ids). Request indices are the turns' slots:
//! synthetic session `s` turn `t` is `s * turns + t`; a trace's are its
//! lines' order.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::observe::record::RequestRecord;
use crate::output::stats::Distribution;
use crate::workload::prompt::SplitMix64;
use crate::workload::source::{Content, Message, Origin, Planned, SessionSpec, push_exact_words};
use crate::workload::trace::Trace;

/// The stream of session `s` turn `t`'s generated text.
const TURN_BASE: u64 = 7 << 40;

/// Which requests make up each session.
#[derive(Debug)]
pub struct SessionPlan {
    /// Each session's turns as request slots of one run, in turn order.
    sessions: Vec<Vec<u64>>,
    think_time: Duration,
    /// Synthetic sessions: the user's texts (else the trace's lines).
    synthetic: Option<SessionSpec>,
    /// A trace's turns keep their recorded times.
    from_trace: bool,
    repeats: u64,
}

impl SessionPlan {
    pub fn synthetic(spec: &SessionSpec, repeats: u32) -> anyhow::Result<Self> {
        if spec.sessions == 0 || spec.turns == 0 {
            anyhow::bail!("sessions and turns must be at least 1");
        }
        let turns = u64::from(spec.turns);
        let sessions =
            (0..u64::from(spec.sessions)).map(|s| (0..turns).map(|t| s * turns + t).collect()).collect();
        Ok(Self {
            sessions,
            think_time: Duration::from_millis(spec.think_time_ms),
            synthetic: Some(spec.clone()),
            from_trace: false,
            repeats: u64::from(repeats.max(1)),
        })
    }

    /// A trace's requests grouped by session (a line without one is a
    /// conversation of its own).
    pub fn from_trace(trace: &Trace) -> Self {
        let mut by_id: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        for (session, slot) in trace.session_of_requests() {
            by_id.entry(session).or_default().push(slot);
        }
        let mut sessions: Vec<Vec<u64>> = by_id.into_values().collect();
        sessions.sort_by_key(|turns| turns[0]);
        Self { sessions, think_time: Duration::ZERO, synthetic: None, from_trace: true, repeats: 1 }
    }

    pub fn count(&self) -> usize {
        self.sessions.len()
    }

    pub fn requests(&self) -> u64 {
        self.sessions.iter().map(|s| s.len() as u64).sum()
    }

    /// A synthetic turn's user text: the recipe's `turn` text, else
    /// `words` generated words; the first turn opens with a tag of its
    /// session, so no two sessions share a prefix.
    pub fn plan(&self, index: u64, seed: u64, words: u64, max_tokens: u32) -> Option<Planned> {
        let spec = self.synthetic.as_ref()?;
        let per_run = self.requests();
        if index >= per_run * self.repeats {
            return None;
        }
        let slot = index % per_run;
        let (session, turn) = (slot / u64::from(spec.turns), (slot % u64::from(spec.turns)) as u32);
        let mut rng = SplitMix64::new(seed, TURN_BASE + index);
        let mut text = String::new();
        if turn == 0 {
            text.push_str(&format!("Conversation {:016x}. ", rng.next_u64()));
        }
        match spec.turn_texts.get(turn as usize) {
            Some(given) => text.push_str(given),
            None => {
                push_exact_words(&mut text, &mut rng, words.max(1));
                text.truncate(text.trim_end().len());
            }
        }
        Some(Planned {
            content: Content::Prompt(text),
            max_tokens,
            ignore_eos: false,
            origin: Origin { session: Some(session), turn: Some(turn), ..Origin::default() },
        })
    }

    pub fn describe(&self) -> Value {
        let spec = self.synthetic.as_ref();
        json!({
            "kind": "sessions",
            "sessions": self.count(),
            "turns": spec.map(|s| s.turns),
            "think_time_ms": self.think_time.as_millis() as u64,
            "given_turn_texts": spec.map_or(0, |s| s.turn_texts.len()),
        })
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_turns_are_seeded_tagged_and_indexed_by_session() {
        let spec =
            SessionSpec { sessions: 3, turns: 2, think_time_ms: 0, turn_texts: vec!["Hello there".into()] };
        let plan = SessionPlan::synthetic(&spec, 1).unwrap();
        assert_eq!(plan.requests(), 6);
        let text = |i| match plan.plan(i, 9, 5, 10).unwrap().content {
            Content::Prompt(p) => p,
            Content::Messages(_) => unreachable!(),
        };
        assert!(text(0).starts_with("Conversation ") && text(0).ends_with(". Hello there"));
        assert_ne!(text(0), text(2), "each session has its own tag");
        assert_eq!(text(1).split(' ').count(), 5, "generated turn");
        let origin = plan.plan(3, 9, 5, 10).unwrap().origin;
        assert_eq!((origin.session, origin.turn), (Some(1), Some(1)));
        assert!(plan.plan(6, 9, 5, 10).is_none());
    }
}
