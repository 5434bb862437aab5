//! The extra repeats a gate or screen with `extra-repeats` may measure when
//! its verdict at a confidence is undecided: further measurements of a cell
//! it reads, each a stored cell of its own. An extra repeat's fingerprint
//! derives from the cell's fingerprint and the round, so it is reused by any
//! step (and any later run) that asks for the same round of the same cell,
//! and is measured anew when the cell's configuration changes.

use std::collections::HashMap;

use anvil_store::{Fingerprint, Store};
use serde_json::{Value, json};

// By file, not through `plan/mod.rs`: a search's probes pool extra repeats
// too, and `mod.rs` reaches the search module.
use super::fingerprint::fingerprint_of;
use super::planned::Plan;
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
    /// Its server's declaration and fingerprint, and the recipe's key:
    /// what resolving it for a round reads.
    server_decl: Decl,
    server_fingerprint: Fingerprint,
    recipe_key: String,
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

    /// The cell as an extra repeat measures it: resolved under that
    /// repeat's own seed, as its step document would hold it.
    pub fn cell_for(&self, extra: &ExtraRepeat) -> Option<crate::document::cell::CellExec> {
        let server = self.server_fingerprint.to_string();
        super::resolved_cell::cell_exec(
            &self.decl,
            Some(&self.server_decl),
            extra.seed,
            &self.recipe_key,
            server,
        )
    }

    /// Round `round` (from 1) of this cell's extra repeats.
    pub fn extra(&self, round: u32) -> ExtraRepeat {
        extra_of(&self.decl.name, self.fingerprint, self.seed, round)
    }
}

/// Round `round` (from 1) of the extra repeats of cell `name` (a search's
/// probe is one too), measured under campaign seed `seed`.
pub fn extra_of(name: &str, fingerprint: Fingerprint, seed: u64, round: u32) -> ExtraRepeat {
    let seed = round_seed(seed, round);
    let preimage = json!({
        "kind": "cell-extra-repeat",
        "cell": fingerprint.to_string(),
        "round": round,
        "seed": seed,
    });
    ExtraRepeat {
        name: extra_name(name, round),
        round,
        fingerprint: fingerprint_of(&preimage),
        preimage,
        seed,
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

/// Artifacts read so far, by fingerprint: each round pools every earlier
/// one again, and each replay starts over, so each is read from disk once.
pub type Artifacts = HashMap<Fingerprint, Value>;

/// Why a cell's measurements could not be pooled.
#[derive(Debug, thiserror::Error)]
pub enum PoolingError {
    #[error("reading {what}: {detail}")]
    Read { what: String, detail: String },
    #[error("{0} is not stored")]
    NotStored(String),
    #[error("pooling cell {cell}: {source}")]
    Pool {
        cell: String,
        #[source]
        source: anvil_evidence::error::PoolError,
    },
    #[error("cell {0} has no stored result")]
    NoResult(String),
}

/// `base` (cell `name`'s stored result) as its own artifact and `extras`
/// pooled would give it: every metric re-derived from all their request
/// records (`anvil_evidence::pool`).
pub fn pooled_result(
    store: &Store,
    read: &mut Artifacts,
    (name, fingerprint): (&str, Fingerprint),
    extras: &[ExtraRepeat],
    mut base: Value,
) -> Result<Value, PoolingError> {
    let wanted: Vec<(Fingerprint, String)> = std::iter::once((fingerprint, format!("cell {name}")))
        .chain(extras.iter().map(|e| (e.fingerprint, e.name.clone())))
        .collect();
    for (fingerprint, what) in &wanted {
        if !read.contains_key(fingerprint) {
            read.insert(*fingerprint, read_artifact(store, fingerprint, what)?);
        }
    }
    let artifacts: Vec<&Value> = wanted.iter().filter_map(|(fp, _)| read.get(fp)).collect();
    let pooled = anvil_evidence::pool::pool(&artifacts)
        .map_err(|source| PoolingError::Pool { cell: name.to_string(), source })?;
    let Some(cell) = base.as_object_mut() else { return Err(PoolingError::NoResult(name.to_string())) };
    let metric = |key: &str| pooled.metrics.get(key).cloned().unwrap_or(Value::Null);
    for (field, key) in [
        ("aggregate_tok_s", "throughput_tok_s"),
        ("ttft_p50_ms", "ttft_p50_ms"),
        ("ttft_p99_ms", "ttft_p99_ms"),
        ("decode_tok_s_mean", "decode_tok_s_mean"),
    ] {
        cell.insert(field.into(), metric(key));
    }
    // Counts are the pooled ones too, so `canaries_passed == requests` reads alike.
    cell.insert("canaries_passed".into(), metric("request_canary_passed"));
    cell.insert(
        "performance_eligible".into(),
        (pooled.completed > 0 && pooled.completed == pooled.attempted).into(),
    );
    cell.insert("completed".into(), pooled.completed.into());
    cell.insert("failed".into(), (pooled.attempted - pooled.completed).into());
    cell.insert("requests".into(), pooled.attempted.into());
    cell.insert("wall_clock_ms".into(), pooled.wall_clock_ms.into());
    cell.insert("repeats".into(), Value::Object(pooled.across_repeats));
    cell.insert("metrics".into(), Value::Object(pooled.metrics));
    Ok(base)
}

/// A stored cell's `benchmark.json`.
fn read_artifact(store: &Store, fingerprint: &Fingerprint, what: &str) -> Result<Value, PoolingError> {
    let failed = |detail: String| PoolingError::Read { what: what.to_string(), detail };
    let entry = store
        .read(fingerprint)
        .map_err(|e| failed(e.to_string()))?
        .ok_or_else(|| PoolingError::NotStored(what.to_string()))?;
    let file = std::fs::File::open(entry.path_of("benchmark.json"))
        .map_err(|e| failed(format!("its benchmark.json: {e}")))?;
    serde_json::from_reader(std::io::BufReader::new(file))
        .map_err(|e| failed(format!("its benchmark.json: {e}")))
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
                let server = self.server_of(d)?;
                Some(CellSite {
                    index: d,
                    decl: self.recipe.steps[d].clone(),
                    fingerprint: self.nodes[d].fingerprint,
                    server,
                    seed: self.recipe.campaign.seed,
                    server_decl: self.recipe.steps[server].clone(),
                    server_fingerprint: self.nodes[server].fingerprint,
                    recipe_key: self.recipe.key.clone(),
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
