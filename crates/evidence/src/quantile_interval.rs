//! Distribution-free 95% intervals of a percentile from order statistics,
//! re-derived here without the load generator's code: the equal-tailed
//! interval (Hahn & Meeker, *Statistical Intervals*, 2nd ed., §5.2). For
//! `n` sorted values and percentile `p`, with `B(k) = P(Binomial(n, p) ≤ k)`,
//! the lower bound is the value at the largest rank `l` with
//! `B(l − 1) ≤ 0.025` and the upper one at the smallest rank `u` with
//! `B(u − 1) ≥ 0.975`; a side no rank satisfies is unbounded (`None`).

/// `ln k!` for `k = 0..=n`, summed (no gamma function needed) — kept as
/// every [`STRIDE`]-th running sum, and one stride at a time summed on from
/// the one below it: the same additions in the same order as one table of
/// `n + 1` values, without holding that table.
struct LnFactorials {
    checkpoints: Vec<f64>,
    base: usize,
    window: Vec<f64>,
}

const STRIDE: usize = 4096;

impl LnFactorials {
    fn new(n: usize) -> Self {
        let mut checkpoints = vec![0.0];
        let mut acc = 0.0;
        for k in 1..=n {
            acc += (k as f64).ln();
            if k % STRIDE == 0 {
                checkpoints.push(acc);
            }
        }
        Self { checkpoints, base: usize::MAX, window: Vec::with_capacity(STRIDE) }
    }

    /// `ln k!` (`k ≤ n`).
    fn get(&mut self, k: usize) -> f64 {
        let base = k / STRIDE * STRIDE;
        if base != self.base {
            self.window.clear();
            let mut acc = self.checkpoints[k / STRIDE];
            self.window.push(acc);
            for j in base + 1..base + STRIDE {
                acc += (j as f64).ln();
                self.window.push(acc);
            }
            self.base = base;
        }
        self.window[k - base]
    }
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
    // Two cursors: `k` rises, `n − k` falls; each recomputes a stride at a time.
    let (mut up, mut down) = (LnFactorials::new(n), LnFactorials::new(n));
    let lf_n = down.get(n);
    let mut pmf = |k: usize| {
        (lf_n - up.get(k) - down.get(n - k) + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()).exp()
    };
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
    fn strided_ln_factorials_are_the_running_sums() {
        let n = 3 * super::STRIDE + 17;
        let mut acc = 0.0;
        let mut table = vec![0.0];
        for k in 1..=n {
            acc += (k as f64).ln();
            table.push(acc);
        }
        let mut lf = super::LnFactorials::new(n);
        for k in (0..=n).rev().chain(0..=n) {
            assert_eq!(lf.get(k).to_bits(), table[k].to_bits(), "{k}");
        }
    }

    #[test]
    fn p99_needs_368_samples_for_an_upper_bound() {
        let v: Vec<f64> = (1..=368).map(f64::from).collect();
        assert_eq!(interval(&v[..367], 99).1, None);
        assert_eq!(interval(&v, 99).1, Some(368.0));
    }
}
