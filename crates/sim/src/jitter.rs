//! Run-to-run noise (`step-jitter-pct`): real engines run the same cell a
//! few percent faster or slower from one run to the next (clocks, thermals,
//! neighbours), which is what makes a close verdict a coin toss. Here every
//! step's time is multiplied by `exp(x)`, where `x` drifts slowly: an AR(1)
//! process in time with a [`TIME_CONSTANT_S`] time constant and a standard
//! deviation of `step-jitter-pct` percent. A run of a few seconds sees a
//! nearly constant factor, a later run another. Each server start draws its
//! own path, from the profile seed and the start's wall-clock time: the
//! point is that two runs differ, as they do on real hardware.

use std::time::Duration;

use crate::rng::{SimRng, derive_seed};

/// How long the factor takes to forget itself (to 1/e).
pub const TIME_CONSTANT_S: f64 = 2.0;

#[derive(Debug, Clone)]
pub struct Jitter {
    /// Standard deviation of `x` (a fraction: 0.03 for 3%).
    sd: f64,
    x: f64,
    rng: SimRng,
}

impl Jitter {
    /// `None` when the profile asks for no jitter.
    pub fn new(percent: f64, seed: u64) -> Option<Jitter> {
        if percent <= 0.0 {
            return None;
        }
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut rng =
            SimRng::new(derive_seed(&[&seed.to_le_bytes(), &started.to_le_bytes(), b"step-jitter"]));
        let sd = percent / 100.0;
        // Start anywhere on the stationary distribution, not at 1.
        let x = sd * normal(&mut rng);
        Some(Jitter { sd, x, rng })
    }

    /// `step` scaled by the factor, which then moves on by the step's length.
    pub fn apply(&mut self, step: Duration) -> Duration {
        let scaled = step.mul_f64(self.x.exp());
        let keep = (-scaled.as_secs_f64() / TIME_CONSTANT_S).exp();
        self.x = keep * self.x + (1.0 - keep * keep).sqrt() * self.sd * normal(&mut self.rng);
        scaled
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut SimRng) -> f64 {
    let u = 1.0 - rng.next_f64();
    let v = rng.next_f64();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_factor_wanders_with_the_asked_spread_and_no_jitter_is_none() {
        assert!(Jitter::new(0.0, 1).is_none());
        let mut jitter = Jitter::new(5.0, 7).unwrap();
        let step = Duration::from_millis(10);
        // 10 ms steps for 2,000 s: 1,000 time constants, enough to see the spread.
        let logs: Vec<f64> = (0..200_000).map(|_| (jitter.apply(step).as_secs_f64() / 0.01).ln()).collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
        assert!((sd - 0.05).abs() < 0.01, "sd {sd}");
        assert!(mean.abs() < 0.01, "mean {mean}");
        // Neighbouring steps move together: the drift is slow.
        let lag = logs.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>() / logs.len() as f64;
        assert!(lag < 0.005, "step-to-step change {lag}");
    }
}
