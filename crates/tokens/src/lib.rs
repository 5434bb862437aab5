//! A model's own tokenizer, for prompts that are exactly as many tokens as
//! a workload says: where a tokenizer comes from ([`spec`], [`hf_cache`]),
//! how it is asked ([`tokenizer`], [`server_tokenize`]) and the one-token
//! words prompts are built from ([`alphabet`]).

pub mod alphabet;
pub mod error;
pub mod hf_cache;
pub mod server_tokenize;
pub mod spec;
pub mod tokenizer;

pub use alphabet::{AlphabetSummary, TokenAlphabet};
pub use error::{ReplyError, TokenizerError, TokenizerSpecError};
pub use spec::TokenizerSpec;
pub use tokenizer::{ServerAddress, Tokenizer, TokenizerIdentity};
