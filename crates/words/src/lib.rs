//! anvil-words: the one way anvil declares an enum of fixed words (a
//! recipe setting's values, a status a document stores, a format a file
//! names). Each word is written once, next to its variant, and everything
//! else follows from that line: the list of words for "did you mean" and
//! "one of …" messages, word → variant, variant → word, `Display`, and for
//! an enum that a document stores, serde as the word.
//!
//! ```
//! anvil_words::words! {
//!     /// How requests are spread over replicas.
//!     pub enum Balance { RoundRobin = "round-robin", LeastOutstanding = "least-outstanding" }
//! }
//!
//! assert_eq!(Balance::WORDS, ["round-robin", "least-outstanding"]);
//! assert_eq!(Balance::ALL, [Balance::RoundRobin, Balance::LeastOutstanding]);
//! assert_eq!(Balance::from_word("round-robin"), Some(Balance::RoundRobin));
//! assert_eq!(Balance::from_word("roundrobin"), None);
//! assert_eq!(Balance::LeastOutstanding.as_str(), "least-outstanding");
//! assert_eq!(Balance::LeastOutstanding.to_string(), "least-outstanding");
//! ```
//!
//! The enum derives `Debug, Clone, Copy, PartialEq, Eq, Hash`; more derives
//! (`Default` with a `#[default]` variant, `PartialOrd`) and doc comments go
//! on the enum and its variants as usual.
//!
//! An enum a document stores starts with `#[serde]` (first, before its doc
//! comment), with this crate's `serde` feature: it is serialized as its word
//! and deserialized from it, an unknown word failing as serde's derive
//! fails (``unknown variant `x`, expected one of `a`, `b` ``). With
//! `#[serde(other = Variant)]`, an unknown word (written by a newer anvil)
//! reads as that variant instead, like serde's `#[serde(other)]`:
//!
//! ```
//! # #[cfg(feature = "serde")] mod with_serde {
//! anvil_words::words! {
//!     #[serde(other = Unknown)]
//!     /// How a run ended.
//!     pub enum RunStatus { Running = "running", Failed = "failed", Unknown = "unknown" }
//! }
//! # }
//! ```

#![cfg_attr(not(test), no_std)]

/// Not API: the serde the impls of `words! { #[serde] … }` name.
#[cfg(feature = "serde")]
#[doc(hidden)]
pub use serde as __serde;

/// Declares an enum of fixed words: `Variant = "word"` per variant. Gives
/// `ALL` (every variant), `WORDS` (every word, in the same order),
/// `from_word`, `as_str` and `Display`; `#[serde]` or
/// `#[serde(other = Variant)]` first adds `Serialize` and `Deserialize` as
/// the word (see the crate's documentation).
#[macro_export]
macro_rules! words {
    (#[serde(other = $other:ident)] $($rest:tt)+) => {
        $crate::words!(@enum [serde $other] $($rest)+);
    };
    (#[serde] $($rest:tt)+) => {
        $crate::words!(@enum [serde] $($rest)+);
    };
    (@enum [$($serde:tt)*]
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $word:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        #[allow(dead_code)]
        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// Every word, in declaration order (the order of `ALL`).
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            /// The variant a word names, if it names one.
            pub fn from_word(word: &str) -> ::core::option::Option<$name> {
                match word {
                    $($word => ::core::option::Option::Some($name::$variant),)+
                    _ => ::core::option::Option::None,
                }
            }

            /// The variant's word.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word),+
                }
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        $crate::words!(@serde $name [$($serde)*]);
    };
    (@serde $name:ident []) => {};
    (@serde $name:ident [serde $($other:ident)?]) => {
        impl $crate::__serde::Serialize for $name {
            fn serialize<S: $crate::__serde::Serializer>(&self, serializer: S) -> ::core::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::__serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(deserializer: D) -> ::core::result::Result<$name, D::Error> {
                struct Word;

                impl $crate::__serde::de::Visitor<'_> for Word {
                    type Value = $name;

                    fn expecting(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        f.write_str("one of the words of ")?;
                        f.write_str(::core::stringify!($name))
                    }

                    fn visit_str<E: $crate::__serde::de::Error>(self, word: &str) -> ::core::result::Result<$name, E> {
                        match $name::from_word(word) {
                            ::core::option::Option::Some(found) => ::core::result::Result::Ok(found),
                            ::core::option::Option::None => $crate::words!(@unknown $name word $($other)?),
                        }
                    }
                }

                deserializer.deserialize_str(Word)
            }
        }
    };
    (@unknown $name:ident $word:ident) => {
        ::core::result::Result::Err($crate::__serde::de::Error::unknown_variant($word, $name::WORDS))
    };
    (@unknown $name:ident $word:ident $other:ident) => {
        ::core::result::Result::Ok($name::$other)
    };
    ($($rest:tt)+) => {
        $crate::words!(@enum [] $($rest)+);
    };
}

#[cfg(test)]
mod tests {

    words! {
        /// When connections open.
        #[derive(Default)]
        pub enum Connect {
            /// Before the clock starts.
            #[default]
            Ahead = "ahead",
            OnDemand = "on-demand",
        }
    }

    #[test]
    fn every_word_round_trips() {
        assert_eq!(Connect::ALL.len(), Connect::WORDS.len());
        for (variant, word) in Connect::ALL.iter().zip(Connect::WORDS) {
            assert_eq!(Connect::from_word(word), Some(*variant));
            assert_eq!(variant.as_str(), *word);
            assert_eq!(variant.to_string(), *word);
        }
        assert_eq!(Connect::from_word("on_demand"), None);
        assert_eq!(Connect::default(), Connect::Ahead);
    }

    #[cfg(feature = "serde")]
    mod stored {

        words! {
            #[serde]
            /// A word a document stores.
            pub enum Status { Passed = "passed", NotDeclared = "not declared" }
        }

        words! {
            #[serde(other = Unknown)]
            pub enum RunStatus { Running = "running", Unknown = "unknown" }
        }

        #[test]
        fn stored_as_the_word() {
            assert_eq!(serde_json::to_string(&Status::NotDeclared).unwrap(), "\"not declared\"");
            let read: Status = serde_json::from_str("\"not declared\"").unwrap();
            assert_eq!(read, Status::NotDeclared);
            let value: Status = serde_json::from_value(serde_json::json!("passed")).unwrap();
            assert_eq!(value, Status::Passed);
        }

        #[test]
        fn an_unknown_word_fails_as_serde_derive_fails() {
            let error = serde_json::from_str::<Status>("\"maybe\"").unwrap_err().to_string();
            assert!(
                error.starts_with("unknown variant `maybe`, expected `passed` or `not declared`"),
                "{error}"
            );
            assert!(serde_json::from_str::<Status>("3").is_err());
        }

        #[test]
        fn other_reads_an_unknown_word() {
            let read: RunStatus = serde_json::from_str("\"archived\"").unwrap();
            assert_eq!(read, RunStatus::Unknown);
            assert_eq!(RunStatus::from_word("archived"), None);
            assert_eq!(serde_json::to_string(&RunStatus::Running).unwrap(), "\"running\"");
            assert_eq!(RunStatus::Unknown.to_string(), "unknown");
        }
    }
}
