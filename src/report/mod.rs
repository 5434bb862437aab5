//! What anvil tells people: differences, summaries, rendered results.

pub mod campaign;
