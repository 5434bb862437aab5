//! The anvil part of a run record (`runs/<id>.json`'s `extra`): one serde
//! type, written and read through it. The store keeps `extra` as JSON it
//! does not interpret; everything anvil puts there is named here. Unknown
//! keys (a newer anvil's) are kept through a read and a rewrite; a record
//! of an older anvil lacks some and reads with their defaults.

use std::collections::BTreeMap;

use anvil_store::{Fingerprint, RunRecord};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::environment::Environment;

/// What `anvil run` was given: `--set` texts and `--sim`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    #[serde(default)]
    pub set: Vec<String>,
    #[serde(default)]
    pub sim: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunExtra {
    /// The recipe's campaign name.
    #[serde(default)]
    pub campaign: Option<String>,
    /// Preimages (by fingerprint) of the steps the store does not hold.
    #[serde(default)]
    pub preimages: Map<String, Value>,
    /// How to run it again: a bundle replays these.
    #[serde(default)]
    pub invocation: Invocation,
    /// The machine it ran on (`crate::environment::capture`).
    #[serde(default)]
    pub environment: Environment,
    /// Jobs an executor submitted (Slurm), for `anvil cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<Value>,
    /// The files the run froze when it started (`src/run/frozen.rs`): the
    /// recipe and its includes (named as read, with their text) and every
    /// file a step reads (relative to the recipe's folder, digest only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub frozen_inputs: BTreeMap<String, FrozenInput>,
    /// The campaign's description, as the run's recipe said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign_description: Option<String>,
    /// Each step's `description`, as the run's recipe said (a report shows
    /// them without reading the recipe, which may have changed since).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub descriptions: BTreeMap<String, String>,
    /// A Slurm worker's record: the job it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_job: Option<String>,
    /// Each settled step's document in `<store>/documents/`, by `kind.name`:
    /// the run as documents any executor can run again (`src/run/run_documents.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub documents: BTreeMap<String, String>,
    /// Keys this anvil does not know, kept as they were.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One input as a run found it when it started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenInput {
    /// `blake3:<hex>` of its bytes.
    pub blake3: String,
    /// Its text, for the recipe and its includes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl RunExtra {
    /// `run`'s extra, read without copying the record (missing keys take
    /// their defaults; one that does not read gives the defaults whole).
    pub fn of(run: &RunRecord) -> RunExtra {
        RunExtra::deserialize(&run.extra).unwrap_or_default()
    }

    /// Back into the record.
    pub fn write_to(&self, run: &mut RunRecord) {
        // A struct of strings, maps and JSON values always serialises.
        run.extra = serde_json::to_value(self).unwrap_or_default();
    }

    pub fn preimage(&self, fp: &Fingerprint) -> Option<&Value> {
        self.preimages.get(&fp.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(extra: Value) -> RunRecord {
        serde_json::from_value(json!({
            "run_id": "run-1", "recipe": "r.kdl", "recipe_path": "r.kdl", "started_at": "t",
            "finished_at": null, "status": "succeeded", "nodes": [], "extra": extra,
        }))
        .expect("a run record")
    }

    #[test]
    fn an_earlier_record_reads_and_writes_back_key_for_key() {
        // The shape `json!` literals wrote before this type, plus a key from a newer anvil.
        let written = json!({
            "campaign": "c",
            "preimages": {"ab": {"kind": "server"}},
            "invocation": {"set": ["x=1"], "sim": true},
            "environment": serde_json::to_value(Environment { host_name: Some("h".into()), ..Environment::default() }).unwrap(),
            "jobs": [{"job_id": "7"}],
            "from_a_newer_anvil": 3,
        });
        let mut run = record(written.clone());
        let extra = RunExtra::of(&run);
        assert_eq!(extra.campaign.as_deref(), Some("c"));
        assert_eq!(extra.invocation, Invocation { set: vec!["x=1".into()], sim: true });
        assert_eq!(extra.other["from_a_newer_anvil"], 3);
        extra.write_to(&mut run);
        assert_eq!(run.extra, written, "nothing lost, nothing added");
        assert_eq!(serde_json::to_string(&run.extra).unwrap(), serde_json::to_string(&written).unwrap());
    }

    #[test]
    fn a_record_without_extra_reads_as_defaults() {
        let extra = RunExtra::of(&record(Value::Null));
        assert_eq!(extra, RunExtra::default());
    }
}
