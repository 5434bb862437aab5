//! For tests of the verdicts as statistics: seeded draws from a known
//! distribution, and the exact interval of an observed share.

/// `n` seeded exponential latencies of mean 100 ms (xorshift64*: the same
/// draws on every machine, no crate).
pub fn exponential(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let u = (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
            -100.0 * (1.0 - u).ln()
        })
        .collect()
}

/// The true p90 of [`exponential`]'s distribution.
pub fn exponential_p90() -> f64 {
    100.0 * 10f64.ln()
}

/// The exact (Clopper–Pearson) two-sided 95% interval of a share k/n.
pub fn clopper_pearson(k: u64, n: u64) -> (f64, f64) {
    anvil_evidence::binomial::clopper_pearson(k, n, 0.95)
}
