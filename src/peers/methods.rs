//! The peers' own statistics, re-implemented from their documented
//! definitions so their printed summaries can be checked against the
//! per-request data of the same file: numpy's defaults (vLLM, AIPerf) and
//! guidellm's weighted inverted CDF. anvil's own are nearest-rank
//! (`anvil_loadgen::Distribution`); these are only for the checks.

/// numpy's `np.percentile(x, p)` (method `linear`): rank `p/100 · (n − 1)`
/// of the sorted sample, interpolated between its neighbours.
pub fn linear_percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = p / 100.0 * (n - 1) as f64;
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let t = h - lo as f64;
    Some(sorted[lo] + t * (sorted[hi] - sorted[lo]))
}

pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// numpy's `np.std` (ddof 0), as vLLM and AIPerf print it.
pub fn population_std(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    Some((values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / values.len() as f64).sqrt())
}

/// A sample whose values carry weights (guidellm weighs ITL by output
/// tokens − 1 and TPOT by output tokens).
pub struct Weighted {
    /// Distinct values ascending, with their summed weights.
    pdf: Vec<(f64, f64)>,
    total: f64,
}

impl Weighted {
    pub fn of(pairs: &[(f64, f64)]) -> Option<Weighted> {
        let mut sorted: Vec<(f64, f64)> = pairs.iter().copied().filter(|(_, w)| *w > 0.0).collect();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut pdf: Vec<(f64, f64)> = Vec::with_capacity(sorted.len());
        for (v, w) in sorted {
            match pdf.last_mut() {
                Some(last) if last.0 == v => last.1 += w,
                _ => pdf.push((v, w)),
            }
        }
        let total: f64 = pdf.iter().map(|(_, w)| w).sum();
        (total > 0.0).then_some(Weighted { pdf, total })
    }

    /// guidellm's percentile: the first value whose cumulative normalised
    /// weight reaches q (numpy `searchsorted(cumsum, q, side="left")`), so
    /// always an observed value, and the median of an even sample is the lower middle.
    pub fn inverted_cdf(&self, p: f64) -> f64 {
        let q = p / 100.0;
        let mut cumulative = 0.0;
        for (v, w) in &self.pdf {
            cumulative += w / self.total;
            if cumulative >= q {
                return *v;
            }
        }
        self.pdf[self.pdf.len() - 1].0
    }

    pub fn mean(&self) -> f64 {
        self.pdf.iter().map(|(v, w)| v * w).sum::<f64>() / self.total
    }

    /// The weighted population standard deviation.
    pub fn std(&self) -> f64 {
        let m = self.mean();
        (self.pdf.iter().map(|(v, w)| w * (v - m).powi(2)).sum::<f64>() / self.total).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_and_guidellm_percentiles_by_hand() {
        let x = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(linear_percentile(&x, 50.0), Some(2.5));
        assert_eq!(linear_percentile(&x, 90.0), Some(3.7));
        assert_eq!(linear_percentile(&[], 50.0), None);
        let even = Weighted::of(&x.map(|v| (v, 1.0))).unwrap();
        assert_eq!(even.inverted_cdf(50.0), 2.0, "the lower middle, not the average");
        assert_eq!(even.inverted_cdf(99.0), 4.0);
        let skewed = Weighted::of(&[(1.0, 1.0), (2.0, 3.0)]).unwrap();
        assert_eq!(skewed.inverted_cdf(30.0), 2.0);
        assert_eq!(skewed.mean(), 1.75);
        assert_eq!(population_std(&[1.0, 3.0]), Some(1.0));
    }
}
