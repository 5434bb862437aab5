//! Pooled per-request values (`chunk_gaps_us`: every element of every
//! eligible record) counted per distinct value instead of kept: a pool
//! grows with the tokens of a cell, its distinct µs values do not. Nearest
//! rank is exact over the counts; the mean and standard deviation differ
//! from a sum in record order only by rounding (within the checker's 1e-9).

use std::collections::BTreeMap;

use crate::stats::{PERCENTILES, Summary, nearest_rank_index};

/// A multiset of µs values read as ms (`us / 1000`), ordered as
/// `f64::total_cmp` orders them. Whole µs (the format's) are counted by
/// their integer; any other value by its ms value's bits.
#[derive(Debug, Clone, Default)]
pub struct Pool {
    micros: BTreeMap<u32, u64>,
    others: BTreeMap<u64, u64>,
    n: usize,
}

/// `f64` bits mapped so that unsigned order is `total_cmp` order.
fn key(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

fn value(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

impl Pool {
    /// Adds `us / 1000`.
    pub fn add_micros(&mut self, us: f64) {
        // +0.0 and whole positives only: −0.0 / 1000 is −0.0, not the integer 0's 0.0.
        let whole = us.fract() == 0.0 && (us > 0.0 || us.to_bits() == 0) && us <= f64::from(u32::MAX);
        if whole {
            *self.micros.entry(us as u32).or_default() += 1;
        } else {
            *self.others.entry(key(us / 1000.0)).or_default() += 1;
        }
        self.n += 1;
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// (value, count), ascending: the two maps merged.
    fn iter(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let mut micros = self.micros.iter().map(|(us, c)| (f64::from(*us) / 1000.0, *c)).peekable();
        let mut others = self.others.iter().map(|(k, c)| (value(*k), *c)).peekable();
        std::iter::from_fn(move || match (micros.peek(), others.peek()) {
            (Some(a), Some(b)) if a.0.total_cmp(&b.0).is_gt() => others.next(),
            (Some(_), _) => micros.next(),
            (None, _) => others.next(),
        })
    }

    /// The value at 1-based `rank` of the sorted pool.
    fn at_rank(&self, rank: usize) -> f64 {
        let mut seen = 0u64;
        for (v, c) in self.iter() {
            seen += c;
            if seen >= rank as u64 {
                return v;
            }
        }
        f64::NAN
    }

    /// [`Summary::with_z`] of the pooled values; `None` when empty.
    pub fn summary(&self, z: f64) -> Option<Summary> {
        let n = self.n;
        if n == 0 {
            return None;
        }
        let mean = self.iter().map(|(v, c)| v * c as f64).sum::<f64>() / n as f64;
        let sd = (n >= 2).then(|| {
            let ss: f64 = self.iter().map(|(v, c)| c as f64 * (v - mean) * (v - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        let half = sd.map(|s| z * s / (n as f64).sqrt());
        Some(Summary {
            n,
            mean,
            sd,
            ci_low: half.map(|h| mean - h),
            ci_high: half.map(|h| mean + h),
            min: self.at_rank(1),
            max: self.at_rank(n),
            pct: PERCENTILES.map(|q| self.at_rank(nearest_rank_index(q, n))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_summarize_as_the_values_do() {
        let micros =
            [500.0, 1.0, 3000.0, 500.0, 500.0, 7250.0, 0.0, 3000.0, 12000.0, 1.0, 1000.0, 2.5, -0.0, -4.0];
        let values: Vec<f64> = micros.iter().map(|us| us / 1000.0).collect();
        let mut pool = Pool::default();
        micros.iter().for_each(|us| pool.add_micros(*us));
        let (a, b) = (pool.summary(1.96).unwrap(), Summary::of(&values).unwrap());
        assert_eq!((a.n, a.min.to_bits(), a.max, a.pct), (b.n, b.min.to_bits(), b.max, b.pct));
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let merged: Vec<u64> =
            pool.iter().flat_map(|(v, c)| std::iter::repeat_n(v.to_bits(), c as usize)).collect();
        assert_eq!(merged, sorted.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        assert!((a.mean - b.mean).abs() < 1e-12 && (a.sd.unwrap() - b.sd.unwrap()).abs() < 1e-12);
        assert!(Pool::default().summary(1.96).is_none());
        assert_eq!(value(key(-2.5)), -2.5);
        assert!(key(-2.5) < key(-0.0) && key(-0.0) < key(0.0) && key(0.0) < key(1e-300));
    }
}
