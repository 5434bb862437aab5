//! Deterministic randomness: every random choice the sim makes comes from a
//! seed derived from the profile seed and the request, so one request always
//! gets the same reply, timing draws and faults.

/// Derive a 64-bit seed from labelled parts (blake3, so it is stable across
/// platforms and Rust versions).
pub fn derive_seed(parts: &[&[u8]]) -> u64 {
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        // Length-prefix each part so ("ab","c") and ("a","bc") differ.
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// A small, fast generator (SplitMix64). Not for cryptography.
#[derive(Debug, Clone)]
pub struct SimRng {
    state: u64,
}

impl SimRng {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator for one named purpose, independent of the others drawn
    /// from the same seed (so adding a draw elsewhere changes nothing here).
    pub fn for_purpose(seed: u64, purpose: &str) -> Self {
        Self::new(derive_seed(&[&seed.to_le_bytes(), purpose.as_bytes()]))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n); 0 when n is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_purposes_differ() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(SimRng::for_purpose(7, "x").next_u64(), SimRng::for_purpose(7, "y").next_u64());
        assert_ne!(derive_seed(&[b"ab", b"c"]), derive_seed(&[b"a", b"bc"]));
    }

    #[test]
    fn chance_roughly_matches_rate() {
        let mut r = SimRng::new(1);
        let hits = (0..10_000).filter(|_| r.chance(0.3)).count();
        assert!((2_500..3_500).contains(&hits), "{hits}");
        assert!(!SimRng::new(1).chance(0.0));
    }
}
