//! Attribution tested as a statistic: an arm that adds no divergence of
//! its own, measured on the same prompts as the control's rerun (so both
//! diverge on the same fragile prompts: the correlation the test's
//! documentation argues makes Fisher's test conservative), is said to
//! exceed the engine's nondeterminism at most `1 − level` of the time;
//! an arm that adds divergence is caught.

use anvil_quality::{Cause, Output, attribute, identical_share};

use crate::sim::{Rng, rate};

const LEVEL: f64 = 0.95;

/// One trial: 200 prompts, a tenth of them fragile (each diverges with
/// chance 0.5 in any run but the first, the control's), the rest
/// diverging with chance `base`; the arm also diverges with chance
/// `added` on any prompt. The cause the arm's divergence is given.
fn trial(rng: &mut Rng, base: f64, added: f64) -> Cause {
    let same = Output { text: "42".into(), token_ids: Some(vec![4, 2]) };
    let other = Output { text: "43".into(), token_ids: Some(vec![4, 3]) };
    let (mut arm, mut rerun) = (Vec::new(), Vec::new());
    for i in 0..200 {
        let fragility = if i % 10 == 0 { 0.5 } else { base };
        let pick = |diverges: bool| if diverges { &other } else { &same };
        arm.push(("p", &same, pick(rng.chance(fragility) || rng.chance(added))));
        rerun.push(("p", &same, pick(rng.chance(fragility))));
    }
    attribute(&identical_share(&arm, LEVEL), &identical_share(&rerun, LEVEL)).cause
}

#[test]
fn an_arm_adding_nothing_is_rarely_blamed() {
    let mut rng = Rng::new(50_020);
    let trials = 4000;
    let blamed = (0..trials).filter(|_| trial(&mut rng, 0.01, 0.0) == Cause::ExceedsNondeterminism).count();
    let r = rate("attribution: arm adding nothing said to exceed", blamed as u64, trials);
    assert!(r.high <= 1.0 - LEVEL, "{r:?}");
}

#[test]
fn an_arm_adding_divergence_is_caught() {
    let mut rng = Rng::new(50_021);
    let trials = 1000;
    let caught = (0..trials).filter(|_| trial(&mut rng, 0.01, 0.10) == Cause::ExceedsNondeterminism).count();
    let r = rate("attribution: arm adding 10% divergence said to exceed", caught as u64, trials);
    assert!(r.low >= 0.5, "{r:?}");
}
