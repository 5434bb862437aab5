//! What the statistical tests share: a seeded generator, simulated
//! answers, exact binomial probabilities computed here (not by the crate:
//! a test does not grade the crate with the crate's own code), and rates
//! stated with their Clopper–Pearson interval.

use anvil_evidence::binomial::clopper_pearson;

/// The level of the intervals the tests state their measured rates with.
pub const STATED: f64 = 0.99;

/// SplitMix64: seeded, so every test sees the same draws on every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }
}

/// A measured rate: `k` of `n`, with its Clopper–Pearson interval at
/// [`STATED`], printed (`cargo test -p anvil-quality -- --nocapture`).
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub share: f64,
    pub low: f64,
    pub high: f64,
}

pub fn rate(what: &str, k: u64, n: u64) -> Rate {
    let (low, high) = clopper_pearson(k, n, STATED);
    let rate = Rate { share: k as f64 / n as f64, low, high };
    println!("{what}: {k} of {n} = {:.4}, {:.0}% CP [{low:.4}, {high:.4}]", rate.share, STATED * 100.0);
    rate
}

/// P(X = k) for k in 0..=n, X ~ Binomial(n, p), by the ratio of
/// consecutive terms (no log-gamma: independent of the crate's).
pub fn binomial_pmf(n: u64, p: f64) -> Vec<f64> {
    if p <= 0.0 || p >= 1.0 {
        let at = if p <= 0.0 { 0 } else { n as usize };
        return (0..=n as usize).map(|k| if k == at { 1.0 } else { 0.0 }).collect();
    }
    // Start from the mode and walk out both ways, to keep every term in range.
    let mode = ((n as f64 + 1.0) * p).floor().min(n as f64) as usize;
    let mut pmf = vec![0.0; n as usize + 1];
    pmf[mode] = 1.0;
    let odds = p / (1.0 - p);
    for k in mode..n as usize {
        pmf[k + 1] = pmf[k] * (n as f64 - k as f64) / (k as f64 + 1.0) * odds;
    }
    for k in (0..mode).rev() {
        pmf[k] = pmf[k + 1] * (k as f64 + 1.0) / (n as f64 - k as f64) / odds;
    }
    let total: f64 = pmf.iter().sum();
    pmf.iter().map(|x| x / total).collect()
}

/// Whether the two-sided exact sign test rejects `b` of `m` at `alpha`,
/// computed here from [`binomial_pmf`].
pub fn sign_rejects(b: u64, m: u64, alpha: f64) -> bool {
    if m == 0 {
        return false;
    }
    let pmf = binomial_pmf(m, 0.5);
    let smaller = b.min(m - b) as usize;
    let tail: f64 = pmf[..=smaller].iter().sum();
    2.0 * tail <= alpha
}
