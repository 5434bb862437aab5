//! McNemar's exact test tested as a statistic: over seeded simulated arms
//! whose accuracies are known, how often it says "differs" when they are
//! equal (at most its stated `1 − level`, judged by the rate's
//! Clopper–Pearson upper bound), and how often when they are not (its
//! power, against the power computed exactly for the same model).

use anvil_quality::{Arm, PairedVerdict, paired};

use crate::sim::{Rate, Rng, binomial_pmf, rate, sign_rejects};

const LEVEL: f64 = 0.95;
const ALPHA: f64 = 1.0 - LEVEL;

/// How often each verdict came over `trials` simulated comparisons.
struct Verdicts {
    a_better: u64,
    b_better: u64,
    trials: u64,
}

/// Runs `trials` comparisons of the outcomes `simulate` draws.
fn run(trials: u64, mut simulate: impl FnMut(&mut Vec<(bool, bool)>)) -> Verdicts {
    let mut verdicts = Verdicts { a_better: 0, b_better: 0, trials };
    let mut outcomes = Vec::new();
    for _ in 0..trials {
        outcomes.clear();
        simulate(&mut outcomes);
        match paired(&outcomes, LEVEL).verdict {
            PairedVerdict::Differs { better: Arm::A } => verdicts.a_better += 1,
            PairedVerdict::Differs { better: Arm::B } => verdicts.b_better += 1,
            PairedVerdict::NoDifference | PairedVerdict::TooFewDiscordant => {}
        }
    }
    verdicts
}

/// Asserts that a model with equal accuracies says "differs" at most
/// `ALPHA` of the time, and names each arm at most `ALPHA / 2` of the
/// time, each judged by its Clopper–Pearson upper bound.
fn assert_within_level(name: &str, v: &Verdicts) -> Rate {
    let any = rate(&format!("{name}: false differs"), v.a_better + v.b_better, v.trials);
    let a = rate(&format!("{name}: false 'A better'"), v.a_better, v.trials);
    let b = rate(&format!("{name}: false 'B better'"), v.b_better, v.trials);
    assert!(any.high <= ALPHA, "{name}: false-difference rate {any:?} can exceed {ALPHA}");
    assert!(
        a.high <= ALPHA / 2.0 && b.high <= ALPHA / 2.0,
        "{name}: one side {a:?} {b:?} can exceed {}",
        ALPHA / 2.0
    );
    any
}

/// Two arms of accuracy 0.6 on 200 items of varied difficulty (each
/// item's chance uniform in [0.2, 1], drawn afresh each trial); given the
/// item, the arms answer independently, so they are correlated through
/// the item's difficulty.
#[test]
fn equal_arms_say_differs_within_the_level() {
    let mut rng = Rng::new(50_001);
    let v = run(6000, |out| {
        for _ in 0..200 {
            let p = 0.2 + 0.8 * rng.uniform();
            out.push((rng.chance(p), rng.chance(p)));
        }
    });
    assert_within_level("equal arms, varied items", &v);
}

/// The exact power of the test for arms answering independently with
/// accuracies `pa` and `pb` on `n` items: over the number of discordant
/// items m ~ Binomial(n, pa(1−pb) + pb(1−pa)) and A's share of them b ~
/// Binomial(m, π), the chance of a rejection, computed from probabilities
/// (no simulation) with the rejection region computed here.
fn exact_power(pa: f64, pb: f64, n: u64) -> f64 {
    let (only_a, only_b) = (pa * (1.0 - pb), pb * (1.0 - pa));
    let discordant = binomial_pmf(n, only_a + only_b);
    let pi = only_a / (only_a + only_b);
    (0..=n)
        .map(|m| {
            let split = binomial_pmf(m, pi);
            let reject: f64 = (0..=m).filter(|&b| sign_rejects(b, m, ALPHA)).map(|b| split[b as usize]).sum();
            discordant[m as usize] * reject
        })
        .sum()
}

/// Arms of accuracy 0.6 and 0.75, answering independently, on 200 items:
/// the simulated power agrees with the exact power (its interval holds
/// it), and that power, the floor a user can count on, is at least 0.8.
#[test]
fn power_at_a_stated_difference() {
    let floor = exact_power(0.6, 0.75, 200);
    println!("exact power, 0.6 against 0.75 on 200 items at {LEVEL}: {floor:.4}");
    assert!(floor >= 0.8, "200 items detect 0.6 against 0.75 only {floor:.3} of the time");
    let mut rng = Rng::new(50_002);
    let v = run(3000, |out| out.extend((0..200).map(|_| (rng.chance(0.6), rng.chance(0.75)))));
    let power = rate("power, 0.6 against 0.75 on 200 items", v.b_better, v.trials);
    assert!(power.low <= floor && floor <= power.high, "simulated power {power:?}, exact {floor}");
    let wrong = rate("power run: 'A better' (the worse arm)", v.a_better, v.trials);
    assert!(wrong.high <= ALPHA / 2.0, "{wrong:?}");
}

/// Assumptions broken: the same 200 items every trial, of widely
/// different difficulty (40% almost always right, 40% almost always
/// wrong, 20% a coin toss), and the arms strongly correlated (B gives A's
/// outcome 80% of the time, else answers on its own with the item's
/// chance): equal accuracies per item, few discordant items.
#[test]
fn extreme_difficulties_and_strong_correlation_hold_the_level() {
    let mut rng = Rng::new(50_003);
    let items: Vec<f64> = (0..200)
        .map(|_| match rng.uniform() {
            u if u < 0.4 => 0.98,
            u if u < 0.8 => 0.02,
            _ => 0.5,
        })
        .collect();
    let v = run(6000, |out| {
        for &p in &items {
            let a = rng.chance(p);
            let b = if rng.chance(0.8) { a } else { rng.chance(p) };
            out.push((a, b));
        }
    });
    assert_within_level("extreme difficulties, correlated arms", &v);
}

/// Assumptions broken the other way: equal overall accuracy (0.6) made
/// of opposite strengths, A at 0.9 and B at 0.3 on one half of the items
/// and the reverse on the other, the same items every trial. Equal
/// accuracies, so "differs" is false; the discordant items are many.
#[test]
fn opposite_strengths_that_cancel_hold_the_level() {
    let mut rng = Rng::new(50_004);
    let v = run(6000, |out| {
        for i in 0..200 {
            let (pa, pb) = if i % 2 == 0 { (0.9, 0.3) } else { (0.3, 0.9) };
            out.push((rng.chance(pa), rng.chance(pb)));
        }
    });
    assert_within_level("opposite strengths", &v);
}
