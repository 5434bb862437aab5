//! anvil-store: the content-addressed result store.
//!
//! Every finished DAG node's result lives under its configuration
//! fingerprint, like a Nix store path: entries are immutable, appear
//! atomically (stage, fsync, rename), carry a manifest of file hashes so
//! [`Store::verify`] can detect damage, keep the fingerprint's preimage
//! beside the result so two fingerprints can be diffed, and are removed by
//! [`Store::gc`] once no run record references them. Per-fingerprint OS
//! file locks ([`Store::lock`]) let concurrent runs share one store; the
//! kernel releases them when a process dies.
//!
//! Layout and guarantees for users: `docs/store.md`.

pub mod cache;
mod entry;
mod error;
mod failed;
mod fingerprint;
mod fsutil;
mod gc;
mod layout;
mod lease_lock;
mod manifest;
mod node_lock;
mod report_path;
mod runs;
mod staged;
mod store;
mod verify;

pub use entry::Entry;
pub use error::StoreError;
pub use failed::EvidenceFile;
pub use fingerprint::{Fingerprint, ParseFingerprintError};
pub use gc::GcReport;
pub use lease_lock::{
    LeaseInfo, LeaseLock, hostname, lease_duration, read_lease, shared_store, treat_stores_as_shared,
};
pub use manifest::ManifestFile;
pub use node_lock::NodeLock;
pub use runs::{NodeStatus, RunNode, RunRecord, RunStatus};
pub use staged::Staged;
pub use store::{MIN_PREFIX_LEN, Store};
pub use verify::{Problem, ProblemKind, VerifyReport};
