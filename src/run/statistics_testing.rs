//! For tests of the verdicts as statistics: seeded draws from known
//! distributions (independent and correlated), the exact interval of an
//! observed share, and the check that a share stays within a stated rate.

/// Seeded uniforms in (0, 1) (xorshift64*: the same draws on every
/// machine, no crate).
fn uniforms(seed: u64) -> impl Iterator<Item = f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    std::iter::repeat_with(move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        ((state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    })
}

/// `n` seeded exponential latencies of mean 100 ms.
pub fn exponential(seed: u64, n: usize) -> Vec<f64> {
    uniforms(seed).take(n).map(|u| -100.0 * (1.0 - u).ln()).collect()
}

/// The true p90 of [`exponential`]'s distribution.
pub fn exponential_p90() -> f64 {
    100.0 * 10f64.ln()
}

/// The true median of [`exponential`]'s distribution.
pub fn exponential_p50() -> f64 {
    100.0 * 2f64.ln()
}

/// `n` seeded latencies correlated in request order: `100 · e^(x/2)`, where
/// `x` is a stationary Gaussian AR(1) series of unit variance with lag-one
/// correlation `rho` (a server whose queue drifts slowly). Marginally
/// log-normal, so [`log_normal_truth`] gives its percentiles and mean.
pub fn correlated(seed: u64, n: usize, rho: f64) -> Vec<f64> {
    let mut draws = uniforms(seed);
    let mut gaussian = move || {
        // Box–Muller: one standard normal from two uniforms.
        let (u, v) = (draws.next().unwrap_or(0.5), draws.next().unwrap_or(0.5));
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    };
    let mut x = gaussian();
    (0..n)
        .map(|_| {
            x = rho * x + (1.0 - rho * rho).sqrt() * gaussian();
            100.0 * (x / 2.0).exp()
        })
        .collect()
}

/// The truth of [`correlated`]'s marginal: its mean, and the percentile
/// whose standard-normal quantile is `z` (0 for p50, 1.2816 for p90).
pub fn log_normal_truth(z: Option<f64>) -> f64 {
    match z {
        Some(z) => 100.0 * (z / 2.0).exp(),
        None => 100.0 * (0.125f64).exp(),
    }
}

/// The exact (Clopper–Pearson) two-sided 95% interval of a share k/n.
pub fn clopper_pearson(k: u64, n: u64) -> (f64, f64) {
    anvil_evidence::binomial::clopper_pearson(k, n, 0.95)
}

/// `errors` of `trials` stay within the `stated` rate: even the upper end
/// of the share's 95% Clopper–Pearson interval is at most `stated`.
pub fn assert_within(what: &str, errors: u64, trials: u64, stated: f64) {
    let (low, high) = clopper_pearson(errors, trials);
    eprintln!("{what}: {errors}/{trials} (95% CP {low:.4}–{high:.4}); stated at most {stated}");
    assert!(
        high <= stated,
        "{what}: {errors}/{trials} wrong, 95% CP up to {high:.4}, above the stated {stated}"
    );
}
