//! The exact (Clopper–Pearson) interval of a binomial share: how tests and
//! benches state an observed rate (a coverage, a false-pass rate) with the
//! uncertainty of the trials that measured it.

use statrs::distribution::{Beta, ContinuousCDF};

/// The two-sided `level` interval of a share `k` of `n` (Clopper &
/// Pearson, *Biometrika* 26, 1934): the Beta quantiles that put at most
/// `(1 − level)/2` of the binomial tail beyond `k` on each side.
pub fn clopper_pearson(k: u64, n: u64, level: f64) -> (f64, f64) {
    assert!(k <= n && n > 0, "a share of {k} in {n}");
    let tail = (1.0 - level) / 2.0;
    let (k, n) = (k as f64, n as f64);
    let beta = |a: f64, b: f64, p: f64| Beta::new(a, b).map(|d| d.inverse_cdf(p));
    let low = if k == 0.0 { 0.0 } else { beta(k, n - k + 1.0, tail).unwrap_or(0.0) };
    let high = if k == n { 1.0 } else { beta(k + 1.0, n - k, 1.0 - tail).unwrap_or(1.0) };
    (low, high)
}

#[cfg(test)]
mod tests {
    use super::clopper_pearson;

    #[test]
    fn matches_published_values() {
        // 0 of 10: [0, 0.3085]; 5 of 10: [0.1871, 0.8129] (Clopper–Pearson tables).
        let (l, h) = clopper_pearson(0, 10, 0.95);
        assert_eq!(l, 0.0);
        assert!((h - 0.3085).abs() < 1e-4, "{h}");
        let (l, h) = clopper_pearson(5, 10, 0.95);
        assert!((l - 0.1871).abs() < 1e-4 && (h - 0.8129).abs() < 1e-4, "{l} {h}");
        assert_eq!(clopper_pearson(10, 10, 0.95).1, 1.0);
    }
}
