//! anvil-evidence: the independent checker of `anvil-serving.benchmark/v1`
//! artifacts. It works on JSON only and shares no code with the load
//! generator (`anvil-loadgen`), so a bug in one cannot confirm itself.
//!
//! - [`rederive`] re-derives every figure of an artifact from its own raw
//!   request records and lists mismatches, checked and unchecked fields
//!   (definitions: the module docs of [`rederive`](mod@rederive)).
//! - [`compare_samples`] and [`compare_repeats`] decide whether a second measurement reproduces a
//!   published one, with a seeded bootstrap or a Welch interval (definitions: the module docs of
//!   [`compare`](mod@compare)); [`compare_artifacts`] does it for the
//!   headline metrics of two artifacts.

pub mod artifact_file;
pub mod batch_means;
pub mod binomial;
pub mod bootstrap;
pub mod civil_time;
pub mod client_error;
pub mod columns;
pub mod compare;
pub mod error;
pub mod fields;
pub mod gaps;
pub mod headline;
pub mod jobs;
pub mod metrics;
pub mod pass;
pub mod per_request;
pub mod pool;
pub mod quantile_interval;
pub mod records;
pub mod rederive;
pub mod repeats;
pub mod report;
pub mod select;
pub mod series;
pub mod stages;
pub mod stats;
pub mod tally;
pub mod tdist;
pub mod tokens;

pub use bootstrap::Statistic;
pub use compare::{CompareOptions, Comparison, Verdict, compare_repeats, compare_samples};
pub use headline::{compare_artifact_files, compare_artifacts, compare_canaries};
pub use rederive::{Options, RederiveError, rederive, rederive_file, rederive_file_with, rederive_with};
pub use report::{Mismatch, Report, Unchecked, values_match};
