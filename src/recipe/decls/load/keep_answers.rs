//! `keep-answers "4MB"`: keep each measured request's answer beside the
//! cell's result, up to that many bytes (`anvil_loadgen`'s
//! `output::answers`). It changes what is stored, so it is in the
//! fingerprint; unset, nothing is kept (a scored dataset keeps its
//! answers anyway, up to [`SCORED_DEFAULT_BYTES`]).

use super::super::super::problem::Problems;
use super::super::super::settings::Draft;

/// What a scored dataset keeps when `keep-answers` is unset: its answers
/// are what its accuracy is computed from.
pub const SCORED_DEFAULT_BYTES: u64 = 16_000_000;

/// The declaration's budget in bytes (None without one); a size that
/// does not read is a problem at the setting.
pub(super) fn build(draft: &Draft, key: &'static str, problems: &mut Problems) -> Option<u64> {
    let text = draft.settings.str(key)?;
    match anvil_loadgen::parse_answer_budget(text) {
        Ok(bytes) => Some(bytes),
        Err(why) => {
            problems.push(
                draft
                    .problem_at(key, format!("{}: `keep-answers` {why}", draft.what()))
                    .label("not a size")
                    .help("e.g. keep-answers \"4MB\""),
            );
            None
        }
    }
}
