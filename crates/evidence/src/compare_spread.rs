//! The comparison's error rates, measured: two sides of one configuration
//! (and of two), each measured in R repeats whose latencies share a
//! run-to-run offset, judged across repeats ([`compare_across_repeats`])
//! and, as before, by the within-run bootstrap of the pooled requests
//! ([`compare_finite`]).

use super::*;
use crate::bootstrap::SplitMix64;

/// Seeded standard normal draws (SplitMix64, Box–Muller: both of a pair used).
struct Normal(SplitMix64, Option<f64>);

impl Normal {
    fn new(seed: u64) -> Self {
        Self(SplitMix64::new(seed), None)
    }

    fn uniform(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn draw(&mut self) -> f64 {
        if let Some(z) = self.1.take() {
            return z;
        }
        let (u, v) = (1.0 - self.uniform(), self.uniform());
        let (r, angle) = ((-2.0 * u.ln()).sqrt(), std::f64::consts::TAU * v);
        self.1 = Some(r * angle.sin());
        r * angle.cos()
    }
}

/// A simulated setting: each side `repeats` runs of `n` requests, each
/// run's latencies lognormal (median 100 ms, log-sd `sigma`) times the
/// run's offset exp(`spread`·Z) (Z standard normal, one per run), side B's
/// also times `truth` (its true ratio to A). Where assumptions break:
/// `heavy` draws Z from a Student t with 3 degrees of freedom scaled to
/// unit variance (rare runs far off), and `phi` makes each run's log-noise
/// an AR(1) series with that lag-one correlation (neighbouring requests alike).
#[derive(Debug, Clone, Copy)]
struct Setting {
    repeats: usize,
    n: usize,
    sigma: f64,
    spread: f64,
    truth: f64,
    heavy: bool,
    phi: f64,
}

impl Setting {
    fn side(&self, rng: &mut Normal, scale: f64) -> Vec<Vec<f64>> {
        (0..self.repeats)
            .map(|_| {
                let z = if self.heavy {
                    let chi2: f64 = (0..3).map(|_| rng.draw().powi(2)).sum();
                    rng.draw() / (chi2 / 3.0).sqrt() / 3f64.sqrt()
                } else {
                    rng.draw()
                };
                let offset = scale * (self.spread * z).exp();
                let mut noise = self.sigma * rng.draw();
                (0..self.n)
                    .map(|_| {
                        let value = offset * 100.0 * noise.exp();
                        noise = self.phi * noise + (1.0 - self.phi.powi(2)).sqrt() * self.sigma * rng.draw();
                        value
                    })
                    .collect()
            })
            .collect()
    }
}

/// Counts over trials of one procedure's intervals: misses of the true
/// ratio (interval wholly below, wholly above), and the verdicts at each band.
#[derive(Debug, Default, Clone)]
struct Tally {
    trials: u32,
    /// Interval wholly below / above the true ratio.
    missed: [u32; 2],
    /// Per band: [reproduced, differs with B faster (below the band), differs with B slower (above), inconclusive].
    verdicts: Vec<[u32; 4]>,
}

impl Tally {
    fn add(&mut self, low: f64, high: f64, truth: f64, bands: &[f64]) {
        self.trials += 1;
        self.verdicts.resize(bands.len(), [0; 4]);
        if high < truth {
            self.missed[0] += 1;
        } else if low > truth {
            self.missed[1] += 1;
        }
        for (i, &t) in bands.iter().enumerate() {
            let slot = match band_verdict(low, high, t).0 {
                Verdict::Reproduced => 0,
                Verdict::Differs if high < 1.0 - t => 1,
                Verdict::Differs => 2,
                Verdict::Inconclusive => 3,
            };
            self.verdicts[i][slot] += 1;
        }
    }

    fn differs(&self, band: usize) -> u32 {
        self.verdicts[band][1] + self.verdicts[band][2]
    }

    fn reproduced(&self, band: usize) -> u32 {
        self.verdicts[band][0]
    }

    fn share(&self, k: u32) -> String {
        let (lo, hi) = cp(k, self.trials);
        format!("{k}/{} = {:.3} [CP {lo:.3}, {hi:.3}]", self.trials, f64::from(k) / f64::from(self.trials))
    }

    fn words(&self, bands: &[f64]) -> String {
        let mut out = format!(
            "missed the truth {} (below {}, above {})",
            self.share(self.missed[0] + self.missed[1]),
            self.missed[0],
            self.missed[1]
        );
        for (i, t) in bands.iter().enumerate() {
            let v = self.verdicts[i];
            out.push_str(&format!(
                "; ±{:.0}%: differs {} (B faster {}, B slower {}), reproduced {}",
                t * 100.0,
                self.share(self.differs(i)),
                v[1],
                v[2],
                self.share(v[0]),
            ));
        }
        out
    }
}

/// `trials` seeded trials of `setting`, each judged for every statistic of
/// `stats` from the same draws: across repeats in every trial (with 2
/// repeats or more), and for the first `old_stats` statistics by the
/// pooled within-run bootstrap (200 resamples) in the first `old_trials`
/// (it resamples every request). One (across, pooled) pair of tallies per
/// statistic.
fn simulate(
    setting: Setting,
    (stats, old_stats): (&[Statistic], usize),
    (trials, old_trials): (u32, u32),
    bands: &[f64],
    seed: u64,
) -> Vec<(Tally, Tally)> {
    let mut rng = Normal::new(seed);
    let opts = CompareOptions { resamples: 200, seed, ..CompareOptions::default() };
    let mut out = vec![(Tally::default(), Tally::default()); stats.len()];
    for trial in 0..trials {
        let a = setting.side(&mut rng, 1.0);
        let b = setting.side(&mut rng, setting.truth);
        let (pa, pb) = if trial < old_trials { (a.concat(), b.concat()) } else { (Vec::new(), Vec::new()) };
        for (i, (&stat, (new, old))) in stats.iter().zip(&mut out).enumerate() {
            let per_repeat = |side: &[Vec<f64>]| -> Vec<RepeatStat> {
                side.iter()
                    .map(|run| RepeatStat { samples: run.len(), value: stat.of(&mut run.clone()).unwrap() })
                    .collect()
            };
            if setting.repeats >= 2 {
                let row = compare_across_repeats("m", stat, &per_repeat(&a), &per_repeat(&b), &opts)
                    .expect("both sides repeated, with enough samples");
                assert_eq!(row.spread, Spread::AcrossRepeats);
                new.add(row.ci_low.unwrap(), row.ci_high.unwrap(), setting.truth, bands);
            }
            if trial < old_trials && i < old_stats {
                let opts = CompareOptions { seed: seed ^ u64::from(trial), ..opts.clone() };
                let row = compare_finite("m", stat, &pa, &pb, &opts);
                old.add(row.ci_low.unwrap(), row.ci_high.unwrap(), setting.truth, bands);
            }
        }
    }
    out
}

const P50: Statistic = Statistic::Percentile(50);
const P95: Statistic = Statistic::Percentile(95);

#[test]
#[ignore = "exploration: prints the rates of many settings (release: about a minute)"]
fn explore_the_rates() {
    let bands = [0.05, 0.10, 0.20];
    let print = |setting: Setting, tallies: &[(Tally, Tally)]| {
        for (stat, (new, old)) in [P50, P95].iter().zip(tallies) {
            eprintln!(
                "R={} n={} {} truth {}:\n  across: {}\n  pooled: {}",
                setting.repeats,
                setting.n,
                stat.label(),
                setting.truth,
                if new.trials > 0 { new.words(&bands) } else { "-".into() },
                if old.trials > 0 { old.words(&bands) } else { "-".into() }
            );
        }
    };
    // One run a side, many requests: the estimate (about a quarter at ±5%).
    for n in [300, 3000] {
        let setting =
            Setting { repeats: 1, n, sigma: 0.25, spread: 0.03, truth: 1.0, heavy: false, phi: 0.0 };
        print(setting, &simulate(setting, (&[P50, P95], 2), (400, 400), &bands, 11));
    }
    for repeats in [2, 3, 5] {
        for truth in [1.0, 1.04, 1.045, 1.08, 1.09, 1.3] {
            let setting =
                Setting { repeats, n: 300, sigma: 0.25, spread: 0.03, truth, heavy: false, phi: 0.0 };
            print(setting, &simulate(setting, (&[P50, P95], 2), (2000, 300), &bands, 7));
        }
    }
}

/// The bands judged: ±5%, ±10%, ±20%.
const BANDS: [f64; 3] = [0.05, 0.10, 0.20];

/// 300 requests a run, latencies lognormal with log-sd 0.25, each run
/// offset by a lognormal factor of log-sd 0.03 (a 3% run-to-run spread).
fn setting(repeats: usize, truth: f64) -> Setting {
    Setting { repeats, n: 300, sigma: 0.25, spread: 0.03, truth, heavy: false, phi: 0.0 }
}

/// The Clopper–Pearson 95% interval of a share `k` of `trials`.
fn cp(k: u32, trials: u32) -> (f64, f64) {
    crate::binomial::clopper_pearson(u64::from(k), u64::from(trials), 0.95)
}

/// Two sides of one configuration (true ratio 1), each 3 or 5 repeats:
/// judged across repeats, `differs` at ±5% and at ±10% at most 5% of the
/// time (the Clopper–Pearson interval of the share lies below 5%); the
/// interval misses the true ratio at about its stated 5%, 2.5% a side,
/// and the generous ±20% band is `reproduced` nearly always. The pooled
/// within-run bootstrap, on the same draws, misses the true ratio far more
/// often: the spread between runs is not in it.
#[test]
fn two_runs_of_one_configuration_are_rarely_called_differs() {
    for repeats in [3, 5] {
        // The pooled bootstrap on the same draws, at R = 3 (it is the slow part).
        let old = usize::from(repeats == 3);
        let tallies = simulate(setting(repeats, 1.0), (&[P50, P95], old), (2000, 200), &BANDS, 7);
        for (stat, (new, old)) in [P50, P95].iter().zip(&tallies) {
            let report = format!(
                "R={repeats} {}, same configuration\n  across repeats: {}\n  pooled within-run: {}",
                stat.label(),
                new.words(&BANDS),
                if old.trials > 0 { old.words(&BANDS) } else { "not run".into() }
            );
            eprintln!("{report}");
            for band in [0, 1] {
                let (low, high) = cp(new.differs(band), new.trials);
                assert!(low <= 0.05 && high <= 0.05, "false differs at ±{}: {report}", BANDS[band]);
            }
            let missed = new.missed[0] + new.missed[1];
            assert!(cp(missed, new.trials).0 <= 0.05, "{report}");
            assert!(new.missed.iter().all(|&m| cp(m, new.trials).0 <= 0.025), "{report}");
            if old.trials > 0 {
                let old_missed = cp(old.missed[0] + old.missed[1], old.trials).0;
                assert!(old_missed > 0.10 && old_missed > cp(missed, new.trials).1, "{report}");
            }
            assert!(cp(new.reproduced(2), new.trials).0 >= 0.85, "power at ±20%: {report}");
        }
    }
}

/// Side B truly slower by less than the band (4.5% at ±5%, 9% at ±10%):
/// not `differs` beyond the equivalence test's one-sided 2.5% across
/// repeats; the pooled within-run bootstrap calls it `differs` clearly
/// more often (its interval leaves out the spread between runs).
#[test]
fn a_difference_inside_the_band_is_rarely_called_differs() {
    // The pooled bootstrap on the same draws, the median only (it is the slow part).
    for (repeats, truth, band, old_trials) in [(3, 1.045, 0, 150), (5, 1.09, 1, 100)] {
        let tallies = simulate(setting(repeats, truth), (&[P50, P95], 1), (2000, old_trials), &BANDS, 8);
        for (stat, (new, old)) in [P50, P95].iter().zip(&tallies) {
            let report = format!(
                "R={repeats} {}, B truly ×{truth}\n  across repeats: {}\n  pooled within-run: {}",
                stat.label(),
                new.words(&BANDS),
                if old.trials > 0 { old.words(&BANDS) } else { "not run".into() }
            );
            eprintln!("{report}");
            let (low, high) = cp(new.differs(band), new.trials);
            assert!(low <= 0.025 && high <= 0.05, "{report}");
            assert_eq!(new.verdicts[band][1], 0, "never differs the wrong way: {report}");
            if old.trials > 0 {
                // The pooled bootstrap's share lies above the across-repeats
                // method's upper bound (its 100–150 trials are too few for
                // its own lower bound to clear it every time).
                assert!(old.differs(band) as f64 / old.trials as f64 > high, "{report}");
            }
        }
    }
}

/// Side B truly 30% slower: `differs` at ±10% in most trials across
/// repeats (and never `reproduced`, never faster), the interval still
/// missing the true ratio at about 5%.
#[test]
fn a_side_truly_30_percent_slower_is_called_differs() {
    for repeats in [3, 5] {
        let tallies = simulate(setting(repeats, 1.3), (&[P50, P95], 0), (2000, 0), &BANDS, 9);
        for (stat, (new, _)) in [P50, P95].iter().zip(&tallies) {
            let report = format!("R={repeats} {}, B truly ×1.3: {}", stat.label(), new.words(&BANDS));
            eprintln!("{report}");
            assert!(cp(new.verdicts[1][2], new.trials).0 >= 0.8, "{report}");
            assert_eq!((new.verdicts[1][0], new.verdicts[1][1]), (0, 0), "{report}");
            assert!(cp(new.missed[0] + new.missed[1], new.trials).0 <= 0.05, "{report}");
        }
    }
}

/// `trials` seeded trials of one run a side (`setting.repeats` is 1), each
/// statistic of `stats` judged by the within-run bootstrap widened by the
/// stated run-to-run spread `stated` (σ; the truth is `setting.spread`),
/// and the runs' means judged as a per-run figure like throughput (the
/// ratio ± z·√2·σ′, no within-run interval). A per-run figure's stated
/// spread is all of its variation between runs, so σ′ adds the mean's own
/// sampling error to σ: √(σ² + (e^{s²} − 1)/n) for n lognormal values of
/// log-sd s. One tally per statistic, then the per-run figure's.
fn one_run_a_side(setting: Setting, stated: f64, stats: &[Statistic], trials: u32, seed: u64) -> Vec<Tally> {
    use crate::run_to_run::{RunSpread, SpreadSource};
    assert_eq!(setting.repeats, 1);
    let mut rng = Normal::new(seed);
    let spread = |sigma| RunSpread { sigma, from: SpreadSource::Declared, repeats: None };
    let opts = CompareOptions {
        resamples: 200,
        seed,
        run_to_run: Spreads::from([("m".to_string(), spread(stated))]),
        ..CompareOptions::default()
    };
    let within = ((setting.sigma.powi(2)).exp_m1() / setting.n as f64).sqrt();
    let figure = CompareOptions {
        run_to_run: Spreads::from([("m".to_string(), spread(stated.hypot(within)))]),
        ..opts.clone()
    };
    let mut out = vec![Tally::default(); stats.len() + 1];
    for trial in 0..trials {
        let (a, b) = (setting.side(&mut rng, 1.0).concat(), setting.side(&mut rng, setting.truth).concat());
        let opts = CompareOptions { seed: seed ^ u64::from(trial), ..opts.clone() };
        for (&stat, tally) in stats.iter().zip(&mut out) {
            let mut row = compare_finite("m", stat, &a, &b, &opts);
            judge_within_run(&mut row, "one run a side", [1, 1], &opts);
            assert_eq!(row.spread, Spread::Stated, "{row:?}");
            tally.add(row.ci_low.unwrap(), row.ci_high.unwrap(), setting.truth, &BANDS);
        }
        let row = compare_repeats("m", &[mean(&a).unwrap()], &[mean(&b).unwrap()], &figure);
        assert_eq!(row.spread, Spread::Stated, "{row:?}");
        out[stats.len()].add(row.ci_low.unwrap(), row.ci_high.unwrap(), setting.truth, &BANDS);
    }
    out
}

fn once(spread: f64, truth: f64) -> Setting {
    Setting { repeats: 1, n: 300, sigma: 0.25, spread, truth, heavy: false, phi: 0.0 }
}

/// One run a side where the model's assumptions break, the spread stated
/// as its true standard deviation (5%): run offsets with heavy tails
/// (Student t, 3 df), and requests correlated within each run (AR(1),
/// φ = 0.6, which the block bootstrap is meant to hold). One configuration
/// twice: `differs` at ±10% still within 5% (upper Clopper–Pearson bound),
/// and within 2.5% a side.
#[test]
fn one_run_a_side_holds_with_heavy_tailed_offsets_and_correlated_requests() {
    let heavy = Setting { heavy: true, ..once(0.05, 1.0) };
    let correlated = Setting { phi: 0.6, ..once(0.05, 1.0) };
    for (what, setting, trials, seed) in
        [("t3 offsets", heavy, 600, 27), ("AR(1) φ 0.6", correlated, 300, 28)]
    {
        let tallies = one_run_a_side(setting, 0.05, &[P50], trials, seed);
        for (stat, tally) in ["p50", "mean as a per-run figure"].iter().zip(&tallies) {
            let report = format!("one run a side, σ 5%, {what}, {stat}: {}", tally.words(&BANDS));
            eprintln!("{report}");
            let [_, faster, slower, _] = tally.verdicts[1];
            assert!(cp(faster + slower, tally.trials).1 <= 0.05, "{report}");
            assert!(cp(faster, tally.trials).1 <= 0.025 && cp(slower, tally.trials).1 <= 0.025, "{report}");
        }
    }
}

/// One run a side, one configuration, its run-to-run spread stated as it
/// truly is (3% and 5%): `differs` at the default ±10% with the upper
/// Clopper–Pearson bound of its share within 5%, and of each side's
/// within 2.5%; at ±5% within 5%; the widened interval misses the true
/// ratio at most about its stated 5%.
#[test]
fn one_run_a_side_of_one_configuration_is_rarely_called_differs_at_its_stated_spread() {
    for (spread, seed) in [(0.03, 21), (0.05, 22)] {
        let tallies = one_run_a_side(once(spread, 1.0), spread, &[P50, P95], 400, seed);
        for (what, tally) in ["p50", "p95", "mean as a per-run figure"].iter().zip(&tallies) {
            let report =
                format!("one run a side, σ {spread} stated and true, {what}: {}", tally.words(&BANDS));
            eprintln!("{report}");
            let [_, faster, slower, _] = tally.verdicts[1];
            assert!(cp(faster, tally.trials).1 <= 0.025 && cp(slower, tally.trials).1 <= 0.025, "{report}");
            for band in [0, 1] {
                assert!(cp(tally.differs(band), tally.trials).1 <= 0.05, "±{}: {report}", BANDS[band]);
            }
            assert!(cp(tally.missed[0] + tally.missed[1], tally.trials).0 <= 0.05, "{report}");
        }
    }
}

/// One run a side, B truly 3× slower and truly 20% slower, the spread
/// stated as it is: at ±10% the 3× twin is `differs` in (nearly) every
/// trial and never the wrong way; 20% is `differs` only some of the time
/// (the stated spread leaves little room: printed, and held above a floor
/// so a change that loses the power shows).
#[test]
fn one_run_a_side_calls_a_real_regression_differs() {
    for (spread, floor_20) in [(0.03, 0.2), (0.05, 0.05)] {
        for (truth, trials) in [(3.0, 100), (1.2, 200)] {
            let tallies = one_run_a_side(once(spread, truth), spread, &[P50, P95], trials, 23);
            for (what, tally) in ["p50", "p95", "mean as a per-run figure"].iter().zip(&tallies) {
                let report =
                    format!("one run a side, σ {spread}, B ×{truth}, {what}: {}", tally.words(&BANDS));
                eprintln!("{report}");
                let [reproduced, faster, slower, _] = tally.verdicts[1];
                assert_eq!((reproduced, faster), (0, 0), "{report}");
                let floor = if truth > 2.0 { 0.95 } else { floor_20 };
                assert!(cp(slower, tally.trials).0 >= floor, "{report}");
            }
        }
    }
}

/// Where the assumption breaks: the spread stated (3%) well below the true
/// one (10%). Each run's offset then moves the ratio further than the
/// widened interval allows, and one configuration is called `differs` at
/// ±10% clearly more than the 5% a true statement keeps: the statement
/// must be honest.
#[test]
fn an_understated_spread_breaks_the_guarantee() {
    let tallies = one_run_a_side(once(0.10, 1.0), 0.03, &[P50], 300, 24);
    let report = format!("σ 0.10 true, 0.03 stated, p50: {}", tallies[0].words(&BANDS));
    eprintln!("{report}");
    assert!(cp(tallies[0].differs(1), tallies[0].trials).0 > 0.05, "{report}");
}

/// Two repeats a side, judged across them (Welch): one configuration is
/// still rarely `differs` (upper bound within 5%), but with so few
/// repeats the interval is wide: a true 20% regression is called
/// `differs` at ±10% only in a minority of trials (its share printed;
/// bounded above so the docs' "weak" stays true).
#[test]
fn two_repeats_a_side_keep_the_guarantee_with_little_power() {
    for spread in [0.03, 0.05] {
        let two = |truth| Setting { repeats: 2, n: 300, sigma: 0.25, spread, truth, heavy: false, phi: 0.0 };
        let same = simulate(two(1.0), (&[P50], 0), (2000, 0), &BANDS, 25);
        let slower = simulate(two(1.2), (&[P50], 0), (2000, 0), &BANDS, 26);
        let (same, slower) = (&same[0].0, &slower[0].0);
        let report = format!(
            "R=2 p50, σ {spread}\n  same: {}\n  B ×1.2: {}",
            same.words(&BANDS),
            slower.words(&BANDS)
        );
        eprintln!("{report}");
        assert!(cp(same.differs(1), same.trials).1 <= 0.05, "{report}");
        assert!(cp(slower.verdicts[1][2], slower.trials).1 <= 0.5, "{report}");
    }
}
