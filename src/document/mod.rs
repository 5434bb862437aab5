//! Step documents: each planned step as one self-contained JSON file, the
//! way a Nix derivation is its own build instruction. A document holds
//! the `key` its fingerprint hashes (the step's preimage) and, beside it,
//! `exec`: what an executor needs to run the step with no recipe at hand
//! (for a cell, the cell as the load generator runs it; for a check, the
//! check as anvil-checks runs it; for a task, its command; for a server,
//! its launch settings). `anvil plan --emit DIR` writes them; `anvil worker
//! --document` runs a cell's (docs/cluster.md).
//!
//! Reading a document checks that its key hashes to its fingerprint, so a
//! document edited by hand, or written by another anvil, is refused
//! rather than run under a fingerprint that is not its own.

pub mod cell;
mod check;
mod decision;
mod error;
pub mod expression;
mod format;
mod from_plan;
mod gate;
pub mod launch;
mod screen;
mod server;
mod step_document;
mod task;
#[cfg(test)]
pub mod testing;

pub use cell::CellExec;
pub use check::CheckExec;
pub use decision::DecisionExec;
pub use error::DocumentError;
pub use from_plan::document_of;
pub use gate::GateExec;
pub use screen::ScreenExec;
pub use server::ServerExec;
pub use step_document::{Exec, StepDocument};
pub use task::TaskExec;
