//! Which tokenizer a server's prompts are built with, as a recipe names it:
//! `tokenizer "PATH"` (a Hugging Face `tokenizer.json`, or a folder holding
//! one), `tokenizer "hf:ORG/NAME"` (that model's `tokenizer.json` in the
//! local Hugging Face cache, never downloaded) or `tokenizer "server"` (the
//! engine's own tokenize endpoint).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::TokenizerSpecError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TokenizerSpec {
    /// A `tokenizer.json` or a folder holding one (relative paths: to the recipe's folder).
    File { path: PathBuf },
    /// A model in the local Hugging Face cache (`ORG/NAME`).
    HuggingFace { model: String },
    /// The server's own tokenize endpoint.
    Server,
}

impl TokenizerSpec {
    /// Reads the recipe's word: `server`, `hf:ORG/NAME` or a path.
    pub fn parse(word: &str) -> Result<Self, TokenizerSpecError> {
        let word = word.trim();
        if word.is_empty() {
            return Err(TokenizerSpecError::Empty);
        }
        if word == "server" {
            return Ok(Self::Server);
        }
        if let Some(model) = word.strip_prefix("hf:") {
            let parts: Vec<&str> = model.split('/').collect();
            if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
                return Err(TokenizerSpecError::NotOrgName { model: model.to_string() });
            }
            return Ok(Self::HuggingFace { model: model.to_string() });
        }
        Ok(Self::File { path: PathBuf::from(word) })
    }

    /// How the recipe wrote it.
    pub fn as_written(&self) -> String {
        match self {
            Self::File { path } => path.display().to_string(),
            Self::HuggingFace { model } => format!("hf:{model}"),
            Self::Server => "server".into(),
        }
    }

    /// A relative path made relative to `base` (the recipe's folder).
    pub fn resolved_against(&self, base: &Path) -> Self {
        match self {
            Self::File { path } if path.is_relative() => Self::File { path: base.join(path) },
            other => other.clone(),
        }
    }

    /// The `tokenizer.json` this spec reads, when it reads a file: what
    /// the configuration fingerprint hashes. `None` for the server's.
    pub fn file(&self) -> Option<Result<PathBuf, TokenizerSpecError>> {
        match self {
            Self::File { path } => Some(Ok(match path.is_dir() {
                true => path.join("tokenizer.json"),
                false => path.clone(),
            })),
            Self::HuggingFace { model } => Some(crate::hf_cache::locate(model)),
            Self::Server => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_forms() {
        assert_eq!(TokenizerSpec::parse("server"), Ok(TokenizerSpec::Server));
        assert_eq!(
            TokenizerSpec::parse("hf:HuggingFaceTB/SmolLM2-135M-Instruct"),
            Ok(TokenizerSpec::HuggingFace { model: "HuggingFaceTB/SmolLM2-135M-Instruct".into() })
        );
        assert_eq!(
            TokenizerSpec::parse("tok/tokenizer.json"),
            Ok(TokenizerSpec::File { path: "tok/tokenizer.json".into() })
        );
        let not_org_name = TokenizerSpec::parse("hf:justname").unwrap_err();
        assert_eq!(not_org_name, TokenizerSpecError::NotOrgName { model: "justname".into() });
        assert!(not_org_name.to_string().contains("hf:ORG/NAME"));
        assert_eq!(TokenizerSpec::parse(" "), Err(TokenizerSpecError::Empty));
        let spec = TokenizerSpec::parse("tok").unwrap();
        assert_eq!(spec.resolved_against(Path::new("/r")), TokenizerSpec::File { path: "/r/tok".into() });
        assert_eq!(spec.as_written(), "tok");
    }
}
