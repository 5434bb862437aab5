//! Every way launching, probing or inspecting a server can fail.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    #[error("cannot find program `{program}`: {reason}")]
    ProgramNotFound { program: String, reason: String },

    #[error("cannot start server `{name}` ({program}): {source}")]
    Spawn {
        name: String,
        program: String,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot write {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("invalid log readiness pattern `{pattern}`: {source}")]
    BadLogPattern {
        pattern: String,
        #[source]
        source: regex::Error,
    },

    #[error("server `{name}` exited before it was ready ({status})\n--- last log lines ---\n{log_tail}")]
    ExitedBeforeReady { name: String, status: ExitStatus, log_tail: String },

    #[error("server `{name}` was not ready after {}\n--- last log lines ---\n{log_tail}", humanize(*after))]
    ReadyTimeout { name: String, after: Duration, log_tail: String },

    #[error("cannot hash {path}: {source}")]
    Hash {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot read the Python environment of `{python}`: {reason}")]
    PythonProbe { python: String, reason: String },

    #[error("cannot scrape metrics from {url}: {reason}")]
    Metrics { url: String, reason: String },

    #[error("asked for {wanted} GPUs but the pool only has {total}")]
    NotEnoughGpus { wanted: usize, total: usize },
}

fn humanize(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}
