//! anvil-artifact: the parts of anvil's documents that more than one crate
//! writes or reads, as types. A crate that produces a part returns its type
//! and the crate that stores it embeds the same type: a renamed field is a
//! compile error, not a value silently dropped on the way.

pub mod gpu;
