//! Distribution-free 95% intervals of a percentile from order statistics,
//! re-derived here without the load generator's code: the equal-tailed
//! interval (Hahn & Meeker, *Statistical Intervals*, 2nd ed., §5.2). For
//! `n` sorted values and percentile `p`, with `B(k) = P(Binomial(n, p) ≤ k)`,
//! the lower bound is the value at the largest rank `l` with
//! `B(l − 1) ≤ 0.025` and the upper one at the smallest rank `u` with
//! `B(u − 1) ≥ 0.975`; a side no rank satisfies is unbounded (`None`).

/// `ln k!` for `k = 0..=n`, summed (no gamma function needed).
fn ln_factorials(n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n + 1);
    let mut acc = 0.0;
    out.push(0.0);
    for k in 1..=n {
        acc += (k as f64).ln();
        out.push(acc);
    }
    out
}

/// The interval of percentile `q` (in percent) of the ascending `sorted`.
pub fn interval(sorted: &[f64], q: u32) -> (Option<f64>, Option<f64>) {
    let (l, u) = ranks(sorted.len(), q);
    (l.map(|r| sorted[r - 1]), u.map(|r| sorted[r - 1]))
}

/// The 1-based ranks `(l, u)` of that interval among `n` values.
pub fn ranks(n: usize, q: u32) -> (Option<usize>, Option<usize>) {
    if n == 0 {
        return (None, None);
    }
    let p = f64::from(q) / 100.0;
    let lf = ln_factorials(n);
    let pmf =
        |k: usize| (lf[n] - lf[k] - lf[n - k] + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()).exp();
    let mut below = 0.0; // B(k - 1) as k rises
    let (mut lower, mut upper) = (None, None);
    for k in 1..=n {
        // below = B(k - 1)
        below += pmf(k - 1);
        if below <= 0.025 {
            lower = Some(k);
        }
        if below >= 0.975 {
            // Past here neither bound can change.
            upper = Some(k);
            break;
        }
    }
    (lower, upper)
}

#[cfg(test)]
mod tests {
    use super::interval;

    #[test]
    fn the_median_of_twenty() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(interval(&v, 50), (Some(6.0), Some(15.0)));
        assert_eq!(interval(&v[..5], 50), (None, None));
    }

    #[test]
    fn p99_needs_368_samples_for_an_upper_bound() {
        let v: Vec<f64> = (1..=368).map(f64::from).collect();
        assert_eq!(interval(&v[..367], 99).1, None);
        assert_eq!(interval(&v, 99).1, Some(368.0));
    }
}
