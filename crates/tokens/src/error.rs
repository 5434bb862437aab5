//! What can go wrong with a tokenizer, as a type: callers match on it or
//! show it; `anyhow` stays in the applications above.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// A `tokenizer` setting that names no usable file.
    #[error(transparent)]
    Spec(#[from] TokenizerSpecError),
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
    Reply { url: String, reason: ReplyError },
    /// A tokenizer that cannot spell token-exact prompts.
    #[error("{0}")]
    Alphabet(String),
    #[error("a tokenizing task ended abnormally: {0}")]
    Task(#[from] tokio::task::JoinError),
}

pub type Result<T> = std::result::Result<T, TokenizerError>;

/// Why a recipe's `tokenizer` word ([`crate::TokenizerSpec::parse`]), or the
/// Hugging Face cache entry it names ([`crate::hf_cache::locate`]), is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenizerSpecError {
    #[error("an empty tokenizer: write a path, `hf:ORG/NAME` or `server`")]
    Empty,
    #[error("`hf:{model}`: a Hugging Face model is `hf:ORG/NAME`")]
    NotOrgName { model: String },
    #[error("no Hugging Face cache: neither HF_HUB_CACHE, HF_HOME nor HOME is set")]
    NoHubCache,
    /// The model has no folder (or no snapshots) in the cache.
    #[error(
        "`hf:{model}` is not in the local Hugging Face cache ({}); anvil never downloads a \
         tokenizer: fetch it first (`huggingface-cli download {model} tokenizer.json`) or give its path",
        folder.display()
    )]
    NotCached { model: String, folder: PathBuf },
    #[error(
        "`hf:{model}` has {count} snapshots in {} and no refs/main to choose one: give the path",
        snapshots.display()
    )]
    NoMainRevision { model: String, count: usize, snapshots: PathBuf },
    #[error("`hf:{model}` revision {revision} has no tokenizer.json ({})", file.display())]
    NoTokenizerJson { model: String, revision: String, file: PathBuf },
}

/// What is wrong with a tokenize reply that holds no token ids
/// ([`crate::server_tokenize::ids_of`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplyError {
    #[error("no `tokens` list in {reply}")]
    NoTokens { reply: serde_json::Value },
    #[error("token {token} is not an id")]
    NotAnId { token: serde_json::Value },
}
