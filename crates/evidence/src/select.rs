//! Exact order statistics without holding the sample: the values at given
//! ranks of values that can be visited again ([`Ordered`]: a column of the
//! row file is read again on each visit), in memory that does not grow
//! with the sample.
//!
//! Each value is mapped to a 64-bit key whose unsigned order is
//! `f64::total_cmp`'s. A rank's value is narrowed down a digit of the key at
//! a time: one visit counts the values of its bucket (the keys sharing the
//! digits found so far) per next digit, and the digit holding the rank
//! becomes part of the bucket. Once a bucket holds few values, one more
//! visit collects them and the rank is read off their sorted copy. Ties
//! cost nothing: a bucket whose keys are all equal is its value. The result
//! is bit for bit the value a full sort puts at that rank (values equal
//! under `total_cmp` have equal bits).

use std::collections::BTreeMap;

use crate::stats::Ordered;

/// Bits of the key narrowed per visit (a count per digit value, per bucket).
const DIGIT_BITS: u32 = 10;

/// A bucket this small is collected and sorted; a sample this small is
/// simply loaded and sorted whole.
const COLLECT_AT_MOST: usize = 1024;

/// `f64` bits mapped so that unsigned order is `total_cmp` order.
fn key(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

fn value(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// The keys whose top `bits` bits are `prefix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Bucket {
    bits: u32,
    prefix: u64,
}

impl Bucket {
    const ALL: Self = Self { bits: 0, prefix: 0 };

    fn holds(self, k: u64) -> bool {
        self.bits == 0 || k >> (64 - self.bits) == self.prefix
    }

    /// Bits of the next digit (the last one may be shorter).
    fn digit_bits(self) -> u32 {
        DIGIT_BITS.min(64 - self.bits)
    }

    fn digit(self, k: u64) -> usize {
        let d = self.digit_bits();
        ((k << self.bits) >> (64 - d)) as usize
    }

    fn narrowed(self, digit: usize) -> Self {
        let d = self.digit_bits();
        Self { bits: self.bits + d, prefix: (self.prefix << d) | digit as u64 }
    }
}

/// One rank being looked for (`wanted`, of the whole sample): its bucket,
/// its rank within it (1-based) and how many values the bucket holds.
#[derive(Debug, Clone, Copy)]
struct Search {
    wanted: usize,
    bucket: Bucket,
    rank: usize,
    count: usize,
    found: Option<f64>,
}

/// One bucket's counts per next digit, and its least and greatest key.
struct Counts {
    per_digit: Vec<usize>,
    least: u64,
    greatest: u64,
}

/// The values at the 1-based `ranks` (each in `1..=values.len()`) of the
/// ascending order of `values`, as a map from rank to value.
pub fn at_ranks(values: &(impl Ordered + ?Sized), ranks: &[usize]) -> BTreeMap<usize, f64> {
    let n = values.len();
    let mut out = BTreeMap::new();
    if ranks.is_empty() || n == 0 {
        return out;
    }
    if n <= COLLECT_AT_MOST {
        let mut all = Vec::with_capacity(n);
        values.each(&mut |v| all.push(v));
        all.sort_unstable_by(f64::total_cmp);
        for &r in ranks {
            out.insert(r, all[r - 1]);
        }
        return out;
    }
    let mut searches: Vec<Search> = ranks
        .iter()
        .map(|&r| Search { wanted: r, bucket: Bucket::ALL, rank: r, count: n, found: None })
        .collect();
    loop {
        let wide = |s: &Search| s.found.is_none() && s.count > COLLECT_AT_MOST;
        let to_narrow: Vec<Bucket> = distinct(searches.iter().filter(|s| wide(s)).map(|s| s.bucket));
        if to_narrow.is_empty() {
            break;
        }
        let counts = count_digits(values, &to_narrow);
        for s in searches.iter_mut().filter(|s| wide(s)) {
            let c = &counts[&s.bucket];
            if c.least == c.greatest {
                s.found = Some(value(c.least));
                continue;
            }
            let mut below = 0;
            for (digit, &in_digit) in c.per_digit.iter().enumerate() {
                if below + in_digit >= s.rank {
                    s.bucket = s.bucket.narrowed(digit);
                    s.rank -= below;
                    s.count = in_digit;
                    break;
                }
                below += in_digit;
            }
            if s.bucket.bits == 64 {
                s.found = Some(value(s.bucket.prefix));
            }
        }
    }
    let small: Vec<Bucket> = distinct(searches.iter().filter(|s| s.found.is_none()).map(|s| s.bucket));
    let mut collected: BTreeMap<Bucket, Vec<f64>> = small.iter().map(|b| (*b, Vec::new())).collect();
    if !small.is_empty() {
        values.each(&mut |v| {
            let k = key(v);
            for (b, held) in collected.iter_mut() {
                if b.holds(k) {
                    held.push(v);
                }
            }
        });
        collected.values_mut().for_each(|held| held.sort_unstable_by(f64::total_cmp));
    }
    for s in searches {
        let v = s.found.unwrap_or_else(|| collected[&s.bucket][s.rank - 1]);
        out.insert(s.wanted, v);
    }
    out
}

fn distinct(buckets: impl Iterator<Item = Bucket>) -> Vec<Bucket> {
    let mut all: Vec<Bucket> = buckets.collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// One visit: for each of `buckets`, its values counted per next digit.
fn count_digits(values: &(impl Ordered + ?Sized), buckets: &[Bucket]) -> BTreeMap<Bucket, Counts> {
    let mut counts: Vec<Counts> = buckets
        .iter()
        .map(|b| Counts { per_digit: vec![0; 1 << b.digit_bits()], least: u64::MAX, greatest: 0 })
        .collect();
    values.each(&mut |v| {
        let k = key(v);
        for (b, c) in buckets.iter().zip(counts.iter_mut()) {
            if b.holds(k) {
                c.per_digit[b.digit(k)] += 1;
                c.least = c.least.min(k);
                c.greatest = c.greatest.max(k);
            }
        }
    });
    buckets.iter().copied().zip(counts).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::SplitMix64;

    /// The sort-based answer.
    fn sorted_at(values: &[f64], ranks: &[usize]) -> BTreeMap<usize, f64> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        ranks.iter().map(|&r| (r, sorted[r - 1])).collect()
    }

    fn bits(m: &BTreeMap<usize, f64>) -> Vec<(usize, u64)> {
        m.iter().map(|(r, v)| (*r, v.to_bits())).collect()
    }

    /// Every rank of interest: the ends, the protocol's percentiles, and a spread.
    fn ranks_of(n: usize, rng: &mut SplitMix64) -> Vec<usize> {
        let mut ranks = vec![1, n, n / 2 + 1];
        ranks.extend([25, 50, 75, 90, 95, 99].map(|q| crate::stats::nearest_rank_index(q, n)));
        ranks.extend((0..8).map(|_| rng.index(n) + 1));
        ranks
    }

    #[test]
    fn equals_the_sort_on_seeded_random_samples_with_ties() {
        let mut rng = SplitMix64::new(0xA11CE);
        for trial in 0..24 {
            let n = [1, 7, COLLECT_AT_MOST, COLLECT_AT_MOST + 1, 5_000, 40_000][trial % 6];
            let mut uniform = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let values: Vec<f64> = (0..n)
                .map(|i| match trial % 4 {
                    // Latency-like: positive, a long tail.
                    0 => 1.0 + 20.0 * uniform().powi(4),
                    // Few distinct values: ties everywhere (token counts).
                    1 => (uniform() * 5.0).floor(),
                    // Signs, zeros of both signs, tiny and huge magnitudes.
                    2 => [-0.0, 0.0, -3.5, 1e-300, -1e300, 2.0][i % 6] * (1.0 + uniform()),
                    // Every value equal.
                    _ => 2.0,
                })
                .collect();
            let mut pick = SplitMix64::new(trial as u64);
            let ranks = ranks_of(n, &mut pick);
            assert_eq!(
                bits(&at_ranks(values.as_slice(), &ranks)),
                bits(&sorted_at(&values, &ranks)),
                "trial {trial}"
            );
        }
    }

    #[test]
    fn neighbouring_keys_part_only_in_the_last_bits() {
        // Values one ulp apart share every digit but the last.
        let base = 3.0f64.to_bits();
        let values: Vec<f64> =
            (0..3 * COLLECT_AT_MOST as u64).map(|i| f64::from_bits(base + i % 3)).collect();
        let ranks = [1, COLLECT_AT_MOST, COLLECT_AT_MOST + 1, 2 * COLLECT_AT_MOST + 1, 3 * COLLECT_AT_MOST];
        assert_eq!(bits(&at_ranks(values.as_slice(), &ranks)), bits(&sorted_at(&values, &ranks)));
    }

    #[test]
    fn nothing_asked_or_nothing_there() {
        assert!(at_ranks([1.0].as_slice(), &[]).is_empty());
        assert!(at_ranks([0.0; 0].as_slice(), &[1]).is_empty());
        assert_eq!(value(key(-2.5)), -2.5);
        assert!(key(-0.0) < key(0.0));
    }
}
