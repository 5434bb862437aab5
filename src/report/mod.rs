//! What anvil tells people: differences, summaries, rendered results.

pub mod diff;
pub mod campaign;
