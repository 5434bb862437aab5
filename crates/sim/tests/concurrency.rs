//! Continuous batching: more concurrent requests raise TTFT and lower each
//! request's decode rate. Relative comparisons only, never absolute times.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_raises_ttft_and_lowers_per_request_decode_rate() {
    let sim = start(&[
        ("decode-step-ms", "2"),
        ("decode-step-ms-per-seq", "0.6"),
        ("prefill-tok-s", "100000"),
        ("chunked-prefill-tokens", "4096"),
    ])
    .await;
    let alone = burst(&sim.base_url(), 1, 400, 60).await;
    let crowd = burst(&sim.base_url(), 16, 400, 60).await;

    let ttft = |t: &[StreamTiming]| mean(t.iter().map(|x| x.ttft.as_secs_f64()));
    let decode = |t: &[StreamTiming]| mean(t.iter().map(StreamTiming::decode_tok_s));
    // Model: C=1 steps take ~2.6 ms, C=16 ~11.6 ms, and 16 prompts of ~1000
    // tokens need several chunked-prefill steps: both effects are ~4x, the
    // assertions ask for much less.
    assert!(ttft(&crowd) > ttft(&alone) * 1.5, "ttft alone {:?} crowd {:?}", ttft(&alone), ttft(&crowd));
    assert!(
        decode(&crowd) < decode(&alone) / 1.5,
        "decode alone {} crowd {}",
        decode(&alone),
        decode(&crowd)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_batch_queues_the_rest() {
    let sim = start(&[("max-running-seqs", "2"), ("decode-step-ms", "3")]).await;
    let timings = burst(&sim.base_url(), 6, 10, 30).await;
    let mut ttfts: Vec<f64> = timings.iter().map(|t| t.ttft.as_secs_f64()).collect();
    ttfts.sort_by(f64::total_cmp);
    // The last pair waited for two whole generations to finish first.
    assert!(ttfts[5] > ttfts[0] * 3.0, "{ttfts:?}");
}

/// Prints TTFT and per-request decode rate of the default profile at
/// C = 1, 8, 64 (about 1000 prompt tokens, 256 output words). Run with
/// `cargo test -p anvil-sim --test main concurrency:: -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "prints a table; takes ~15 s"]
async fn default_profile_table() {
    let sim = start_profile(anvil_sim::SimProfile::default()).await;
    println!("{:>4} {:>14} {:>14} {:>20}", "C", "mean TTFT ms", "max TTFT ms", "mean decode tok/s");
    for concurrency in [1, 8, 64] {
        let timings = burst(&sim.base_url(), concurrency, 330, 256).await;
        let ttft = mean(timings.iter().map(|t| t.ttft.as_secs_f64() * 1000.0));
        let max_ttft = timings.iter().map(|t| t.ttft.as_secs_f64() * 1000.0).fold(0.0, f64::max);
        let decode = mean(timings.iter().map(StreamTiming::decode_tok_s));
        println!("{concurrency:>4} {ttft:>14.1} {max_ttft:>14.1} {decode:>20.1}");
    }
}
