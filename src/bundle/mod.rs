//! Evidence bundles: a campaign's closure in one file that others can
//! verify, import and reproduce. `docs/bundles.md` describes the format.
//!
//! `export` writes the recipe and the files it reads, the run record, every
//! stored entry the run produced or reused, and the campaign outputs;
//! `import` checks every member against the manifest before anything
//! becomes visible, then adds entries to a store (never overwriting);
//! `verify` re-derives what the bundle claims.

mod answers;
mod export;
mod import;
mod manifest;
mod member_path;
mod reader;
pub mod run_to_run;
pub mod signature;
mod verify;

pub use export::{ExportRequest, export};
pub use import::{ImportError, add_entries, extract_recipe, import, unpack};
pub use manifest::Invocation;
pub use verify::verify_bundle;
