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
//!
//! This file plans the sessions (which turns, what each synthetic turn
//! says); [`crate::send::conversation`] runs them.

use std::time::Duration;

use serde_json::{Value, json};

use crate::workload::filler::push_exact_words;
use crate::workload::request::{Content, Origin, Planned};
use crate::workload::split_mix::SplitMix64;
use crate::workload::traffic::SessionSpec;

/// The stream of session `s` turn `t`'s generated text.
const TURN_BASE: u64 = 7 << 40;

/// Which requests make up each session.
#[derive(Debug)]
pub struct SessionPlan {
    /// Each session's turns as request slots of one run, in turn order.
    pub(crate) sessions: Vec<Vec<u64>>,
    pub(crate) think_time: Duration,
    /// Synthetic sessions: the user's texts (else the trace's lines).
    synthetic: Option<SessionSpec>,
    /// A trace's turns keep their recorded times.
    pub(crate) from_trace: bool,
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
    /// conversation of its own), from its (session key, request slot) pairs
    /// ([`crate::workload::trace::Trace::session_of_requests`]).
    pub fn from_turns(session_of_requests: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let mut by_id: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        for (session, slot) in session_of_requests {
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
            exact_tokens: None,
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
