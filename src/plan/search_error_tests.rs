//! The stated error of a search with `confidence`, tested as a statistic:
//! seeded searches over simulated servers whose true capacity is known
//! (a latency that grows with load, slowly enough near the capacity that
//! the probes just above it are within the noise), each probe judged by the real `judge`
//! over intervals from the load generator's own constructors. The share of
//! searches whose bound is above the capacity must have its upper 95%
//! Clopper–Pearson bound at or below the stated rate; bounds far below the
//! capacity (the price of the confidence) are counted apart and printed.
//! An undecided probe's extra repeats are emulated here by drawing more
//! requests into the same sample (the store-backed pooling is tested in
//! `tests/search.rs` and the evidence crate).

use anvil_loadgen::{Distribution, KeyStyle, write_distribution};
use anvil_store::Fingerprint;
use serde_json::{Map, Value, json};

use super::search::{Next, ProbeOutcome, ProbeVerdict, highest_pass, judge, stated_error, walk};
use crate::recipe::Spec;
use crate::recipe::decls::SearchDecl;
use crate::recipe::testing::load_text;

/// xorshift64*: the same draws on every machine.
struct Draws(u64);

impl Draws {
    fn new(seed: u64) -> Draws {
        Draws(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        (-2.0 * self.uniform().ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
    }
}

/// Requests per probe (and per extra repeat).
const REQUESTS: usize = 1000;
/// Searches per scenario.
const SEARCHES: u64 = 150;

/// Latencies grow with load as a queue's do (`1/(1 − load/100)`): far
/// below the capacity a probe passes clearly, while the probes just above
/// it differ from it by less than their intervals' width.
fn scale(load: f64) -> f64 {
    1.0 / (1.0 - load / 100.0)
}

/// A simulated server: the TTFTs of `REQUESTS` requests at `load`.
#[derive(Debug, Clone, Copy)]
enum Server {
    /// Independent exponential TTFTs of mean `100 · scale(load)` ms.
    Exponential,
    /// Pareto TTFTs (shape 2.5, a heavy tail), scale `100 · scale(load)`.
    HeavyTail,
    /// Log-normal TTFTs whose logs are an AR(1) series (each request's
    /// latency leans on the one before, coefficient 0.6).
    Correlated,
}

impl Server {
    fn ttfts(self, load: f64, draws: &mut Draws) -> Vec<f64> {
        let m = 100.0 * scale(load);
        let mut log = 0.0;
        (0..REQUESTS)
            .map(|_| match self {
                Server::Exponential => -m * draws.uniform().ln(),
                Server::HeavyTail => m * draws.uniform().powf(-1.0 / 2.5),
                Server::Correlated => {
                    log = 0.6 * log + 0.8 * draws.normal();
                    m * (0.5 * log).exp()
                }
            })
            .collect()
    }

    /// The true p90 and mean at `load`.
    fn truth(self, load: f64) -> (f64, f64) {
        let m = 100.0 * scale(load);
        match self {
            Server::Exponential => (m * 10f64.ln(), m),
            Server::HeavyTail => (m * 10f64.powf(1.0 / 2.5), m * 2.5 / 1.5),
            Server::Correlated => (m * (0.5 * 1.281_551_565_5f64).exp(), m * 0.125f64.exp()),
        }
    }
}

/// A probe's stored result as `judge` reads it, its TTFT block written by
/// the load generator's writer (intervals and all).
fn probe_result(ttfts: &[f64]) -> Value {
    let mut metrics = Map::new();
    write_distribution(&mut metrics, "ttft", KeyStyle::Millis, Distribution::of(ttfts).as_ref());
    json!({
        "schema": "test", "engine": "sim", "simulated": true,
        "completed": ttfts.len(), "failed": 0, "wall_clock_ms": 1.0,
        "repeats": {}, "metrics": metrics,
    })
}

/// Measure the probe at `load`, drawing more while it is undecided and
/// its extra repeats allow.
fn measure(search: &SearchDecl, server: Server, load: f64, seed: u64) -> ProbeOutcome {
    let fingerprint = Fingerprint::from(blake3::hash(&load.to_le_bytes()));
    let mut draws = Draws::new(seed ^ load.to_bits());
    let mut ttfts = server.ttfts(load, &mut draws);
    let mut outcome = judge(search, load, fingerprint, &probe_result(&ttfts)).expect("judged");
    for _ in 0..search.extra_repeats {
        if outcome.verdict != ProbeVerdict::Undecided {
            break;
        }
        ttfts.extend(server.ttfts(load, &mut draws));
        outcome = judge(search, load, fingerprint, &probe_result(&ttfts)).expect("judged");
    }
    outcome
}

/// One whole search: its bound and the probes it made.
fn search_once(search: &SearchDecl, server: Server, seed: u64) -> (Option<f64>, usize) {
    let mut made: Vec<ProbeOutcome> = Vec::new();
    loop {
        let walked =
            walk(search, |v| Ok::<_, ()>(made.iter().find(|p| p.value == v).cloned())).expect("walks");
        match walked.next {
            Next::Stop(_) => return (highest_pass(&walked.probes), walked.probes.len()),
            Next::Probe(load) => made.push(measure(search, server, load, seed)),
        }
    }
}

/// How a scenario's searches fared against the true capacity.
struct Tally {
    above: u64,
    far_below: u64,
    probes: usize,
}

/// `SEARCHES` seeded searches; the true capacity is where the SLO's
/// truth crosses its limits (`capacity`, found by the caller).
fn tally(search: &SearchDecl, server: Server, capacity: f64, far: f64) -> Tally {
    let mut tally = Tally { above: 0, far_below: 0, probes: 0 };
    for seed in 1..=SEARCHES {
        let (bound, probes) = search_once(search, server, seed);
        tally.probes += probes;
        match bound {
            Some(b) if b > capacity => tally.above += 1,
            Some(b) if b >= far => {}
            _ => tally.far_below += 1,
        }
    }
    tally
}

fn search(settings: &str) -> SearchDecl {
    let text = format!("server \"sim\"\nsearch \"s\" server=\"sim\" {{\n{settings}\n}}\n");
    let recipe = load_text(&text).expect("loads");
    let Spec::Search(search) = &recipe.step("s").expect("search").spec else { panic!("not a search") };
    search.clone()
}

/// The load at which `truth(load)` reaches `limit` (it grows with load).
fn crossing(limit: f64, truth: impl Fn(f64) -> f64) -> f64 {
    let (mut low, mut high) = (0.0, 99.0);
    for _ in 0..100 {
        let middle = (low + high) / 2.0;
        if truth(middle) <= limit { low = middle } else { high = middle }
    }
    low
}

/// Check a scenario: the error share's upper bound within the stated
/// rate; print the far-below share and the probes per search.
fn check(name: &str, search: &SearchDecl, server: Server, capacity: f64) -> Tally {
    let stated = stated_error(search).rate.expect("a stated rate");
    // Three precision steps (10% each) below the capacity or lower.
    let tally = tally(search, server, capacity, capacity / 1.331);
    let (lower, upper) = anvil_evidence::binomial::clopper_pearson(tally.above, SEARCHES, 0.95);
    eprintln!(
        "{name}: capacity {capacity:.2}, above {}/{SEARCHES} (CP {lower:.4}–{upper:.4}, stated {stated}), far below {}/{SEARCHES}, {:.1} probes per search",
        tally.above,
        tally.far_below,
        tally.probes as f64 / SEARCHES as f64
    );
    assert!(
        upper <= stated,
        "{name}: bound above the capacity in {}/{SEARCHES}, upper {upper} > {stated}",
        tally.above
    );
    tally
}

/// The capacity sits just below a step up (38.974): the step's point
/// value passes about half the time; judged over its interval, rarely.
const NEAR_STEP: f64 = 38.9;

fn p90_limit(server: Server) -> f64 {
    server.truth(NEAR_STEP).0
}

#[test]
fn a_bound_is_above_the_capacity_no_more_often_than_stated() {
    for server in [Server::Exponential, Server::HeavyTail, Server::Correlated] {
        let limit = p90_limit(server);
        let s = search(&format!(
            "variable \"rate\"\nrange 10 100\nprecision \"10%\"\nslo \"probe.ttft_p90_ms <= {limit}\"\nconfidence 0.95"
        ));
        assert_eq!(stated_error(&s).rate, Some(0.1));
        let capacity = crossing(limit, |load| server.truth(load).0);
        let tally = check(&format!("{server:?}"), &s, server, capacity);
        // Not every search refuses: most bounds are within three steps.
        assert!(tally.far_below < SEARCHES / 2, "far below in {}/{SEARCHES}", tally.far_below);
    }
}

/// Two requirements (a p90 and a mean, the mean binding first) and an
/// expression over two intervals; extra repeats add looks.
#[test]
fn several_requirements_two_intervals_and_extra_repeats() {
    let server = Server::Exponential;
    let (p90, _) = server.truth(NEAR_STEP);
    let mean = server.truth(30.0).1;
    let s = search(&format!(
        "variable \"rate\"\nrange 10 100\nslo \"probe.ttft_p90_ms <= {p90}\"\nslo \"probe.ttft_mean_ms <= {mean}\"\nconfidence 0.95"
    ));
    assert_eq!(stated_error(&s).rate, Some(0.1), "intersection-union: the worst expression's");
    check("two requirements", &s, server, crossing(mean, |l| server.truth(l).1));

    let sum = p90 + server.truth(NEAR_STEP).1;
    let s = search(&format!(
        "variable \"rate\"\nrange 10 100\nslo \"probe.ttft_p90_ms + probe.ttft_mean_ms <= {sum}\"\nconfidence 0.95\nextra-repeats 2"
    ));
    assert_eq!(stated_error(&s).rate, Some(0.6), "2 chances × 3 looks × 2 intervals × 5%");
    let tally = check("sum of two, 2 extra repeats", &s, server, NEAR_STEP);
    assert!(tally.far_below < SEARCHES / 2);
}

/// The harness can fail: the same searches judged on point values (and
/// bisecting) put the bound above the capacity far more often than 10%.
#[test]
fn point_values_overstate_the_capacity() {
    let server = Server::Exponential;
    let limit = p90_limit(server);
    let s = search(&format!(
        "variable \"rate\"\nrange 10 100\nprecision \"10%\"\nslo \"probe.ttft_p90_ms <= {limit}\""
    ));
    assert_eq!(stated_error(&s).rate, None);
    let tally = tally(&s, server, NEAR_STEP, NEAR_STEP / 1.331);
    let (lower, upper) = anvil_evidence::binomial::clopper_pearson(tally.above, SEARCHES, 0.95);
    eprintln!(
        "point values: above {}/{SEARCHES} (CP {lower:.4}–{upper:.4}), far below {}/{SEARCHES}, {:.1} probes per search",
        tally.above,
        tally.far_below,
        tally.probes as f64 / SEARCHES as f64
    );
    assert!(lower > 0.1, "point values above the capacity in only {}/{SEARCHES}", tally.above);
}

/// A probe whose server never kept up fails, whatever its latencies say:
/// it sent everything and saw it end, at a rate the server could not carry
/// (the artifact's `ending.drain`, carried by the stored result).
#[test]
fn a_probe_over_saturated_at_the_end_does_not_pass() {
    let s = search("variable \"rate\"\nrange 10 100\nslo \"probe.failed == 0\"\nconfidence 0.95");
    let fingerprint = Fingerprint::of_bytes(b"probe");
    let kept_up = probe_result(&[10.0; 60]);
    assert_eq!(judge(&s, 40.0, fingerprint, &kept_up).expect("judged").verdict, ProbeVerdict::Passed);
    let mut behind = kept_up;
    behind["over_saturated_at_end"] = json!({
        "over_saturated": true, "repeat": 0, "half": 30,
        "offered_rate_per_s": 40.0, "achieved_rate_per_s": 4.0, "achieved_rate_high_per_s": 4.5,
        "sojourn_p50_ms": [800.0, 6200.0],
    });
    let outcome = judge(&s, 40.0, fingerprint, &behind).expect("judged");
    assert_eq!(outcome.verdict, ProbeVerdict::Failed);
    assert!(outcome.details.iter().any(|d| d.contains("over-saturated at the end")), "{:?}", outcome.details);
}
