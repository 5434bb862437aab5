//! A loaded tokenizer: a Hugging Face `tokenizer.json` read with the
//! `tokenizers` crate, or the server's tokenize endpoint. Both only encode
//! (no special tokens added): prompts are built from tokens anvil already
//! knows, and the tokenizer is asked only to check them.

use std::path::Path;

use crate::error::{Result, TokenizerError};
use serde::{Deserialize, Serialize};

use crate::server_tokenize::ServerTokenizer;
use crate::spec::TokenizerSpec;

/// Tokenize requests in flight at once when a server is asked many things.
const SERVER_REQUESTS_AT_ONCE: usize = 8;

pub enum Tokenizer {
    Local { tokenizer: Box<tokenizers::Tokenizer>, identity: TokenizerIdentity },
    Server { endpoint: ServerTokenizer, identity: TokenizerIdentity },
}

/// What the artifact says about the tokenizer a cell's prompts were built with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenizerIdentity {
    /// The recipe's word (`server`, `hf:ORG/NAME`, a path).
    pub source: String,
    /// The `tokenizer.json` read, or the tokenize endpoint asked.
    pub location: String,
    /// blake3 of the `tokenizer.json` (`None`: the server's, known by its alphabet's digest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
}

/// Where a server-side tokenizer is asked (the cell's first target).
pub struct ServerAddress<'a> {
    pub base_url: &'a str,
    pub model: &'a str,
    pub api_key: Option<&'a str>,
    pub tls: &'a anvil_net::TlsSettings,
}

impl Tokenizer {
    pub fn load(spec: &TokenizerSpec, server: &ServerAddress<'_>) -> Result<Self> {
        let source = spec.as_written();
        match spec.file() {
            Some(file) => {
                let file = file?;
                let (tokenizer, digest) = read_file(&file)?;
                let identity =
                    TokenizerIdentity { source, location: file.display().to_string(), blake3: Some(digest) };
                Ok(Self::Local { tokenizer: Box::new(tokenizer), identity })
            }
            None => {
                let endpoint =
                    ServerTokenizer::new(server.base_url, server.model, server.api_key, server.tls)?;
                let identity =
                    TokenizerIdentity { source, location: endpoint.url().to_string(), blake3: None };
                Ok(Self::Server { endpoint, identity })
            }
        }
    }

    pub fn identity(&self) -> &TokenizerIdentity {
        match self {
            Self::Local { identity, .. } | Self::Server { identity, .. } => identity,
        }
    }

    /// The ids of `text`, without special tokens.
    pub async fn encode(&self, text: &str) -> Result<Vec<u32>> {
        match self {
            Self::Local { tokenizer, .. } => Ok(tokenizer
                .encode_fast(text, false)
                .map_err(|e| TokenizerError::Encode(e.to_string()))?
                .get_ids()
                .to_vec()),
            Self::Server { endpoint, .. } => endpoint.encode(text).await,
        }
    }

    /// A local tokenizer's count of `text`, and where (in bytes, on a
    /// character boundary) a text longer than `keep` tokens would end to
    /// keep its first `keep`. A server's endpoint gives no offsets: for it
    /// this is an error (count with [`Self::encode_many`]).
    pub fn count_and_cut(&self, text: &str, keep: Option<u64>) -> Result<(u64, Option<usize>)> {
        let Self::Local { tokenizer, .. } = self else {
            return Err(TokenizerError::NoOffsets);
        };
        let encoding = tokenizer.encode(text, false).map_err(|e| TokenizerError::Encode(e.to_string()))?;
        let count = encoding.len() as u64;
        let cut = keep.filter(|&k| k > 0 && count > k).and_then(|k| {
            let mut end = encoding.get_offsets().get(k as usize - 1)?.1.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            Some(end)
        });
        Ok((count, cut))
    }

    /// The ids of each text; a server is asked several at a time.
    pub async fn encode_many(&self, texts: &[String]) -> Result<Vec<Vec<u32>>> {
        match self {
            Self::Local { .. } => {
                let mut out = Vec::with_capacity(texts.len());
                for text in texts {
                    out.push(self.encode(text).await?);
                }
                Ok(out)
            }
            Self::Server { endpoint, .. } => {
                let mut out = vec![Vec::new(); texts.len()];
                for (chunk_at, chunk) in texts.chunks(SERVER_REQUESTS_AT_ONCE).enumerate() {
                    let mut asks = tokio::task::JoinSet::new();
                    for (k, text) in chunk.iter().enumerate() {
                        let (endpoint, text) = (endpoint.clone(), text.clone());
                        asks.spawn(async move { (k, endpoint.encode(&text).await) });
                    }
                    while let Some(done) = asks.join_next().await {
                        let (k, ids) = done?;
                        out[chunk_at * SERVER_REQUESTS_AT_ONCE + k] = ids?;
                    }
                }
                Ok(out)
            }
        }
    }

    /// Whether asking costs a round trip (the checks then ask less often).
    pub fn is_remote(&self) -> bool {
        matches!(self, Self::Server { .. })
    }
}

/// The tokenizer in `file` and the blake3 of its bytes.
pub fn read_file(file: &Path) -> Result<(tokenizers::Tokenizer, String)> {
    let bytes =
        std::fs::read(file).map_err(|source| TokenizerError::Read { path: file.to_path_buf(), source })?;
    let tokenizer = tokenizers::Tokenizer::from_bytes(&bytes)
        .map_err(|e| TokenizerError::NotATokenizer { path: file.to_path_buf(), reason: e.to_string() })?;
    Ok((tokenizer, format!("blake3:{}", blake3::hash(&bytes).to_hex())))
}
