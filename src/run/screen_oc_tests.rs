//! A screen's false-winner rate, tested as a statistic: variants that are
//! one distribution under different seeds, judged by the real screen over
//! intervals computed as artifacts compute them. A winner named among
//! equals is an error; the screen states 5%, and the upper end of the
//! Clopper–Pearson interval of its share is held to it.

use serde_json::{Map, Value, json};

use super::screen::run_screen;
use super::statistics_testing::{assert_within, exponential};

const VARIANTS: usize = 4;
const REQUESTS: usize = 200;
const TRIALS: u64 = 400;

fn metrics(samples: &[f64]) -> Value {
    let e = anvil_loadgen::estimate(
        samples,
        anvil_loadgen::Statistic::Percentile(50),
        anvil_loadgen::Level::NINETY_FIVE,
    )
    .expect("samples");
    json!({ "metrics": { "ttft_p50_ms": e.value, "ttft_p50_ci95_low_ms": e.low, "ttft_p50_ci95_high_ms": e.high } })
}

/// How many of `TRIALS` screens over equal variants named a winner; the
/// last variant's latencies scaled by `scale` (1.0: all equal), and how
/// many named that one.
fn winners(scale: f64) -> (u64, u64) {
    let mut text = String::from("server \"s\" { model \"m\"; }\n");
    for v in 1..=VARIANTS {
        text.push_str(&format!("cell \"v{v}\" server=\"s\" {{ requests 200; }}\n"));
    }
    text.push_str(
        "screen \"best\" { over \"cell.v*\"; metric \"metrics.ttft_p50_ms\"; goal \"minimize\"; confidence 0.95; }\n",
    );
    let screen = &crate::document::testing::screen(&text, "best");
    let (mut named, mut named_last) = (0, 0);
    for trial in 0..TRIALS {
        let mut cells = Map::new();
        for v in 1..=VARIANTS {
            let mut samples = exponential(trial * 31 + v as u64, REQUESTS);
            if v == VARIANTS {
                samples.iter_mut().for_each(|x| *x *= scale);
            }
            cells.insert(format!("v{v}"), metrics(&samples));
        }
        let result = run_screen(screen, &json!({ "cell": cells })).expect("screen judges").result;
        if let Some(winner) = result.get("winner").and_then(Value::as_str) {
            named += 1;
            named_last += u64::from(winner == format!("v{VARIANTS}"));
        }
    }
    (named, named_last)
}

/// Four equal variants: a winner named is a false one, at most 5% of the
/// time (even the upper end of the share's Clopper–Pearson interval).
/// Three equal and one 30% slower: the slow one is never named. Three
/// equal and one twice as fast (the p50 intervals of 200 requests are
/// about ±15%, and the leader must clear every other variant's): it is
/// named in a good share of screens, so the test sees winners where there
/// are some, and never another variant over it.
#[test]
fn among_equal_variants_a_screen_names_a_winner_no_more_than_stated() {
    let (named, _) = winners(1.0);
    assert_within(&format!("{VARIANTS} equal variants: a winner named"), named, TRIALS, 0.05);
    let (_, slow) = winners(1.3);
    assert_eq!(slow, 0, "the slowest variant was named the fastest");
    let (named, fast) = winners(0.5);
    eprintln!("one variant twice as fast: named in {fast}/{TRIALS}, another in {}", named - fast);
    assert_eq!(named, fast, "a variant equal to two others named over a faster one");
    assert!(fast > TRIALS / 4, "the faster variant named in only {fast}/{TRIALS}");
}
