//! Arithmetic word problems whose answers are known by construction: the
//! dataset anvil ships (`datasets/arith-v1.jsonl`, [`ARITH_V1_SEED`],
//! [`ARITH_V1_ITEMS`]), so that scoring needs no download.
//!
//! Each problem is built from its numbers, and its answer computed from
//! them, never read back from text. The kinds run from one-step sums of
//! small numbers that a 135M model sometimes gets right to three-step
//! problems that a 1B model often gets wrong, in a fixed cycle of ten
//! (three `add`, two `sub`, one each of `mul`, `div`, `sum3`, `two-step`
//! and `three-step`), so any 10 consecutive items hold the same mix and
//! accuracy is neither 0 nor 1. Every answer is a non-negative integer;
//! the number scorer reads it.

use crate::item::{Item, Scorer};

/// The seed of the shipped dataset.
pub const ARITH_V1_SEED: u64 = 0x2026_0050;
/// The items of the shipped dataset.
pub const ARITH_V1_ITEMS: usize = 200;

/// What each prompt asks after its problem.
pub const ARITH_INSTRUCTION: &str = "Give the final answer as a number.";

/// The kinds, in the order they cycle.
const CYCLE: [Kind; 10] = [
    Kind::Add,
    Kind::Sub,
    Kind::Mul,
    Kind::Add,
    Kind::TwoStep,
    Kind::Sub,
    Kind::Div,
    Kind::Add,
    Kind::Sum3,
    Kind::ThreeStep,
];

#[derive(Debug, Clone, Copy)]
enum Kind {
    Add,
    Sub,
    Mul,
    Div,
    Sum3,
    TwoStep,
    ThreeStep,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Add => "add",
            Kind::Sub => "sub",
            Kind::Mul => "mul",
            Kind::Div => "div",
            Kind::Sum3 => "sum3",
            Kind::TwoStep => "two-step",
            Kind::ThreeStep => "three-step",
        }
    }
}

const NAMES: [&str; 12] =
    ["Ana", "Ben", "Chloe", "Dev", "Emma", "Felix", "Grace", "Hugo", "Iris", "Jon", "Kira", "Liam"];
const THINGS: [&str; 10] =
    ["apples", "marbles", "stickers", "pencils", "cookies", "books", "coins", "cards", "shells", "balloons"];

/// `n` problems from `seed`: the same seed and `n` give the same items,
/// and the first `k` of `n` are the items of `generate_arith(seed, k)`.
/// Ids are `arith-<index from 1, three digits>-<kind>`.
pub fn generate_arith(seed: u64, n: usize) -> Vec<Item> {
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|i| {
            let kind = CYCLE[i % CYCLE.len()];
            let (question, answer) = problem(kind, &mut rng);
            Item {
                id: format!("arith-{:03}-{}", i + 1, kind.word()),
                prompt: format!("{question} {ARITH_INSTRUCTION}"),
                reference: answer.to_string(),
                scorer: Scorer::Number,
            }
        })
        .collect()
}

/// One problem of `kind`, and its answer.
fn problem(kind: Kind, rng: &mut SplitMix64) -> (String, u64) {
    let name = NAMES[rng.below(NAMES.len() as u64) as usize];
    let things = THINGS[rng.below(THINGS.len() as u64) as usize];
    match kind {
        Kind::Add => {
            let (a, b) = (rng.between(2, 20), rng.between(2, 20));
            (
                format!(
                    "{name} has {a} {things}. {name} gets {b} more. How many {things} does {name} have now?"
                ),
                a + b,
            )
        }
        Kind::Sub => {
            let a = rng.between(12, 60);
            let b = rng.between(2, a - 2);
            let q = format!(
                "{name} had {a} {things} and gave {b} of them away. How many {things} does {name} have left?"
            );
            (q, a - b)
        }
        Kind::Mul => {
            let (a, b) = (rng.between(3, 12), rng.between(2, 9));
            (format!("A box holds {a} {things}. How many {things} are in {b} boxes?"), a * b)
        }
        Kind::Div => {
            let (each, kids) = (rng.between(2, 12), rng.between(2, 8));
            let total = each * kids;
            (
                format!(
                    "{name} shares {total} {things} equally among {kids} friends. How many {things} does each friend get?"
                ),
                each,
            )
        }
        Kind::Sum3 => {
            let (a, b, c) = (rng.between(11, 99), rng.between(11, 99), rng.between(11, 99));
            let q = format!(
                "{name} collected {a} {things} on Monday, {b} on Tuesday and {c} on Wednesday. How many {things} did {name} collect in total?"
            );
            (q, a + b + c)
        }
        Kind::TwoStep => {
            let (packs, each) = (rng.between(2, 9), rng.between(3, 12));
            let gone = rng.between(1, packs * each - 1);
            let q = format!(
                "{name} buys {packs} packs of {things} with {each} {things} in each pack, then gives away {gone}. How many {things} does {name} have left?"
            );
            (q, packs * each - gone)
        }
        Kind::ThreeStep => {
            let (start, bags, each) = (rng.between(5, 40), rng.between(2, 6), rng.between(4, 15));
            let lost = rng.between(1, start + bags * each - 1);
            let q = format!(
                "{name} has {start} {things}. {name} buys {bags} bags with {each} {things} in each bag, then loses {lost} {things}. How many {things} does {name} have now?"
            );
            (q, start + bags * each - lost)
        }
    }
}

/// SplitMix64 (Steele, Lea & Flood, 2014): a tiny generator whose output
/// is fixed by its definition, so the shipped dataset never changes with a
/// dependency's version.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (the tiny modulo bias of n ≪ 2⁶⁴ is of no matter here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `low..=high`.
    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::{ARITH_V1_ITEMS, ARITH_V1_SEED, generate_arith};
    use crate::dataset::{read_anvil, write_anvil};
    use crate::score::score;

    #[test]
    fn the_shipped_file_is_the_generators_output() {
        let shipped = include_str!("../../../datasets/arith-v1.jsonl");
        let generated = write_anvil(&generate_arith(ARITH_V1_SEED, ARITH_V1_ITEMS));
        assert!(
            shipped == generated,
            "datasets/arith-v1.jsonl differs from generate_arith(ARITH_V1_SEED, {ARITH_V1_ITEMS}); \
             to ship the generator's: ANVIL_WRITE_ARITH=1 cargo test -p anvil-quality arith"
        );
        assert_eq!(read_anvil(shipped).expect("the shipped file reads").len(), ARITH_V1_ITEMS);
    }

    /// Writes the shipped file from the generator when `ANVIL_WRITE_ARITH`
    /// is set (after a deliberate change to the generator).
    #[test]
    fn write_the_shipped_file_when_asked() {
        if std::env::var_os("ANVIL_WRITE_ARITH").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/arith-v1.jsonl");
            std::fs::write(path, write_anvil(&generate_arith(ARITH_V1_SEED, ARITH_V1_ITEMS)))
                .expect("writing");
        }
    }

    #[test]
    fn deterministic_prefix_stable_and_unique() {
        let items = generate_arith(7, 50);
        assert_eq!(items, generate_arith(7, 50));
        assert_eq!(items[..20], generate_arith(7, 20)[..]);
        assert_ne!(items, generate_arith(8, 50));
        let mut prompts: Vec<_> = items.iter().map(|i| &i.prompt).collect();
        prompts.sort();
        prompts.dedup();
        assert_eq!(prompts.len(), 50, "no repeated problem");
    }

    #[test]
    fn a_stated_answer_scores_right_and_a_neighbour_wrong() {
        for item in generate_arith(ARITH_V1_SEED, ARITH_V1_ITEMS) {
            let answer: u64 = item.reference.parse().expect("a non-negative integer");
            assert!(score(&item, &format!("Let me think. The answer is {answer}.")).correct, "{item:?}");
            assert!(!score(&item, &format!("{}", answer + 1)).correct, "{item:?}");
        }
    }

    /// Each answer again, from the numbers of its question's text, in the
    /// order the kind's sentence states them.
    #[test]
    fn the_answers_follow_from_the_questions_text() {
        let items = generate_arith(ARITH_V1_SEED, ARITH_V1_ITEMS);
        for item in &items {
            let n: Vec<u64> = item
                .prompt
                .split(|c: char| !c.is_ascii_digit())
                .filter(|w| !w.is_empty())
                .map(|w| w.parse().expect("digits"))
                .collect();
            let kind = item.id.splitn(3, '-').nth(2).expect("a kind");
            let answer = match (kind, n.as_slice()) {
                ("add", [a, b]) => a + b,
                ("sub", [a, b]) => a - b,
                ("mul", [a, b]) => a * b,
                ("div", [total, kids]) => {
                    assert_eq!(total % kids, 0, "{item:?}");
                    total / kids
                }
                ("sum3", [a, b, c]) => a + b + c,
                ("two-step", [packs, each, gone]) => packs * each - gone,
                ("three-step", [start, bags, each, lost]) => start + bags * each - lost,
                other => panic!("{other:?} in {item:?}"),
            };
            assert_eq!(item.reference, answer.to_string(), "{item:?}");
        }
        let mut prompts: Vec<_> = items.iter().map(|i| &i.prompt).collect();
        prompts.sort();
        prompts.dedup();
        assert_eq!(prompts.len(), ARITH_V1_ITEMS, "no repeated problem");
    }
}
