//! `stage rate=5 duration="20s"` / `stage concurrency=8 duration="30s"`:
//! the load stages of a workload or cell, and `slo from=`.

use std::time::Duration;

use serde_json::Value;

use super::super::super::problem::Problems;
use super::super::super::settings::Draft;
use crate::words::{ArrivalWord, SloFrom};

/// One load stage as declared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageDecl {
    /// Open loop at this many requests per second; `None`: closed loop.
    pub rate: Option<f64>,
    /// Open loop: the kind of gaps (the stage's `arrival`, else the
    /// workload's when open, else Poisson).
    pub arrival: ArrivalWord,
    /// Closed loop: the workers; open loop: the in-flight cap (unset: the
    /// cell's `concurrency`).
    pub concurrency: Option<u64>,
    pub duration: Duration,
}

/// The names of the settings read here, from `LoadDecl`'s declaration.
pub(super) struct Keys {
    pub slo: &'static str,
    pub stage: &'static str,
    pub requests: &'static str,
    pub rate: &'static str,
}

pub(super) fn slo_from(draft: &Draft, keys: &Keys, from: Option<&Value>, problems: &mut Problems) -> SloFrom {
    let Some(value) = from else { return SloFrom::default() };
    if let Some(from) = value.as_str().and_then(SloFrom::from_word) {
        return from;
    }
    let found = value.as_str().map_or("a non-string".to_string(), |s| format!("\"{s}\""));
    let words = SloFrom::WORDS.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" or ");
    problems.push(
        draft
            .problem_at(keys.slo, format!("`slo from=` takes {words}, found {found}"))
            .label("invalid value")
            .help("from=\"schedule\" counts TTFT and E2E from each open-loop request's scheduled send"),
    );
    SloFrom::default()
}

/// The declaration's stages (empty without `stage`), each checked.
pub(super) fn build(
    draft: &Draft,
    keys: &Keys,
    cell_arrival: ArrivalWord,
    problems: &mut Problems,
) -> Vec<StageDecl> {
    let s = &draft.settings;
    let Some(records) = s.get(keys.stage).and_then(Value::as_array) else { return Vec::new() };
    let own = |key: &str| s.contains(key) && !draft.from_workload.iter().any(|k| k == key);
    let stage_from_here = own(keys.stage);
    for setting in [keys.requests, keys.rate] {
        // Stages replace a fixed request count and a single rate; inherited
        // ones (from the workload) are ignored, set next to `stage` is a contradiction.
        if stage_from_here && own(setting) {
            problems.push(
                draft
                    .problem_at(
                        setting,
                        format!("{} `{}` sets both `{setting}` and `stage`", draft.kind, draft.name),
                    )
                    .label("replaced by the stages")
                    .help("each stage sets its own rate or concurrency and a duration; remove this line"),
            );
        }
    }
    let mut stages = Vec::new();
    for (i, record) in records.iter().enumerate() {
        let n = i + 1;
        let mut bad = |message: String| {
            problems.push(draft.problem_at(keys.stage, message).label("invalid stage"));
        };
        let rate = record.get("rate").and_then(Value::as_f64);
        let concurrency = record.get("concurrency").and_then(Value::as_u64);
        let duration =
            record.get("duration").and_then(Value::as_str).map(super::super::super::schema::parse_duration);
        let arrival = match record.get("arrival").and_then(Value::as_str) {
            None if matches!(cell_arrival, ArrivalWord::Closed) => ArrivalWord::Poisson,
            None => cell_arrival,
            Some(word) => match ArrivalWord::from_word(word) {
                Some(ArrivalWord::Closed) | None => {
                    bad(format!(
                        "stage {n}: arrival=\"{word}\" is not an open-loop arrival (\"poisson\" or \"constant\"; a closed-loop stage sets only concurrency=)"
                    ));
                    continue;
                }
                Some(open) => open,
            },
        };
        let duration = match duration {
            Some(Ok(d)) if !d.is_zero() => d,
            Some(Ok(_)) => {
                bad(format!("stage {n}: duration must be longer than zero"));
                continue;
            }
            Some(Err(err)) => {
                bad(format!("stage {n}: {err}"));
                continue;
            }
            None => {
                bad(format!("stage {n} needs duration=\"…\" (e.g. duration=\"30s\")"));
                continue;
            }
        };
        match (rate, concurrency) {
            (None, None) => {
                bad(format!(
                    "stage {n} needs rate= (requests per second) or concurrency= (closed-loop workers)"
                ));
                continue;
            }
            (Some(r), _) if !(r.is_finite() && r > 0.0) => {
                bad(format!("stage {n}: rate must be a positive number, got {r}"));
                continue;
            }
            (_, Some(0)) => {
                bad(format!("stage {n}: concurrency must be at least 1"));
                continue;
            }
            _ => {}
        }
        stages.push(StageDecl { rate, arrival, concurrency, duration });
    }
    stages
}
