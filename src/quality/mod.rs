//! Answer quality inside a campaign (the statistics are `anvil-quality`'s):
//! a cell's kept answers stored and scored (`answers`), and the gate
//! requirements that compare two arms on the same prompts, lossless
//! outputs and accuracy not worse (`arms`, `requirement`), with the
//! answers a gate reads put beside its inputs (`inputs`).
//!
//! A layer after `results` (the stored types) and before `run`, which
//! calls it when a cell ends and when a gate judges; `bundle` and
//! `report` read it too.

pub mod answers;
pub mod arms;
pub mod comparison;
pub mod inputs;
#[cfg(test)]
mod not_worse_oc_tests;
pub mod requirement;
