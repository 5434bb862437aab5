//! `accuracy-not-worse` tested as a statistic, through the code a gate
//! runs (answers paired by item, `arms::not_worse`, the verdict's rule):
//! seeded simulated arms on 200 items of varied difficulty, the control
//! right with the item's chance d ~ U[0.2, 1] (accuracy 0.6), the arm
//! with d − δ, each given the item independently (so the two are
//! correlated through the item). Its `passed` may be wrong only when the
//! arm is worse than the margin, its `rejected` only when it is not
//! worse; each error rate, with its 99% Clopper–Pearson upper bound, is
//! held to the stated 5%.

use anvil_loadgen::Answer;

use super::arms::{Arm, not_worse};
use super::requirement::not_worse_verdict;
use crate::results::{AnswerLine, EvalStatus};

const MARGIN: f64 = 0.05;
const ITEMS: usize = 200;
const TRIALS: u64 = 2000;

/// SplitMix64, seeded: the same draws on every run.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn line(item: usize, correct: bool) -> AnswerLine {
    AnswerLine {
        answer: Answer {
            request_index: item as u64,
            repeat: 0,
            item: Some(format!("q{item}")),
            prompt_blake3: String::new(),
            text: String::new(),
            token_ids: None,
            text_blake3: String::new(),
            complete: true,
            truncated: false,
            finish_reason: None,
            simulated: true,
        },
        correct: Some(correct),
        extracted: None,
    }
}

/// The verdicts of `TRIALS` comparisons with the arm `delta` below the control.
fn verdicts(seed: u64, delta: f64) -> (u64, u64) {
    let mut rng = Rng(seed);
    let (mut passed, mut rejected) = (0, 0);
    for _ in 0..TRIALS {
        let (mut arm, mut control) = (Vec::with_capacity(ITEMS), Vec::with_capacity(ITEMS));
        for item in 0..ITEMS {
            let chance = 0.2 + 0.8 * rng.uniform();
            control.push(line(item, rng.uniform() < chance));
            arm.push(line(item, rng.uniform() < chance - delta));
        }
        let found =
            not_worse(&Arm { name: "arm", lines: &arm }, &Arm { name: "ctl", lines: &control }, 0.95, MARGIN);
        match not_worse_verdict(&found).0 {
            EvalStatus::Passed => passed += 1,
            EvalStatus::Rejected => rejected += 1,
            _ => {}
        }
    }
    (passed, rejected)
}

/// The 99% upper bound of `k` of `n`, printed with the count
/// (`cargo test --lib quality:: -- --nocapture`).
fn upper(what: &str, k: u64, n: u64) -> f64 {
    let high = anvil_quality::share_interval(k, n, 0.99).1;
    eprintln!("{what}: {k} of {n} (99% upper bound {high:.4})");
    high
}

#[test]
fn passed_is_rarely_wrong_when_the_arm_is_worse_than_the_margin() {
    // 0.08 below: `passed` ("at most 0.05 below") is false.
    let (passed, _) = verdicts(50_101, 0.08);
    assert!(upper("0.08 below: passed", passed, TRIALS) <= 0.05, "falsely passed {passed} of {TRIALS}");
    // Just past the margin, where a false pass is likeliest.
    let (passed, _) = verdicts(50_102, MARGIN + 0.005);
    let what = "0.055 below: passed";
    assert!(upper(what, passed, TRIALS) <= 0.05, "falsely passed {passed} of {TRIALS} just past the margin");
}

#[test]
fn rejected_is_rarely_wrong_when_the_arms_are_equal_and_passes_come_with_enough_items() {
    let (passed, rejected) = verdicts(50_201, 0.0);
    assert!(upper("equal: rejected", rejected, TRIALS) <= 0.05, "falsely rejected {rejected} of {TRIALS}");
    upper("equal: passed (not an error)", passed, TRIALS);
    // Not a bound: what 200 items buy at this margin (the interval of the
    // difference is about ±0.1 wide), so `undecided` is the common answer.
    assert!(passed < TRIALS, "{passed} of {TRIALS} passed");
    // A truly better arm is never rejected.
    let (_, rejected) = verdicts(50_202, -0.1);
    assert_eq!(rejected, 0);
}
