//! The extra repeats a gate or screen with `extra-repeats` may measure when
//! its verdict at a confidence is undecided: further measurements of a cell
//! it reads, each a stored cell of its own. An extra repeat's fingerprint
//! derives from the cell's fingerprint and the round, so it is reused by any
//! step (and any later run) that asks for the same round of the same cell,
//! and is measured anew when the cell's configuration changes.

use anvil_store::Fingerprint;
use serde_json::{Value, json};

use super::{Plan, fingerprint_of};
use crate::recipe::{Decl, Kind, Spec};

/// A cell a gate or screen reads, as its extra repeats need it.
#[derive(Debug, Clone)]
pub struct CellSite {
    /// The cell's step index in the plan.
    pub index: usize,
    pub decl: Decl,
    pub fingerprint: Fingerprint,
    /// Its server's step index.
    pub server: usize,
    /// The campaign seed (each round measures under a seed of its own).
    pub seed: u64,
}

/// One extra repeat of a cell.
#[derive(Debug, Clone)]
pub struct ExtraRepeat {
    /// `{cell}#extra-{round}`: its name in progress lines and run records.
    pub name: String,
    pub round: u32,
    pub preimage: Value,
    pub fingerprint: Fingerprint,
    /// The seed it is measured under: new arrivals and prompts, as a new
    /// repeat of the cell would draw.
    pub seed: u64,
}

impl CellSite {
    pub fn name(&self) -> &str {
        &self.decl.name
    }

    /// Round `round` (from 1) of this cell's extra repeats.
    pub fn extra(&self, round: u32) -> ExtraRepeat {
        let seed = round_seed(self.seed, round);
        let preimage = json!({
            "kind": "cell-extra-repeat",
            "cell": self.fingerprint.to_string(),
            "round": round,
            "seed": seed,
        });
        ExtraRepeat {
            name: extra_name(&self.decl.name, round),
            round,
            fingerprint: fingerprint_of(&preimage),
            preimage,
            seed,
        }
    }
}

/// `{cell}#extra-{round}`: an extra repeat's name.
pub fn extra_name(cell: &str, round: u32) -> String {
    format!("{cell}#extra-{round}")
}

/// The seed of round `round`: the campaign seed moved along by a fixed odd
/// constant (SplitMix64's increment) per round, so rounds never share one.
fn round_seed(seed: u64, round: u32) -> u64 {
    seed.wrapping_add(u64::from(round).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// How many extra repeats step `i` may measure (0 for a step that measures none).
pub fn budget_of(decl: &Decl) -> u32 {
    let extra = match &decl.spec {
        Spec::Gate(gate) if gate.confidence.is_some() => gate.extra_repeats,
        Spec::Screen(screen) if screen.confidence.is_some() => screen.extra_repeats,
        _ => 0,
    };
    u32::try_from(extra).unwrap_or(u32::MAX)
}

impl Plan {
    /// The cells gate or screen `i` reads that could be measured again (a
    /// cell with a server in the plan); empty when it asks for no extra repeats.
    pub fn extra_repeat_sites(&self, i: usize) -> Vec<CellSite> {
        if budget_of(&self.recipe.steps[i]) == 0 {
            return Vec::new();
        }
        self.nodes[i]
            .deps
            .iter()
            .filter(|&&d| self.nodes[d].kind == Kind::Cell)
            .filter_map(|&d| {
                Some(CellSite {
                    index: d,
                    decl: self.recipe.steps[d].clone(),
                    fingerprint: self.nodes[d].fingerprint,
                    server: self.server_of(d)?,
                    seed: self.recipe.campaign.seed,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_have_their_own_seeds() {
        let seeds: Vec<u64> = (0..100).map(|r| round_seed(7, r)).collect();
        let mut distinct = seeds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), seeds.len());
        assert_eq!(seeds[0], 7, "round 0 would be the cell itself");
    }
}
