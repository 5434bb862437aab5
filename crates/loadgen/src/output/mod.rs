//! What is written: the benchmark/v1 artifact, the record log it streams
//! its records from, its plot-ready series and distributions, and the
//! terminal table of a stored artifact (read back in parts by
//! `anvil_evidence::artifact_file`).

pub mod answers;
pub(crate) mod artifact;
pub(crate) mod batch_means;
pub(crate) mod benchmark;
pub(crate) mod client_error;
#[cfg(test)]
pub(crate) mod coverage_tests;
pub mod drain;
pub(crate) mod ending;
pub(crate) mod independence;
pub(crate) mod interval;
pub mod jobs;
pub(crate) mod offered;
pub(crate) mod record_log;
pub(crate) mod replications;
pub mod series;
pub mod server_series;
pub(crate) mod stats;
pub(crate) mod steady_state;
pub(crate) mod student_t;
pub(crate) mod table;
pub mod tokens;
