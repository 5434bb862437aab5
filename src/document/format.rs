//! The format word every step document carries.

/// The `format` of every step document this anvil writes and reads.
pub const STEP_DOCUMENT_FORMAT: &str = "anvil-step/v1";
