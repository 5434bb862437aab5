//! The artifact's `tokens`: what the cell's prompts were built with (the
//! model's own tokenizer and its one-token words), the chat template's
//! overhead as the server counted it, and per cell the server's own
//! account joined to what the workload planned: prompt lengths met, cached
//! tokens next to the ideal ones the trace implies, and speculative
//! decoding's acceptance where the server reports it per request.

use std::sync::Mutex;

use anvil_tokens::{AlphabetSummary, TokenizerIdentity};
use serde::{Deserialize, Serialize};

use crate::observe::record::RequestRecord;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TokenAccount {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<TokenizerIdentity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alphabet: Option<AlphabetSummary>,
    /// `prompt_tokens` the server counted beyond the content's own tokens
    /// (the chat template: role markers, a system prompt), from the probes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_overhead_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overhead_probes: Vec<OverheadProbe>,
    /// Of the template, the tokens the server's cache held for the second
    /// probe, which shares nothing else with the first: the shared system
    /// prompt as this server caches it (whole blocks on a paged cache).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_cached_tokens: Option<u64>,
    /// The tokens of the closing instructions of a synthetic prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction_tokens: Option<u64>,
    /// Planned prompts tokenized before the run, against their planned length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_prompts: Option<PromptCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_length: Option<PromptLengths>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<PrefixCache>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<Speculative>,
    /// A cell whose prompts are meant cold (synthetic, `prompt-cache
    /// "unique"`): what the server said it had cached anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold: Option<ColdCheck>,
}

/// Whether prompts meant to be new to the server were: the server's
/// cached tokens beyond the template's cached part (`template_cached_tokens`,
/// 0 when not measured), over the requests that reported them. Unique
/// prompts share nothing but the template, so a cache that holds more holds
/// an earlier run's prompts (a rerun against the same running server).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ColdCheck {
    /// Requests whose reply reported cached tokens.
    pub requests: u64,
    /// Of them, those with cached tokens beyond the template.
    pub requests_hit: u64,
    pub prompt_tokens: u64,
    pub cached_beyond_template: u64,
    /// More than half the prompt tokens were served from the cache: not a
    /// cold measurement (its TTFT is the cache's).
    pub hot: bool,
}

impl ColdCheck {
    /// The run line's warning, when hot.
    pub fn warning(&self) -> Option<String> {
        self.hot.then(|| {
            format!(
                "CACHE-HOT: {} of {} unique prompt tokens were already in the server's cache ({} of {} requests): not a cold measurement",
                self.cached_beyond_template, self.prompt_tokens, self.requests_hit, self.requests
            )
        })
    }
}

/// One probe of the template overhead: a content of `content_tokens` exact
/// tokens that the server counted as `prompt_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverheadProbe {
    pub content_tokens: u64,
    pub prompt_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptCheck {
    pub checked: u64,
    pub exact: u64,
    /// The first prompt whose tokens were not its planned count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_miss: Option<PromptMiss>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptMiss {
    pub request_index: u64,
    pub planned: u64,
    pub tokenized: u64,
}

/// The measured requests' `prompt_tokens` against `prompt_tokens_expected`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptLengths {
    pub met: u64,
    pub missed: u64,
    /// Requests whose reply carried no `usage`.
    pub unreported: u64,
    /// Smallest and largest `prompt_tokens - prompt_tokens_expected` (0 and 0: every one exact).
    pub difference_min: i64,
    pub difference_max: i64,
}

/// The server's cached prompt tokens next to the ideal ones, summed over
/// the requests that have both.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrefixCache {
    pub requests: u64,
    pub ideal_cached_tokens: u64,
    pub server_cached_tokens: u64,
    /// `server_cached_tokens / ideal_cached_tokens` (`None` when the ideal is 0).
    pub ratio: Option<f64>,
    /// Of the server's, the tokens on requests the trace says share nothing
    /// (a chat template's shared system prompt is cached this way).
    pub server_cached_where_ideal_is_zero: u64,
    /// With the template's cached part (`template_cached_tokens`) on every
    /// request but the first added to the ideal: like for like with what a
    /// chat server counts, and `server_cached_tokens` over it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ideal_with_template_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_with_template: Option<f64>,
    /// The server's prefix-cache block, in tokens (its own `/metrics`, or its
    /// engine's default): a cache holds whole blocks counted from the
    /// templated prompt's first token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_tokens: Option<u64>,
    /// Per request, the template's cached part plus the ideal, rounded down
    /// to whole blocks, summed: what a server that caches whole blocks can
    /// report at best, and `server_cached_tokens` over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ideal_in_whole_blocks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_in_whole_blocks: Option<f64>,
}

/// Speculative decoding's counts over the requests that reported them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Speculative {
    pub requests: u64,
    pub draft_tokens: u64,
    pub accepted_tokens: u64,
    /// `accepted_tokens / draft_tokens`.
    pub acceptance_rate: Option<f64>,
}

/// Counts the measured records as they finish (nothing per request is kept).
#[derive(Debug, Default)]
pub struct TokenTally(Mutex<Sums>);

#[derive(Debug, Default, Clone)]
struct Sums {
    met: u64,
    missed: u64,
    unreported: u64,
    difference: Option<(i64, i64)>,
    cache_requests: u64,
    ideal: u64,
    cached: u64,
    cached_where_none: u64,
    /// Requests by their ideal cached tokens (few distinct values: whole
    /// trace blocks), to round each to the server's blocks at the end.
    ideal_counts: std::collections::BTreeMap<u64, u64>,
    /// Requests with no ideal (synthetic prompts) by their (cached, prompt)
    /// tokens, to set against the template's cached part at the end.
    unplanned_cached: std::collections::BTreeMap<(u64, u64), u64>,
    draft_requests: u64,
    drafted: u64,
    accepted: u64,
}

impl TokenTally {
    pub fn take(&self, rec: &RequestRecord) {
        let Ok(mut s) = self.0.lock() else { return };
        if let Some(expected) = rec.prompt_tokens_expected {
            match rec.prompt_tokens {
                Some(got) => {
                    let d = got as i64 - expected as i64;
                    let (lo, hi) = s.difference.unwrap_or((d, d));
                    s.difference = Some((lo.min(d), hi.max(d)));
                    if d == 0 { s.met += 1 } else { s.missed += 1 }
                }
                None => s.unreported += 1,
            }
        }
        if let (Some(ideal), Some(cached)) = (rec.ideal_cached_tokens, rec.cached_prompt_tokens) {
            s.cache_requests += 1;
            s.ideal += ideal;
            s.cached += cached;
            *s.ideal_counts.entry(ideal).or_default() += 1;
            if ideal == 0 {
                s.cached_where_none += cached;
            }
        }
        if let (None, Some(cached), Some(prompt)) =
            (rec.ideal_cached_tokens, rec.cached_prompt_tokens, rec.prompt_tokens)
        {
            *s.unplanned_cached.entry((cached, prompt)).or_default() += 1;
        }
        if let (Some(drafted), Some(accepted)) = (rec.draft_tokens, rec.draft_accepted_tokens) {
            s.draft_requests += 1;
            s.drafted += drafted;
            s.accepted += accepted;
        }
    }

    /// The tallies into `account` (each part only where a record had it),
    /// the ideal cache also in whole blocks of `block_tokens` when known,
    /// and, for prompts `meant_cold`, whether they were.
    pub fn fill(&self, account: &mut TokenAccount, block_tokens: Option<u64>, meant_cold: bool) {
        let Ok(s) = self.0.lock().map(|s| s.clone()) else { return };
        if meant_cold && !s.unplanned_cached.is_empty() {
            let template = account.template_cached_tokens.unwrap_or(0);
            let mut cold = ColdCheck {
                requests: 0,
                requests_hit: 0,
                prompt_tokens: 0,
                cached_beyond_template: 0,
                hot: false,
            };
            for (&(cached, prompt), &n) in &s.unplanned_cached {
                cold.requests += n;
                cold.prompt_tokens += prompt * n;
                let beyond = cached.saturating_sub(template);
                cold.cached_beyond_template += beyond * n;
                cold.requests_hit += if beyond > 0 { n } else { 0 };
            }
            cold.hot = 2 * cold.cached_beyond_template > cold.prompt_tokens;
            account.cold = Some(cold);
        }
        if let Some((lo, hi)) = s.difference.or((s.unreported > 0).then_some((0, 0))) {
            account.prompt_length = Some(PromptLengths {
                met: s.met,
                missed: s.missed,
                unreported: s.unreported,
                difference_min: lo,
                difference_max: hi,
            });
        }
        if s.cache_requests > 0 {
            account.prefix_cache = Some(PrefixCache {
                requests: s.cache_requests,
                ideal_cached_tokens: s.ideal,
                server_cached_tokens: s.cached,
                ratio: (s.ideal > 0).then(|| s.cached as f64 / s.ideal as f64),
                server_cached_where_ideal_is_zero: s.cached_where_none,
                ideal_with_template_tokens: None,
                ratio_with_template: None,
                block_tokens: None,
                ideal_in_whole_blocks: None,
                ratio_in_whole_blocks: None,
            });
            if let (Some(cache), Some(template)) = (&mut account.prefix_cache, account.template_cached_tokens)
            {
                let ideal = cache.ideal_cached_tokens + template * cache.requests.saturating_sub(1);
                cache.ideal_with_template_tokens = Some(ideal);
                cache.ratio_with_template =
                    (ideal > 0).then(|| cache.server_cached_tokens as f64 / ideal as f64);
            }
            if let (Some(cache), Some(block)) = (&mut account.prefix_cache, block_tokens.filter(|b| *b > 0)) {
                let template = account.template_cached_tokens.unwrap_or(0);
                let whole: u64 =
                    s.ideal_counts.iter().map(|(ideal, n)| (template + ideal) / block * block * n).sum();
                cache.block_tokens = Some(block);
                cache.ideal_in_whole_blocks = Some(whole);
                cache.ratio_in_whole_blocks =
                    (whole > 0).then(|| cache.server_cached_tokens as f64 / whole as f64);
            }
        }
        if s.draft_requests > 0 {
            account.speculative = Some(Speculative {
                requests: s.draft_requests,
                draft_tokens: s.drafted,
                accepted_tokens: s.accepted,
                acceptance_rate: (s.drafted > 0).then(|| s.accepted as f64 / s.drafted as f64),
            });
        }
    }
}

impl TokenAccount {
    /// Whether there is anything to say (the artifact then omits `tokens`).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// What `anvil show` and the report say of it, one line per part.
    pub fn summary_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(t) = &self.tokenizer {
            let words = self.alphabet.as_ref().map_or(0, |a| a.words);
            let overhead = self.template_overhead_tokens.map_or("unknown".into(), |o| o.to_string());
            lines.push(format!(
                "tokens: prompts built with the tokenizer {} ({words} one-token words); the chat template adds {overhead}",
                t.source
            ));
        }
        if let Some(p) = &self.prompt_length {
            lines.push(format!(
                "prompt lengths: {} of {} as planned (server's count minus the plan: {} to {}){}",
                p.met,
                p.met + p.missed + p.unreported,
                p.difference_min,
                p.difference_max,
                if p.unreported > 0 { format!(", {} unreported", p.unreported) } else { String::new() }
            ));
        }
        if let Some(c) = &self.prefix_cache {
            let ratio = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.2}"));
            let mut line = format!(
                "prefix cache: the server cached {} tokens where the trace implies {} (ratio {})",
                c.server_cached_tokens,
                c.ideal_cached_tokens,
                ratio(c.ratio)
            );
            if let (Some(with), Some(t)) = (c.ideal_with_template_tokens, self.template_cached_tokens) {
                line.push_str(&format!(
                    "; {with} with the template's {t} cached tokens on each request after the first (ratio {})",
                    ratio(c.ratio_with_template)
                ));
            }
            if let (Some(whole), Some(block)) = (c.ideal_in_whole_blocks, c.block_tokens) {
                line.push_str(&format!(
                    "; {whole} in whole {block}-token blocks from the templated prompt's start (ratio {})",
                    ratio(c.ratio_in_whole_blocks)
                ));
            }
            lines.push(line);
        }
        if let Some(s) = &self.speculative {
            lines.push(format!(
                "speculative decoding: {} of {} draft tokens accepted ({}) over {} requests",
                s.accepted_tokens,
                s.draft_tokens,
                s.acceptance_rate.map_or("-".into(), |r| format!("{:.1}%", r * 100.0)),
                s.requests
            ));
        }
        if let Some(cold) = &self.cold {
            lines.push(cold.warning().unwrap_or_else(|| {
                format!(
                    "cold: {} of {} prompt tokens were cached beyond the template ({} of {} requests)",
                    cold.cached_beyond_template, cold.prompt_tokens, cold.requests_hit, cold.requests
                )
            }));
        }
        lines
    }
}
