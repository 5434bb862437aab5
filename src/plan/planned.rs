//! What a plan is made of: its steps as planned nodes, each with the status
//! a run will give it.

use anvil_store::Fingerprint;
use anvil_words::words;

use super::preimage::EngineMode;
use super::preimage_text::PreimageText;
use crate::recipe::{Kind, Recipe};

#[derive(Debug, Clone)]
pub struct PlannedNode {
    pub name: String,
    pub kind: Kind,
    /// Indices (into `Plan::nodes`) of the steps this one waits for.
    pub deps: Vec<usize>,
    /// What its fingerprint hashes, as canonical JSON text.
    pub preimage: PreimageText,
    pub fingerprint: Fingerprint,
    /// True for a gate, screen or decision whose inputs are not all stored
    /// yet, or a step whose settings wait for upstream results: its
    /// fingerprint is settled only when they are.
    pub provisional: bool,
    /// The steps whose results its settings (or its server's) still wait
    /// for (`{screen.X.winner_server}`); empty once settled.
    pub waits_for: Vec<String>,
    pub status: Status,
    pub reason: String,
}

impl PlannedNode {
    /// `cell.x`: its kind and name, as messages name a step.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.kind, self.name)
    }
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub recipe: Recipe,
    pub mode: EngineMode,
    /// One per step, in the recipe's order.
    pub nodes: Vec<PlannedNode>,
    /// A valid execution order (indices into `nodes`).
    pub order: Vec<usize>,
}

words! {
    /// What a run will do with a planned step.
    pub enum Status {
        /// Its result is in the store: a run will not execute it.
        Cached = "cached",
        /// A run will execute it.
        Pending = "pending",
        /// A `finally` step a run will skip: nothing else runs, so nothing needs restoring.
        Idle = "idle",
    }
}
