//! Why the simulated engine could not start or stopped, as a type.

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Values the performance model cannot run with, or JSON that is no profile.
    #[error("invalid sim profile: {0}")]
    InvalidProfile(ProfileError),
    #[error("cannot open ground-truth file {path}: {source}")]
    GroundTruthFile { path: String, source: std::io::Error },
    #[error("sim listener has no address: {0}")]
    Listener(std::io::Error),
    #[error("sim server failed: {0}")]
    Server(std::io::Error),
    #[error("sim server task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Why a sim setting ([`crate::SimProfile::set`]) or a whole profile
/// ([`crate::SimProfile::validate`], [`crate::SimProfile::from_json`]) is rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    /// No such key; `message` names the nearest one, or every key.
    #[error("{message}")]
    UnknownKey { key: String, message: String },
    /// The text is not a value of the key's type.
    #[error("sim key `{key}` expects {expected}, got {text:?}")]
    Unreadable { key: String, expected: &'static str, text: String },
    /// The value has the key's type but the profile does not take it.
    #[error("bad value {value:?} for sim key `{key}`: {reason}")]
    BadValue { key: String, value: String, reason: String },
    /// A value the performance model cannot run with: `rule` says what it must be.
    #[error("sim key `{key}` {rule}, got {value}")]
    OutOfRange { key: &'static str, rule: &'static str, value: f64 },
    /// The profile could not be written out as JSON to set a key in it.
    #[error("{0}")]
    Encode(String),
    /// `--profile-json` text that does not read as a profile.
    #[error("not a sim profile's JSON: {0}")]
    NotJson(String),
}
