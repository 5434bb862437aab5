//! Serde for the recipe words results store (`#[serde(with = …)]`).

/// Serde for a recipe word (`words!` enums): stored as its word.
macro_rules! word_serde {
    ($module:ident, $ty:ty) => {
        pub(crate) mod $module {
            use serde::{Deserialize, Deserializer, Serializer};

            pub fn serialize<S: Serializer>(word: &$ty, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(word.as_str())
            }

            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                let text = String::deserialize(d)?;
                <$ty>::from_word(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!("`{text}` is not one of {}", <$ty>::WORDS.join(", ")))
                })
            }
        }
    };
}

word_serde!(check_type_word, crate::recipe::words::CheckType);
word_serde!(goal_word, crate::recipe::words::Goal);
