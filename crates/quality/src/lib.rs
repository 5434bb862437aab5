//! anvil-quality: whether an arm answers as well as its control, stated
//! with the rate at which each verdict can be wrong. A library of pure
//! functions (it reads datasets from their text and does no other I/O);
//! the run layer calls it.
//!
//! - [`item`], [`dataset`]: scored items, read from anvil's own JSONL,
//!   GSM8K-style and MMLU-style JSONL ([`read`]), written back as anvil's
//!   ([`write_anvil`]); errors name their line and field ([`ReadError`]).
//! - [`score()`](score::score): exact, number, choice and regex scorers
//!   (their rules: [`score::score`], [`number`], [`choice`]).
//! - [`accuracy()`](accuracy::accuracy): the share right with its
//!   Clopper–Pearson interval (`anvil_evidence::binomial`).
//! - [`paired()`](paired::paired): two arms on the same items, McNemar's
//!   exact test, a verdict whose false-difference rate is at most
//!   `1 − level`, and exact intervals.
//! - [`identical_share`], [`attribute()`](attribute::attribute): lossless outputs, where each
//!   differing one diverged, and whether an arm's divergence exceeds the
//!   engine's own nondeterminism (Fisher's exact test).
//! - [`generate_arith`]: the shipped dataset whose answers are known by
//!   construction.
//!
//! The statistics are tested as statistics in `tests/`: simulated arms
//! with known accuracies, each measured rate stated with its
//! Clopper–Pearson interval.

pub mod accuracy;
pub mod arith;
pub mod attribute;
pub mod choice;
pub mod dataset;
pub mod error;
pub mod item;
pub mod lossless;
pub mod number;
pub mod paired;
pub mod pvalue;
pub mod score;

pub use accuracy::{Accuracy, accuracy, share_interval};
pub use arith::{ARITH_V1_ITEMS, ARITH_V1_SEED, generate_arith};
pub use attribute::{Attribution, Cause, attribute};
pub use dataset::{Format, read, read_anvil, read_gsm8k, read_mmlu, write_anvil};
pub use error::ReadError;
pub use item::{Item, Scorer};
pub use lossless::{Divergence, Identity, Output, Position, divergence, identical_share};
pub use paired::{Arm, Paired, PairedVerdict, paired};
pub use score::{Scored, score};
