//! How each peer defines the metrics anvil compares, next to anvil's own,
//! in one place: `compare` reads it to say, per metric, whether a
//! difference between an imported result and an anvil cell may come from
//! definitions rather than from the server; docs/peers.md says the same in
//! prose.
//!
//! An imported artifact holds the tool's *moments* (when it stamped the
//! first token, the end) with anvil's *formulas* applied to them, so what
//! matters for a comparison is whether the moments mean what anvil's do.

use anvil_words::words;
use serde::Serialize;

use super::imported::Tool;

words! {
    #[serde]
    /// Whether an imported artifact's value of a metric means what an anvil cell's does.
    pub enum Alike {
        /// Same moments, same formula: compared as any two cells are.
        Same = "same",
        /// A bounded difference (the tail of a stream after its last content,
        /// a few µs to ms): the verdict stands, with a note.
        Close = "close",
        /// The moments differ in what they are: a difference may come from the
        /// definitions, so no verdict is given.
        Differs = "differs",
    }
}

/// One metric as one tool defines it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Definition {
    /// The family of compare rows it is about: `ttft`, `tpot`, `e2e`,
    /// `decode_tok_s`, `throughput_tok_s`, or a note (`percentiles`, `tokens`).
    pub metric: &'static str,
    /// The tool's own name for it.
    pub tool_name: &'static str,
    pub tool: &'static str,
    pub anvil: &'static str,
    pub alike: Alike,
}

const fn def(
    metric: &'static str,
    tool_name: &'static str,
    tool: &'static str,
    anvil: &'static str,
    alike: Alike,
) -> Definition {
    Definition { metric, tool_name, tool, anvil, alike }
}

const ANVIL_TTFT: &str = "request start → first event with non-empty content";
const ANVIL_E2E: &str = "request start → the stream's end ([DONE])";
const ANVIL_TPOT: &str = "(e2e − time to first output) / (usage completion tokens − 1)";
const ANVIL_THROUGHPUT: &str = "Σ output tokens / (first send → last end), the whole wall";
const ANVIL_PERCENTILES: &str =
    "nearest rank, ⌈p·n/100⌉ (the imported artifact's too, re-computed from the records)";

const VLLM: &[Definition] = &[
    def(
        "ttft",
        "TTFT (ttfts)",
        "request start → first SSE event with any `choices`, even an empty one (on chat: the role-only first chunk, before any content)",
        ANVIL_TTFT,
        Alike::Differs,
    ),
    def(
        "tpot",
        "TPOT",
        "(latency − ttft) / (output_len − 1), with its ttft and its latency (to the last content event)",
        ANVIL_TPOT,
        Alike::Differs,
    ),
    def(
        "decode_tok_s",
        "(none)",
        "anvil's formula on vLLM's moments: the same ttft and latency as its TPOT",
        "(usage completion tokens − 1) / generation",
        Alike::Differs,
    ),
    def(
        "e2e",
        "E2EL (latencies)",
        "request start → the last content event (the usage chunk and [DONE] not included)",
        ANVIL_E2E,
        Alike::Close,
    ),
    def(
        "throughput_tok_s",
        "output_throughput",
        "Σ output_lens / duration, a window from before its dispatch loop to after the last reply (the artifact holds anvil's, from the records: first send → last content event)",
        ANVIL_THROUGHPUT,
        Alike::Close,
    ),
    def(
        "chunk_gap",
        "ITL (itls)",
        "gaps between SSE events with non-empty `choices`, pooled over requests",
        "gaps between events with output, pooled (chunk_gap)",
        Alike::Same,
    ),
    def(
        "percentiles",
        "p50…p99",
        "numpy linear interpolation (np.percentile); median = np.median; std with ddof 0",
        ANVIL_PERCENTILES,
        Alike::Same,
    ),
    def(
        "tokens",
        "output_lens, input_lens",
        "the server's usage counts, else vLLM's tokenizer count of the text",
        "the server's usage counts",
        Alike::Same,
    ),
];

const AIPERF: &[Definition] = &[
    def(
        "ttft",
        "time_to_first_token",
        "request start → first response with non-empty content",
        ANVIL_TTFT,
        Alike::Same,
    ),
    def(
        "tpot",
        "inter_token_latency",
        "(request_latency − TTFT) / (OSL − 1), OSL counted by the client's tokenizer (the artifact's tpot uses the server's usage count)",
        ANVIL_TPOT,
        Alike::Close,
    ),
    def(
        "decode_tok_s",
        "(none)",
        "anvil's formula on AIPerf's moments (request_latency ends at the last content response)",
        "(usage completion tokens − 1) / generation",
        Alike::Close,
    ),
    def(
        "e2e",
        "request_latency",
        "request start → the last content response (the usage chunk and [DONE] not included)",
        ANVIL_E2E,
        Alike::Close,
    ),
    def(
        "throughput_tok_s",
        "output_token_throughput",
        "Σ OSL (client tokenizer) / the profiling phase's window (the artifact holds anvil's, from the records and usage counts)",
        ANVIL_THROUGHPUT,
        Alike::Close,
    ),
    def(
        "chunk_gap",
        "inter_chunk_latency",
        "gaps between content responses, pooled; its summary percentiles from a t-digest",
        "gaps between events with output, pooled (chunk_gap)",
        Alike::Same,
    ),
    def(
        "percentiles",
        "p1…p99",
        "numpy linear interpolation; std with ddof 0",
        ANVIL_PERCENTILES,
        Alike::Same,
    ),
    def(
        "tokens",
        "output_sequence_length, input_sequence_length",
        "the client's tokenizer by default (usage_* hold the server's; the artifact uses those)",
        "the server's usage counts",
        Alike::Same,
    ),
];

const GUIDELLM: &[Definition] = &[
    def(
        "ttft",
        "time_to_first_token_ms",
        "request start → first SSE line with at least one token",
        ANVIL_TTFT,
        Alike::Same,
    ),
    def(
        "tpot",
        "time_per_output_token_ms",
        "(last token − request start) / output tokens: includes the first token; its inter_token_latency_ms, (last − first token) / (output tokens − 1), is what anvil and vLLM call TPOT. The artifact's tpot is anvil's",
        ANVIL_TPOT,
        Alike::Same,
    ),
    def(
        "decode_tok_s",
        "(none)",
        "anvil's formula on guidellm's moments",
        "(usage completion tokens − 1) / generation",
        Alike::Same,
    ),
    def(
        "e2e",
        "request_latency",
        "request start → after the stream loop ends ([DONE] and the usage chunk included), in seconds",
        ANVIL_E2E,
        Alike::Same,
    ),
    def(
        "throughput_tok_s",
        "output_tokens_per_second",
        "a duration-weighted rate over the benchmark's window (mean = tokens / duration); the artifact holds anvil's",
        ANVIL_THROUGHPUT,
        Alike::Close,
    ),
    def(
        "percentiles",
        "p001…p999",
        "inverted CDF of a weighted sample (ITL weighted by output tokens − 1, TPOT by output tokens): always an observed value; median = p50, the lower middle",
        ANVIL_PERCENTILES,
        Alike::Same,
    ),
    def(
        "tokens",
        "output_tokens, prompt_tokens",
        "the server's usage counts when present, else its own count",
        "the server's usage counts",
        Alike::Same,
    ),
];

/// Every definition of `tool`.
pub fn table(tool: Tool) -> &'static [Definition] {
    match tool {
        Tool::VllmBench => VLLM,
        Tool::Aiperf => AIPERF,
        Tool::Guidellm => GUIDELLM,
    }
}

/// The tool an artifact was imported from (`None`: measured by anvil).
pub fn tool_of(artifact: &serde_json::Value) -> Option<Tool> {
    artifact.pointer("/imported_from/tool").and_then(|t| t.as_str()).and_then(Tool::from_word)
}

/// The metric family of a compare row (`ttft_p50_ms` → `ttft`).
pub fn family(row: &str) -> &str {
    ["decode_tok_s", "throughput_tok_s", "ttft", "tpot", "e2e"]
        .into_iter()
        .find(|f| row.starts_with(f))
        .unwrap_or(row)
}

/// One metric whose definition differs between the two sides of a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Between {
    pub metric: &'static str,
    /// The worse of the two sides' [`Alike`].
    pub alike: Alike,
    /// What A and B mean by it, in words (`anvil: …`, `vLLM bench serve TTFT (ttfts): …`).
    pub a: String,
    pub b: String,
}

/// What differs in definition between two artifacts: nothing when both
/// were measured by anvil or both imported from the same tool.
pub fn between(a: &serde_json::Value, b: &serde_json::Value) -> Vec<Between> {
    let (ta, tb) = (tool_of(a), tool_of(b));
    if ta == tb {
        return Vec::new();
    }
    let entries = |t: Option<Tool>| t.map(table).unwrap_or_default();
    let mut metrics: Vec<&'static str> = entries(ta).iter().chain(entries(tb)).map(|d| d.metric).collect();
    metrics.dedup();
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for metric in metrics {
        if seen.contains(&metric) {
            continue;
        }
        seen.push(metric);
        let find =
            |t: Option<Tool>| t.and_then(|t| table(t).iter().find(|d| d.metric == metric).map(|d| (t, d)));
        let (da, db) = (find(ta), find(tb));
        let anvil = da.or(db).map_or("", |(_, d)| d.anvil);
        let words = |side: Option<(Tool, &Definition)>, tool: Option<Tool>| match (side, tool) {
            (Some((t, d)), _) => format!("{} {}: {}", t.title(), d.tool_name, d.tool),
            (None, Some(t)) => format!("{}: not defined", t.title()),
            (None, None) => format!("anvil: {anvil}"),
        };
        let rank = |a: Alike| match a {
            Alike::Same => 0,
            Alike::Close => 1,
            Alike::Differs => 2,
        };
        let alike = [da, db]
            .into_iter()
            .flatten()
            .map(|(_, d)| d.alike)
            .max_by_key(|a| rank(*a))
            .unwrap_or(Alike::Same);
        out.push(Between { metric, alike, a: words(da, ta), b: words(db, tb) });
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn vllm_against_anvil_names_ttft_and_tpot_as_differing_definitions() {
        let vllm = json!({"imported_from": {"tool": "vllm-bench"}});
        let anvil = json!({"arrival": {"kind": "closed_loop"}});
        let found = between(&vllm, &anvil);
        let differs: Vec<&str> =
            found.iter().filter(|b| b.alike == Alike::Differs).map(|b| b.metric).collect();
        assert_eq!(differs, ["ttft", "tpot", "decode_tok_s"]);
        assert!(found.iter().any(|b| b.metric == "percentiles" && b.b.starts_with("anvil: nearest rank")));
        assert!(between(&vllm, &vllm).is_empty(), "the same tool on both sides defines alike");
        assert!(between(&anvil, &anvil).is_empty());
        assert_eq!(family("ttft_p95_ms"), "ttft");
        assert_eq!(family("request_canary_passed"), "request_canary_passed");
    }
}
