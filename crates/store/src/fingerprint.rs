//! The 32-byte blake3 configuration fingerprint that names a store entry.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Number of hex characters in a full fingerprint.
pub const FINGERPRINT_HEX_LEN: usize = 64;

/// Number of hex characters shown by [`Fingerprint::short`].
pub const SHORT_HEX_LEN: usize = 12;

/// A blake3 digest identifying one DAG node's configuration.
///
/// Displays (and serializes) as 64 lowercase hex characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    pub const fn from_bytes(bytes: [u8; 32]) -> Fingerprint {
        Fingerprint(bytes)
    }

    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Hash arbitrary bytes (the lead hashes a canonical JSON preimage).
    pub fn of_bytes(bytes: &[u8]) -> Fingerprint {
        Fingerprint(*blake3::hash(bytes).as_bytes())
    }

    /// The full 64-character lowercase hex form.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// The first 12 hex characters, for human output.
    pub fn short(&self) -> String {
        let mut hex = self.to_string();
        hex.truncate(SHORT_HEX_LEN);
        hex
    }
}

impl From<blake3::Hash> for Fingerprint {
    fn from(hash: blake3::Hash) -> Fingerprint {
        Fingerprint(*hash.as_bytes())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One write of the whole hex text: plans format every fingerprint.
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = [0u8; FINGERPRINT_HEX_LEN];
        for (i, byte) in self.0.iter().enumerate() {
            hex[2 * i] = DIGITS[usize::from(byte >> 4)];
            hex[2 * i + 1] = DIGITS[usize::from(byte & 0xf)];
        }
        f.write_str(std::str::from_utf8(&hex).expect("hex digits are ASCII"))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// Why a string is not a fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseFingerprintError {
    #[error("a fingerprint has 64 hex characters, got {0}")]
    WrongLength(usize),
    #[error("a fingerprint is hex, found {0:?}")]
    NotHex(char),
}

impl FromStr for Fingerprint {
    type Err = ParseFingerprintError;

    /// Accepts upper- or lowercase hex; always displays lowercase.
    fn from_str(text: &str) -> Result<Fingerprint, ParseFingerprintError> {
        let char_count = text.chars().count();
        if char_count != FINGERPRINT_HEX_LEN {
            return Err(ParseFingerprintError::WrongLength(char_count));
        }
        let mut bytes = [0u8; 32];
        let digits: Vec<char> = text.chars().collect();
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let high = hex_value(pair[0])?;
            let low = hex_value(pair[1])?;
            *byte = (high << 4) | low;
        }
        Ok(Fingerprint(bytes))
    }
}

fn hex_value(digit: char) -> Result<u8, ParseFingerprintError> {
    digit.to_digit(16).map(|value| value as u8).ok_or(ParseFingerprintError::NotHex(digit))
}

/// True when `name` is exactly a lowercase 64-hex fingerprint (the only
/// spelling the store writes to disk).
pub(crate) fn is_canonical_hex(name: &str) -> bool {
    name.len() == FINGERPRINT_HEX_LEN && is_lower_hex(name)
}

pub(crate) fn is_lower_hex(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Serialize for Fingerprint {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Fingerprint, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_parse_round_trip() {
        let fp = Fingerprint::of_bytes(b"preimage");
        let hex = fp.to_string();
        assert_eq!(hex.len(), 64);
        assert!(is_canonical_hex(&hex));
        assert_eq!(hex.parse::<Fingerprint>(), Ok(fp));
        assert_eq!(hex.to_uppercase().parse::<Fingerprint>(), Ok(fp));
        assert_eq!(fp.short(), hex[..12]);
    }

    #[test]
    fn rejects_bad_text() {
        assert_eq!("abc".parse::<Fingerprint>(), Err(ParseFingerprintError::WrongLength(3)));
        let with_g = format!("g{}", "0".repeat(63));
        assert_eq!(with_g.parse::<Fingerprint>(), Err(ParseFingerprintError::NotHex('g')));
        // Multi-byte characters must not panic on slicing.
        let wide = "é".repeat(64);
        assert!(wide.parse::<Fingerprint>().is_err());
    }

    #[test]
    fn serde_as_hex_string() {
        let fp = Fingerprint::from_bytes([0xab; 32]);
        let json = serde_json::to_string(&fp).unwrap();
        assert_eq!(json, format!("\"{}\"", "ab".repeat(32)));
        let back: Fingerprint = serde_json::from_str(&json).unwrap();
        assert_eq!(back, fp);
        assert!(serde_json::from_str::<Fingerprint>("\"zz\"").is_err());
    }
}
