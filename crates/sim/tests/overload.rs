//! The sim under overload: Poisson arrivals through real HTTP below and above
//! the capacity `SimProfile::capacity_rps` computes, and `max-queue` rejections.

use std::time::{Duration, Instant};

use crate::common;
use crate::common::{StreamTiming, chat_stream, post_json, start_profile, time_stream};
use anvil_sim::SimProfile;
use serde_json::{Value, json};

const OUTPUT_TOKENS: u32 = 8;
const RUN_FOR: Duration = Duration::from_secs(4);

/// Steps of 5 ms plus 1 ms per decoding sequence and a batch of 4: a capacity
/// of a few dozen requests per second, so a run of seconds shows the trend.
fn overload_profile() -> SimProfile {
    let mut profile = SimProfile::default();
    for (key, value) in [
        ("decode-step-ms", "5"),
        ("decode-step-ms-per-seq", "1"),
        ("max-running-seqs", "4"),
        ("prefill-tok-s", "100000"),
        ("output-tokens", "8"),
        // Every request has the same prompt; no cache keeps them all uncached.
        ("prefix-cache", "false"),
    ] {
        profile.set(key, value).expect("valid key");
    }
    profile
}

fn request() -> Value {
    let mut body = chat_stream("Tell me about queues.");
    body["max_tokens"] = json!(OUTPUT_TOKENS);
    body
}

/// Exponential inter-arrival gaps from a fixed-seed xorshift generator.
struct PoissonGaps {
    state: u64,
    mean_s: f64,
}

impl PoissonGaps {
    fn next_gap(&mut self) -> Duration {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        let uniform = (self.state >> 11) as f64 / (1u64 << 53) as f64;
        Duration::from_secs_f64(-self.mean_s * (1.0 - uniform).ln())
    }
}

/// Send streamed requests at Poisson arrivals of `rate` per second for
/// `RUN_FOR`; return (scheduled send offset, timing) per request.
async fn drive(base_url: &str, rate: f64) -> Vec<(Duration, StreamTiming)> {
    let client = common::client();
    let mut gaps = PoissonGaps { state: 0x9e37_79b9_7f4a_7c15, mean_s: 1.0 / rate };
    let start = tokio::time::Instant::now();
    let mut at = Duration::ZERO;
    let mut tasks = Vec::new();
    while at < RUN_FOR {
        tokio::time::sleep_until(start + at).await;
        let (client, base_url, sent_at) = (client.clone(), base_url.to_owned(), at);
        tasks.push(tokio::spawn(async move { (sent_at, time_stream(&client, &base_url, &request()).await) }));
        at += gaps.next_gap();
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.expect("request task"));
    }
    results
}

fn median_ttft_ms(timings: &[&StreamTiming]) -> f64 {
    let mut ms: Vec<f64> = timings.iter().map(|t| t.ttft.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

/// Median TTFT of the requests sent in the first and in the last quarter of the run.
fn early_and_late_ttft_ms(results: &[(Duration, StreamTiming)]) -> (f64, f64) {
    let quarter = RUN_FOR / 4;
    let early: Vec<_> = results.iter().filter(|(at, _)| *at < quarter).map(|(_, t)| t).collect();
    let late: Vec<_> = results.iter().filter(|(at, _)| *at >= RUN_FOR - quarter).map(|(_, t)| t).collect();
    (median_ttft_ms(&early), median_ttft_ms(&late))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_stays_bounded_below_capacity_and_climbs_above_it() {
    let profile = overload_profile();
    let sim = start_profile(profile.clone()).await;
    // The prompt's token count as the sim counts it (the chat template adds some).
    let mut probe = request();
    probe["stream"] = json!(false);
    probe.as_object_mut().expect("object").remove("stream_options");
    let (status, reply) = post_json(&sim, "/v1/chat/completions", &probe).await;
    assert_eq!(status, 200, "{reply}");
    let prompt_tokens = reply["usage"]["prompt_tokens"].as_u64().expect("usage") as u32;
    assert_eq!(reply["usage"]["completion_tokens"], json!(OUTPUT_TOKENS));
    let capacity = profile.capacity_rps(prompt_tokens, OUTPUT_TOKENS);

    let below = drive(&sim.base_url(), 0.8 * capacity).await;
    let (below_early, below_late) = early_and_late_ttft_ms(&below);
    let above = drive(&sim.base_url(), 1.3 * capacity).await;
    let (above_early, above_late) = early_and_late_ttft_ms(&above);
    // Saturated from its first second, the overloaded run is served at the capacity.
    let last_done = above.iter().map(|(at, t)| *at + t.e2e).max().expect("some requests");
    let served_rps = above.len() as f64 / last_done.as_secs_f64();
    eprintln!(
        "capacity {capacity:.1} req/s, served at 1.3x {served_rps:.1} req/s; median TTFT first/last \
         quarter: 0.8x {below_early:.1}/{below_late:.1} ms, 1.3x {above_early:.1}/{above_late:.1} ms"
    );
    assert!(
        (served_rps / capacity - 1.0).abs() < 0.2,
        "served {served_rps:.1} req/s vs capacity {capacity:.1}"
    );
    // Over 3 s at 1.3x, the queue gains 0.3 × capacity × 3 s requests, which
    // the batch drains at `capacity`: the late wait is ~0.9 s longer.
    assert!(above_late > above_early + 400.0, "TTFT did not climb above capacity");
    assert!(below_late < below_early + 150.0, "TTFT grew below capacity");
    sim.shutdown().await.expect("sim stops");
}

/// Send `n` streamed requests at once; return the status of each.
async fn burst_statuses(base_url: &str, n: usize) -> Vec<(u16, String)> {
    let client = common::client();
    let mut tasks = Vec::new();
    for _ in 0..n {
        let (client, url) = (client.clone(), format!("{base_url}/v1/chat/completions"));
        tasks.push(tokio::spawn(async move {
            let response = client.post(url).json(&request()).send().await.expect("request sent");
            let status = response.status().as_u16();
            (status, response.text().await.expect("body"))
        }));
        // One at a time, so each sees the queue the previous ones left.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.expect("request task"));
    }
    statuses
}

#[tokio::test]
async fn max_queue_rejects_with_the_overload_status_and_serves_the_rest() {
    for (status_setting, expected, error_type) in
        [("429", 429, "rate_limit_error"), ("503", 503, "service_unavailable_error")]
    {
        let mut profile = overload_profile();
        profile.set("max-running-seqs", "1").expect("valid");
        profile.set("decode-step-ms", "50").expect("valid");
        profile.set("max-queue", "2").expect("valid");
        profile.set("overload-status", status_setting).expect("valid");
        let sim = start_profile(profile).await;
        let started = Instant::now();
        let replies = burst_statuses(&sim.base_url(), 8).await;
        let served = replies.iter().filter(|(status, _)| *status == 200).count();
        let rejected: Vec<_> = replies.iter().filter(|(status, _)| *status == expected).collect();
        // One runs, two wait; the other five find the queue full.
        assert_eq!(served, 3, "{replies:?}");
        assert_eq!(rejected.len(), 5, "{replies:?}");
        let body: Value = serde_json::from_str(&rejected[0].1).expect("JSON error body");
        assert_eq!(body["error"]["type"], json!(error_type));
        assert!(body["error"]["message"].as_str().unwrap_or("").contains("max-queue 2"), "{body}");
        eprintln!("max-queue burst took {:?}", started.elapsed());
        sim.shutdown().await.expect("sim stops");
    }
    let mut profile = SimProfile::default();
    let error = profile.set("overload-status", "500").expect_err("500 is not an overload status");
    assert!(error.to_string().contains("429 or 503"), "{error}");
}
