//! A planned step's preimage, held as the canonical JSON text its
//! fingerprint hashes. A plan of 100,000 steps holds 23 MB of such text; as
//! `serde_json::Value` trees the same preimages took eight times that, and
//! only a few steps' preimages are ever read back (to explain a change,
//! to store an entry).

use anvil_store::Fingerprint;
use serde_json::Value;

use super::canonical::canonical_bytes;
use super::fingerprint::FINGERPRINT_CONTEXT;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreimageText(Box<str>);

impl PreimageText {
    /// The canonical text of `value` and the fingerprint over it, from one serialization.
    pub fn of(value: &Value) -> (PreimageText, Fingerprint) {
        let bytes = canonical_bytes(value);
        let mut hasher = blake3::Hasher::new_derive_key(FINGERPRINT_CONTEXT);
        hasher.update(&bytes);
        // serde_json writes UTF-8; the fallback is unreachable.
        let text = String::from_utf8(bytes).unwrap_or_default();
        (PreimageText(text.into_boxed_str()), Fingerprint::from(hasher.finalize()))
    }

    /// The preimage as JSON (keys in canonical order).
    pub fn value(&self) -> Value {
        // Text this type wrote from a Value always parses back.
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_text_round_trips_and_hashes_as_fingerprint_of() {
        let value = json!({"kind": "cell", "settings": {"rate": 1.5, "n": 3, "s": "é\"x"}, "upstream": {}});
        let (text, fingerprint) = PreimageText::of(&value);
        assert_eq!(fingerprint, super::super::fingerprint_of(&value));
        assert_eq!(text.value(), value);
        assert_eq!(
            text.as_str(),
            r#"{"kind":"cell","settings":{"n":3,"rate":1.5,"s":"é\"x"},"upstream":{}}"#
        );
    }
}
