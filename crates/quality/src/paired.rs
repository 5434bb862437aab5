//! Two arms compared on the same questions: McNemar's exact test.
//!
//! Each item was answered by arm A and by arm B. The items both got right
//! or both got wrong say nothing about which arm is better; the discordant
//! ones do: `only_a` (A right, B wrong) and `only_b` (B right, A wrong).
//! When the arms are equally accurate, each discordant item is as likely
//! to fall either way, so given their number m = only_a + only_b, only_a
//! is Binomial(m, 1/2) — whatever the items' difficulties, and however
//! strongly the arms' answers are correlated. The test asks how unlikely
//! a split as lopsided as the one seen is under that binomial, summing its
//! exact probabilities ([`crate::pvalue::sign_test`]): no normal
//! approximation, so the chance of a false "differs" is at most
//! `1 − level` for every m, small ones included (it is below it where the
//! discrete binomial cannot reach the level exactly: conservative, never
//! anti-conservative).

use serde::Serialize;

use crate::accuracy::{Accuracy, accuracy, share_interval};
use crate::pvalue::{sign_test, sign_test_floor};

anvil_words::words! {
    #[serde]
    /// One of the two arms compared.
    pub enum Arm { A = "a", B = "b" }
}

/// What the paired comparison concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum PairedVerdict {
    /// The arms' accuracies differ, `better` answering more items right:
    /// when they are in truth equal, this verdict comes at most
    /// `1 − level` of the time (and names a given arm at most half that).
    Differs { better: Arm },
    /// No difference shown at the level (which is not a proof of none:
    /// [`Paired::difference`] bounds how large one could be).
    NoDifference,
    /// Fewer discordant items than the fewest that could show a difference
    /// at the level, however they split ([`Paired::fewest_discordant`]).
    TooFewDiscordant,
}

/// Two arms' outcomes on the same items, compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Paired {
    pub n: u64,
    pub a: Accuracy,
    pub b: Accuracy,
    /// Items A answered right and B wrong.
    pub only_a: u64,
    /// Items B answered right and A wrong.
    pub only_b: u64,
    /// McNemar's exact two-sided p-value.
    pub p_value: f64,
    pub level: f64,
    /// `1 − level`: the most often [`PairedVerdict::Differs`] comes when the
    /// arms are equally accurate.
    pub false_difference_rate: f64,
    /// The fewest discordant items whose most lopsided split reaches the
    /// level: below it the verdict is [`PairedVerdict::TooFewDiscordant`].
    pub fewest_discordant: u64,
    pub verdict: PairedVerdict,
    /// Of the discordant items, the share A got right
    /// (`only_a / (only_a + only_b)`): its Clopper–Pearson interval at
    /// `level`, [0, 1] with none. The test's own interval: it excludes 1/2
    /// exactly when the verdict is `Differs`, because the two-sided exact
    /// test with its tails doubled and the Clopper–Pearson interval are the
    /// same inversion of the binomial.
    pub a_of_discordant: (f64, f64),
    /// Accuracy of A minus accuracy of B: an exact, conservative interval
    /// at `level` (see [`paired`]). Wider than the test needs: it may hold 0
    /// when the verdict is `Differs`; the verdict follows the test.
    pub difference: (f64, f64),
}

/// Compares arm A and arm B on the same items: `(A right, B right)` per
/// item.
///
/// The difference of accuracies is Δ = P(A right, B wrong) − P(A wrong,
/// B right) = ψ·(2π − 1), with ψ the chance an item is discordant and π
/// the chance a discordant item is A's. Its interval is built from two
/// Clopper–Pearson intervals, each at `1 − (1 − level)/2`: ψ's from the
/// discordant count among n, π's from `only_a` among the discordant
/// (exact given their number, so exact overall). Both hold at once at
/// least `level` of the time (Bonferroni: the two misses add up to at most
/// `1 − level`), and whenever both hold, Δ lies between the least and the
/// most that ψ·(2π − 1) takes over the two intervals (at their corners,
/// since it is linear in each). Exact, so never narrower than it should be.
///
/// # Panics
/// When `level` is not strictly between 0 and 1.
pub fn paired(outcomes: &[(bool, bool)], level: f64) -> Paired {
    let a = accuracy(&outcomes.iter().map(|o| o.0).collect::<Vec<_>>(), level);
    let b = accuracy(&outcomes.iter().map(|o| o.1).collect::<Vec<_>>(), level);
    let only_a = outcomes.iter().filter(|&&(x, y)| x && !y).count() as u64;
    let only_b = outcomes.iter().filter(|&&(x, y)| !x && y).count() as u64;
    let discordant = only_a + only_b;
    let alpha = 1.0 - level;
    let p_value = sign_test(only_a, discordant);
    let fewest_discordant = (1..).find(|&m| sign_test_floor(m) <= alpha).unwrap_or(u64::MAX);
    let verdict = if discordant < fewest_discordant {
        PairedVerdict::TooFewDiscordant
    } else if p_value <= alpha {
        PairedVerdict::Differs { better: if only_a > only_b { Arm::A } else { Arm::B } }
    } else {
        PairedVerdict::NoDifference
    };
    let n = outcomes.len() as u64;
    Paired {
        n,
        a,
        b,
        only_a,
        only_b,
        p_value,
        level,
        false_difference_rate: alpha,
        fewest_discordant,
        verdict,
        a_of_discordant: share_interval(only_a, discordant, level),
        difference: difference_interval(only_a, discordant, n, level),
    }
}

/// The Bonferroni interval of Δ = ψ·(2π − 1) (see [`paired`]).
fn difference_interval(only_a: u64, discordant: u64, n: u64, level: f64) -> (f64, f64) {
    let half = 1.0 - (1.0 - level) / 2.0;
    let (psi_low, psi_high) = share_interval(discordant, n, half);
    let (pi_low, pi_high) = share_interval(only_a, discordant, half);
    let corners =
        [psi_low, psi_high].into_iter().flat_map(|psi| [pi_low, pi_high].map(|pi| psi * (2.0 * pi - 1.0)));
    corners.fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), d| (low.min(d), high.max(d)))
}

#[cfg(test)]
mod tests {
    use super::{Arm, PairedVerdict, paired};

    /// `both` items both right, `only_a`, `only_b`, and `neither`.
    fn items(both: usize, only_a: usize, only_b: usize, neither: usize) -> Vec<(bool, bool)> {
        [((true, true), both), ((true, false), only_a), ((false, true), only_b), ((false, false), neither)]
            .into_iter()
            .flat_map(|(o, k)| std::iter::repeat_n(o, k))
            .collect()
    }

    #[test]
    fn verdicts() {
        // 6 discordant all one way: p = 2/64 ≤ 0.05.
        let p = paired(&items(50, 6, 0, 44), 0.95);
        assert_eq!(p.verdict, PairedVerdict::Differs { better: Arm::A });
        assert_eq!(p.fewest_discordant, 6);
        assert!(p.a_of_discordant.0 > 0.5);
        // 5 discordant all one way: no split of 5 can reach 5% (2/32).
        let p = paired(&items(50, 0, 5, 45), 0.95);
        assert_eq!(p.verdict, PairedVerdict::TooFewDiscordant);
        // Balanced: no difference, and 1/2 inside the discordant interval.
        let p = paired(&items(50, 20, 22, 8), 0.95);
        assert_eq!(p.verdict, PairedVerdict::NoDifference);
        assert!(p.a_of_discordant.0 < 0.5 && p.a_of_discordant.1 > 0.5);
        assert!(p.difference.0 < 0.0 && p.difference.1 > 0.0);
        assert_eq!(p.a.correct, 70);
        assert_eq!(p.b.correct, 72);
        // 2 against 18: B better; the difference interval below 0.
        let p = paired(&items(100, 2, 18, 80), 0.95);
        assert_eq!(p.verdict, PairedVerdict::Differs { better: Arm::B });
        assert!(p.difference.1 < 0.0 && p.difference.0 > -1.0, "{:?}", p.difference);
        assert!(p.difference.0 <= -0.08 && p.difference.1 >= -0.08, "holds the observed −16/200");
    }

    #[test]
    fn interval_and_test_agree_on_every_split() {
        for m in 1..=60 {
            for only_a in 0..=m {
                let p = paired(&items(10, only_a, m - only_a, 10), 0.95);
                let excludes_half = p.a_of_discordant.0 > 0.5 || p.a_of_discordant.1 < 0.5;
                let differs = matches!(p.verdict, PairedVerdict::Differs { .. });
                assert_eq!(excludes_half, differs, "{only_a} of {m}: {p:?}");
            }
        }
    }

    #[test]
    fn nothing_to_compare() {
        let p = paired(&[], 0.95);
        assert_eq!(p.verdict, PairedVerdict::TooFewDiscordant);
        assert_eq!(p.difference, (-1.0, 1.0));
        let p = paired(&items(30, 0, 0, 10), 0.95);
        assert_eq!(p.verdict, PairedVerdict::TooFewDiscordant);
        assert!(p.difference.0 < 0.0 && p.difference.1 > 0.0 && p.difference.1 < 0.2);
    }
}
