//! anvil-evidence: the independent checker of `anvil-serving.benchmark/v1`
//! artifacts. It works on JSON only and shares no code with the load
//! generator (`anvil-loadgen`), so a bug in one cannot confirm itself (its
//! one anvil dependency, `anvil-words`, declares enums of words and
//! computes nothing).
//!
//! - [`rederive`] re-derives every figure of an artifact from its own raw
//!   request records and lists mismatches, checked and unchecked fields
//!   (definitions: the module docs of [`rederive`](mod@rederive)).
//! - [`compare_samples`] and [`compare_repeats`] decide whether a second measurement reproduces a
//!   published one, with a seeded bootstrap or a Welch interval (definitions: the module docs of
//!   [`compare`](mod@compare)); [`compare_artifacts`] does it for the
//!   headline metrics of two artifacts.
//!
//! # Deliberate copies
//!
//! Everywhere else in anvil an idea is written once. The checker is the
//! exception, on purpose: each figure it confirms is computed here again,
//! from the protocol's definitions (docs/metrics.md), not by calling the
//! code that wrote the artifact, so one bug cannot produce a figure and
//! also pass it. The copies, each beside the load generator's original
//! (`crates/loadgen/src/...`):
//!
//! | here | the load generator's |
//! |---|---|
//! | [`stats`]: nearest-rank percentiles, mean, spread | `output/stats.rs` |
//! | [`quantile_interval`]: order-statistic intervals of a percentile | `output/stats.rs`, `output/interval.rs` |
//! | [`batch_means`]: intervals under correlation, the independence test | `output/batch_means.rs`, `output/independence.rs` |
//! | [`pool`]: intervals across repeats (replications) | `output/replications.rs` |
//! | [`tdist`]: Student-t quantiles | `output/student_t.rs` |
//! | [`tally`], [`metrics`]: which requests count, and their figures | `output/benchmark.rs` |
//! | [`per_request`]: a record's own derived values | `observe/record.rs` |
//! | [`series`]: per-interval series | `output/series.rs` |
//! | [`stages`]: load stages' windows and figures | `output/benchmark.rs`, `output/steady_state.rs` |
//! | [`client_error`]: the client's bound on its own stamps | `output/client_error.rs` |
//! | [`tokens`]: token tallies | `output/tokens.rs` |
//! | [`jobs`]: agent tasks as jobs, with the replay rule | `output/jobs.rs` |
//! | [`binomial`]: the Clopper–Pearson interval | `output/jobs.rs` (`share_interval`, through statrs) |
//!
//! [`binomial`] is also the one Clopper–Pearson the tests and benches state
//! rates with: it is the checker's, so a test of the load generator's
//! statistics does not grade itself with its own code. Nothing else here is
//! used outside `verify`, `reproduce` and the tests.

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
pub mod run_to_run;
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
