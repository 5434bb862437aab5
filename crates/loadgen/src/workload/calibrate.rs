//! Finding the prompt length, in filler words, that the *server* counts as
//! the planned number of tokens. Probing the server (its `usage.prompt_tokens`
//! on a one-token request) is the only honest way: a local tokenizer may not
//! match the served model, and the chat template adds tokens we cannot see.

use serde::{Deserialize, Serialize};

/// One probe: `words` of filler gave `prompt_tokens` on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub words: u64,
    pub prompt_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub target_tokens: u64,
    /// Chosen filler word count.
    pub words: u64,
    /// Server-counted tokens of the chosen probe.
    pub achieved_tokens: u64,
    pub tolerance_tokens: u64,
    pub converged: bool,
    pub probes: Vec<Probe>,
}

pub const MAX_PROBES: usize = 6;

/// Acceptable distance from the target: 0.2% of it, at least 2 tokens
/// (unique per-request tags make lengths differ by a few tokens anyway).
pub fn tolerance(target: u64) -> u64 {
    (target / 500).max(2)
}

/// Secant search on tokens(words), which is close to linear for our filler.
/// `probe(words)` returns the server's prompt token count.
pub async fn calibrate(
    target: u64,
    mut probe: impl AsyncFnMut(u64) -> anyhow::Result<u64>,
) -> anyhow::Result<Calibration> {
    let tol = tolerance(target);
    let mut probes: Vec<Probe> = Vec::new();
    // Start small so the first probe also reveals the fixed template overhead.
    let mut words = (target / 4).max(1);
    while probes.len() < MAX_PROBES {
        let tokens = probe(words).await?;
        probes.push(Probe { words, prompt_tokens: tokens });
        if tokens.abs_diff(target) <= tol {
            break;
        }
        let next = match probes.as_slice() {
            [.., a, b] if a.prompt_tokens != b.prompt_tokens => {
                let slope =
                    (b.words as f64 - a.words as f64) / (b.prompt_tokens as f64 - a.prompt_tokens as f64);
                b.words as f64 + (target as f64 - b.prompt_tokens as f64) * slope
            }
            [.., b] => b.words as f64 * target as f64 / b.prompt_tokens.max(1) as f64,
            [] => unreachable!("a probe was just pushed"),
        };
        let next = next.round().max(1.0) as u64;
        if next == words || probes.iter().any(|p| p.words == next) {
            break; // no further progress possible (e.g. target below template overhead)
        }
        words = next;
    }
    let best = probes
        .iter()
        .min_by_key(|p| p.prompt_tokens.abs_diff(target))
        .copied()
        .ok_or_else(|| anyhow::anyhow!("calibration made no probe"))?;
    Ok(Calibration {
        target_tokens: target,
        words: best.words,
        achieved_tokens: best.prompt_tokens,
        tolerance_tokens: tol,
        converged: best.prompt_tokens.abs_diff(target) <= tol,
        probes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(target: u64, server: impl Fn(u64) -> u64) -> Calibration {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(calibrate(target, async |w| Ok(server(w)))).unwrap()
    }

    #[test]
    fn converges_on_a_linear_tokenizer_with_overhead() {
        let c = run(24576, |w| 37 + w * 17 / 10);
        assert!(c.converged, "{c:?}");
        assert!(c.probes.len() <= 3, "{c:?}");
        assert!(c.achieved_tokens.abs_diff(24576) <= tolerance(24576));
    }

    #[test]
    fn reports_non_convergence_below_template_overhead() {
        let c = run(10, |w| 40 + w);
        assert!(!c.converged);
        assert_eq!(c.words, 1);
    }
}
