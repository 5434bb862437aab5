//! Why the simulated engine could not start or stopped, as a type.

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Values the performance model cannot run with, or JSON that is no profile.
    #[error("invalid sim profile: {0}")]
    InvalidProfile(String),
    #[error("cannot open ground-truth file {path}: {source}")]
    GroundTruthFile { path: String, source: std::io::Error },
    #[error("sim listener has no address: {0}")]
    Listener(std::io::Error),
    #[error("sim server failed: {0}")]
    Server(std::io::Error),
    #[error("sim server task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}
