//! What can go wrong with a tokenizer, as a type: callers match on it or
//! show it; `anyhow` stays in the applications above.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// A `tokenizer` setting that names no usable file.
    #[error("{0}")]
    Spec(String),
    #[error("reading the tokenizer {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a Hugging Face tokenizer.json: {reason}")]
    NotATokenizer { path: PathBuf, reason: String },
    #[error("tokenizing: {0}")]
    Encode(String),
    #[error("a server's tokenize endpoint gives no token offsets to cut at")]
    NoOffsets,
    /// The HTTP client for a server's endpoint could not be built.
    #[error("the client for {url}: {reason}")]
    Client { url: String, reason: String },
    #[error("POST {url} ({attempts} attempts): {source}")]
    Send { url: String, attempts: u32, source: reqwest::Error },
    #[error("reading the reply of {url}: {source}")]
    ReadReply { url: String, source: reqwest::Error },
    #[error("{url} answered {status}: {body}")]
    Status { url: String, status: reqwest::StatusCode, body: String },
    #[error("{url} did not answer JSON: {body}")]
    NotJson { url: String, body: String },
    /// A reply without token ids where they belong.
    #[error("the reply of {url}: {reason}")]
    Reply { url: String, reason: String },
    /// A tokenizer that cannot spell token-exact prompts.
    #[error("{0}")]
    Alphabet(String),
    #[error("a tokenizing task ended abnormally: {0}")]
    Task(#[from] tokio::task::JoinError),
}

pub type Result<T> = std::result::Result<T, TokenizerError>;
