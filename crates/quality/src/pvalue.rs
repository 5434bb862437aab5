//! Exact p-values: summed from the binomial and hypergeometric
//! probabilities themselves, with no normal approximation, so a verdict at
//! a level is wrong at most at that level's rate whatever the counts.

use statrs::function::factorial::ln_binomial;

/// The two-sided exact binomial test of `k` successes in `n` trials
/// against p = 1/2 (the sign test; McNemar's exact test on discordant
/// pairs): twice the smaller tail, at most 1. The distribution is
/// symmetric, so doubling the smaller tail is the same as summing every
/// outcome no likelier than the one seen. 1 when `n` is 0.
pub fn sign_test(k: u64, n: u64) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let smaller = k.min(n - k);
    let tail: f64 = (0..=smaller).map(|i| half_binomial(i, n)).sum();
    (2.0 * tail).min(1.0)
}

/// The smallest p-value [`sign_test`] can give with `n` trials (all on one
/// side): 2 · 2⁻ⁿ, at most 1.
pub fn sign_test_floor(n: u64) -> f64 {
    (2.0 * half_binomial(0, n)).min(1.0)
}

/// P(X = k) for X ~ Binomial(n, 1/2).
fn half_binomial(k: u64, n: u64) -> f64 {
    (ln_binomial(n, k) - n as f64 * std::f64::consts::LN_2).exp()
}

/// Fisher's exact test, one-sided: of two samples, `x1` of `n1` against
/// `x2` of `n2`, the chance that the first holds `x1` or more of the
/// `x1 + x2` given the margins (hypergeometric), under the hypothesis that
/// both share one rate. Small when the first sample's rate is higher.
pub fn fisher_greater(x1: u64, n1: u64, x2: u64, n2: u64) -> f64 {
    assert!(x1 <= n1 && x2 <= n2, "{x1} of {n1} and {x2} of {n2}");
    let (total, hits) = (n1 + n2, x1 + x2);
    let most = hits.min(n1);
    let p: f64 = (x1..=most).map(|x| hypergeometric(x, total, hits, n1)).sum();
    p.min(1.0)
}

/// The smallest p-value [`fisher_greater`] can give with these margins:
/// every hit in the first sample (as many as fit).
pub fn fisher_greater_floor(n1: u64, hits: u64, n2: u64) -> f64 {
    hypergeometric(hits.min(n1), n1 + n2, hits, n1).min(1.0)
}

/// P(X = x) for X the hits among `draws` drawn without replacement from
/// `total` holding `hits`.
fn hypergeometric(x: u64, total: u64, hits: u64, draws: u64) -> f64 {
    if x > hits || x > draws || draws - x > total - hits {
        return 0.0;
    }
    (ln_binomial(hits, x) + ln_binomial(total - hits, draws - x) - ln_binomial(total, draws)).exp()
}

#[cfg(test)]
mod tests {
    use super::{fisher_greater, fisher_greater_floor, sign_test, sign_test_floor};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.max(1e-300)
    }

    #[test]
    fn sign_test_by_hand() {
        // 0 of 5: 2/32; 1 of 10: 2·11/1024; 10 of 20: 1.
        assert!(close(sign_test(0, 5), 2.0 / 32.0));
        assert!(close(sign_test(5, 5), 2.0 / 32.0));
        assert!(close(sign_test(1, 10), 22.0 / 1024.0));
        assert!(close(sign_test(9, 10), 22.0 / 1024.0));
        assert_eq!(sign_test(10, 20), 1.0);
        assert_eq!(sign_test(0, 0), 1.0);
        assert!(close(sign_test_floor(6), 2.0 / 64.0));
        // R: binom.test(3, 30)$p.value = 1.570e-05 (2 · 4526/2^30).
        assert!(close(sign_test(3, 30), 2.0 * 4526.0 / f64::powi(2.0, 30)));
    }

    #[test]
    fn fisher_by_hand() {
        // Table [[3, 1], [1, 3]] (3 of 4 against 1 of 4): P(X ≥ 3) = (16 + 1)/70.
        assert!(close(fisher_greater(3, 4, 1, 4), 17.0 / 70.0));
        assert!(close(fisher_greater(0, 4, 0, 4), 1.0));
        assert!(close(fisher_greater(0, 4, 4, 4), 1.0));
        // All 3 hits in the first of two samples of 200: C(200,3)/C(400,3).
        let p = (200.0 * 199.0 * 198.0) / (400.0 * 399.0 * 398.0);
        assert!(close(fisher_greater(3, 200, 0, 200), p));
        assert!(close(fisher_greater_floor(200, 3, 200), p));
    }
}
