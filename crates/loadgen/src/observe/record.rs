//! The raw per-request record (an element of `request_timings`) and how its
//! derived timings follow from a [`StreamObservation`].

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::observe::failure::{Failure, FailureClass};
use crate::observe::stream::StreamObservation;
use crate::workload::canary::{CanaryResult, evaluate, words_after_marker};
use crate::workload::spec::{OutputPolicy, Slo, SloFrom};

/// `response_words` adherence of one reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlledOutput {
    pub requested_words: u32,
    pub observed_words: u64,
    /// The whole reply was seen (not cut by the capture cap or `max_tokens`).
    pub observable: bool,
    pub exact: bool,
}

/// One request as measured. Reference keys first, then anvil's additions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    pub content_chunks: u32,
    pub controlled_output: Option<ControlledOutput>,
    pub decode_tok_s: Option<f64>,
    pub e2e_ms: Option<f64>,
    pub effective_prefill_tok_s: Option<f64>,
    pub generation_ms: Option<f64>,
    pub mean_inter_token_latency_ms: Option<f64>,
    pub mean_time_per_output_token_ms: Option<f64>,
    /// `usage` when the server reported token counts, else `none`.
    pub output_token_source: String,
    pub output_tokens: Option<u64>,
    pub planned_context_tokens: u64,
    pub prompt_tokens: Option<u64>,
    pub reasoning_chunks: u32,
    pub request_canary: Option<CanaryResult>,
    pub request_index: u64,
    pub time_to_first_output_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub visible_content_truncated: bool,
    pub visible_generation_ms: Option<f64>,
    // --- anvil additions ---
    /// 0-based measured run this request belongs to.
    pub repeat: u32,
    /// Label of the target (replica) that served it.
    pub target: String,
    pub http_status: Option<u16>,
    pub finish_reason: Option<String>,
    /// 1 when the request was re-sent on a fresh connection because its
    /// pooled one had been closed by the server (timings are the re-send's).
    #[serde(default)]
    pub stale_connection_retries: u32,
    pub cached_prompt_tokens: Option<u64>,
    /// Which clock stamped the response's reads: `kernel` (the kernel's
    /// receive timestamp of the newest bytes in each read), `read` (the
    /// client's clock after the read returned), or `mixed`.
    #[serde(default)]
    pub receive_clock: String,
    /// Reads the response took (a read may carry several chunks).
    #[serde(default)]
    pub response_reads: u32,
    /// How long the first content sat in the socket before the client read
    /// it, in microseconds (0 with the `read` clock): what a client that
    /// stamps in user space would have added to `ttft_ms`.
    #[serde(default)]
    pub first_content_read_delay_us: Option<u32>,
    /// The first content was read together with the next output event, so
    /// its kernel stamp is that of the later bytes: `ttft_ms` is then an
    /// upper bound, late by at most the first chunk gap.
    #[serde(default)]
    pub first_content_shared_read: bool,
    /// When the schedule wanted the request sent, ms after the run started.
    pub intended_send_ms: f64,
    /// When it was actually sent, ms after the run started.
    pub actual_send_ms: f64,
    /// actual − intended: how far the client fell behind its own schedule.
    pub send_lag_ms: f64,
    /// Raw gaps between consecutive output-bearing chunks, in microseconds.
    pub chunk_gaps_us: Vec<u32>,
    /// output_tokens / (content_chunks + reasoning_chunks).
    pub tokens_per_chunk: Option<f64>,
    /// Whether the request counts in the performance distributions.
    pub performance_eligible: bool,
    pub failure: Option<Failure>,
    /// Met every configured SLO (`None` without SLOs).
    pub slo_met: Option<bool>,
    /// End of the request relative to the run start, ms (for wall-span checks).
    pub finished_ms: f64,
    /// Request start on the wall clock, ns since the Unix epoch; add
    /// `ttft_ms` etc. to place the other moments on the same clock (to line
    /// them up with a server's own records).
    #[serde(default)]
    pub request_start_unix_ns: u64,
    /// The connection that carried it: its id among its target's
    /// connections (1, 2, ... in opening order; 0 when none was open).
    #[serde(default)]
    pub connection_id: u64,
    /// When the connection was opened for this request: how long the
    /// connect took, ms (`None`: it reused an open connection). Inside
    /// `ttft_ms`/`e2e_ms` when the request started before it (closed loop,
    /// or open loop with connect `on-demand`); see `timing_methodology`.
    #[serde(default)]
    pub connect_ms: Option<f64>,
    /// Open loop only: `ttft_ms + send_lag_ms`, the TTFT counted from the
    /// scheduled send, so a client that fell behind cannot hide the wait
    /// (coordinated omission). Absent in closed loop, which has no schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_from_schedule_ms: Option<f64>,
    /// Open loop only: `e2e_ms + send_lag_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_from_schedule_ms: Option<f64>,
    /// The load stage (0-based index into the artifact's `stages`) that
    /// sent it; absent in a cell without stages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<u32>,
    // --- where a replayed request came from (absent for synthetic prompts) ---
    /// The 1-based line of the trace file it replays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_line: Option<u64>,
    /// The 0-based entry of the prompt dataset it sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_entry: Option<u64>,
    /// Its multi-turn session (0-based within the run) and turn (0-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The output length its trace line or dataset entry asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_output_tokens: Option<u64>,
    /// Whether `output_tokens` equals `requested_output_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_length_met: Option<bool>,
    // --- the server's own account, joined (docs/metrics.md "Tokens") ---
    /// The `X-Request-Id` header the request carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The response's `id` as the server named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// With a tokenizer: the prompt tokens the server must count (the
    /// content's exact tokens plus the measured chat-template overhead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_expected: Option<u64>,
    /// Whether `prompt_tokens` equals `prompt_tokens_expected`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_length_met: Option<bool>,
    /// The prompt tokens an unbounded prefix cache would hold when the
    /// request arrived, as its trace implies (compare `cached_prompt_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ideal_cached_tokens: Option<u64>,
    /// Speculative decoding, where the server reports it per request
    /// (llama.cpp's `timings.draft_n` and `draft_n_accepted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_accepted_tokens: Option<u64>,
    /// An agent call: its task and its place in the task's graph, so the
    /// job metrics re-derive from the records alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentCallRecord>,
}

/// Where an agent call sits: enough to rebuild its task's graph and times
/// from the records (docs/workloads.md "Agent traces").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCallRecord {
    /// The task's place among the run's tasks (0-based, file order).
    pub task: u64,
    /// The task's id in the trace.
    pub task_id: String,
    /// The call's place in its task (0-based, file order).
    pub call: u32,
    pub call_id: String,
    /// The calls (places in the task) whose replies it waited for.
    pub parents: Vec<u32>,
    /// Its delay after them (after the task's start for a root), ms, scaled.
    pub delay_ms: f64,
    /// When the task started (ms after the run's start): its agent took
    /// it (closed loop) or it arrived (open loop).
    pub task_start_ms: f64,
    /// The task must end within this many ms of its start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<f64>,
}

/// Per-request facts that the observation does not hold.
pub struct RecordInputs<'a> {
    pub index: u64,
    pub repeat: u32,
    pub target: &'a str,
    pub planned_context_tokens: u64,
    pub marker: Option<&'a str>,
    pub response_words: u32,
    pub policy: OutputPolicy,
    pub slo: Option<&'a Slo>,
    pub run_start: Instant,
    pub intended: Instant,
    /// Sent on an open-loop schedule (`intended` is an arrival time, not
    /// the end of the worker's previous request).
    pub open_loop: bool,
    pub stage: Option<u32>,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn since(later: Option<Instant>, earlier: Instant) -> Option<f64> {
    later.map(|t| ms(t.saturating_duration_since(earlier)))
}

/// Derives the record, classifying the request (first failure wins, in the
/// order transport → stream → usage → capture → canary → controlled output).
pub fn derive(obs: StreamObservation, inputs: &RecordInputs<'_>, finished: Instant) -> RequestRecord {
    let mut obs = obs;
    let end = obs.end.unwrap_or(finished);
    let (canary, controlled) = judge_reply(&mut obs, inputs);
    let Timings {
        e2e,
        tfo,
        ttft,
        generation,
        visible_generation,
        output_tokens,
        prompt_tokens,
        tpot,
        decode,
        prefill,
        tokens_per_chunk,
    } = Timings::of(&obs, end);
    let failure = obs.failure.take().map(|(class, detail)| Failure { class, detail });
    let eligible = failure.is_none();
    let OnSchedule {
        intended_send_ms,
        actual_send_ms,
        send_lag_ms,
        ttft_from_schedule,
        e2e_from_schedule,
        slo_met,
    } = OnSchedule::of(&obs, inputs, Latencies { ttft, tpot, e2e }, eligible);
    RequestRecord {
        content_chunks: obs.content_chunks,
        controlled_output: controlled,
        decode_tok_s: decode,
        e2e_ms: e2e,
        effective_prefill_tok_s: prefill,
        generation_ms: generation,
        mean_inter_token_latency_ms: tpot,
        mean_time_per_output_token_ms: tpot,
        output_token_source: if obs.usage.is_some() { "usage" } else { "none" }.to_string(),
        output_tokens,
        planned_context_tokens: inputs.planned_context_tokens,
        prompt_tokens,
        reasoning_chunks: obs.reasoning_chunks,
        request_canary: canary,
        request_index: inputs.index,
        time_to_first_output_ms: tfo,
        tpot_ms: tpot,
        ttft_ms: ttft,
        visible_content_truncated: obs.capture_truncated,
        visible_generation_ms: visible_generation,
        repeat: inputs.repeat,
        target: inputs.target.to_string(),
        http_status: obs.http_status,
        finish_reason: obs.finish_reason.take(),
        stale_connection_retries: obs.stale_connection_retries,
        cached_prompt_tokens: obs.usage.and_then(|u| u.cached_tokens),
        receive_clock: receive_clock(obs.reads, obs.kernel_stamped_reads).to_string(),
        response_reads: obs.reads,
        first_content_shared_read: obs.first_content_shared_read,
        first_content_read_delay_us: match (obs.first_content, obs.first_content_read) {
            (Some(arrived), Some(read)) => {
                Some(u32::try_from(read.saturating_duration_since(arrived).as_micros()).unwrap_or(u32::MAX))
            }
            _ => None,
        },
        intended_send_ms,
        actual_send_ms,
        send_lag_ms,
        chunk_gaps_us: std::mem::take(&mut obs.gaps_us),
        tokens_per_chunk,
        performance_eligible: eligible,
        failure,
        slo_met,
        finished_ms: ms(end.saturating_duration_since(inputs.run_start)),
        request_start_unix_ns: obs.start_unix_ns,
        connection_id: obs.connection_id,
        connect_ms: obs.connect_time.map(ms),
        ttft_from_schedule_ms: ttft_from_schedule,
        e2e_from_schedule_ms: e2e_from_schedule,
        stage: inputs.stage,
        trace_line: None,
        dataset_entry: None,
        session: None,
        turn: None,
        requested_output_tokens: None,
        output_length_met: None,
        request_id: None,
        response_id: obs.response_id,
        prompt_tokens_expected: None,
        prompt_length_met: None,
        ideal_cached_tokens: None,
        draft_tokens: obs.draft.map(|d| d.drafted),
        draft_accepted_tokens: obs.draft.map(|d| d.accepted),
        agent: None,
    }
}

/// Judges the reply beyond its transport: a stream without usage counts,
/// a capture cut at its cap, a failed canary, and (with the strict output
/// policy) a reply of the wrong length each fail the request, the first
/// failure standing. The canary's result and the reply's length adherence.
fn judge_reply(
    obs: &mut StreamObservation,
    inputs: &RecordInputs<'_>,
) -> (Option<CanaryResult>, Option<ControlledOutput>) {
    // Canaries judge replies; a request that broke before its reply ended has none.
    let reply_complete = obs.failure.is_none() && obs.done;
    if obs.failure.is_none() && obs.usage.is_none() {
        obs.fail(FailureClass::MissingUsage, "stream ended without usage token counts");
    }
    let capture_complete = reply_complete && !obs.capture_truncated;
    let canary =
        inputs.marker.filter(|_| reply_complete).map(|m| evaluate(m, &obs.capture, capture_complete));
    if let Some(c) = &canary {
        if obs.capture_truncated {
            let detail =
                format!("visible reply exceeded {} chars", crate::observe::stream::CAPTURE_CAP_CHARS);
            obs.fail(FailureClass::TruncatedCapture, detail);
        } else if !c.passed {
            let detail = format!(
                "marker_at_start={} foreign_markers={} reply starts {:?}",
                c.marker_at_start,
                c.foreign_marker_count,
                obs.capture.chars().take(60).collect::<String>()
            );
            obs.fail(FailureClass::CanaryFailure, detail);
        }
    }
    let controlled = (inputs.response_words > 0).then(|| {
        let observed = words_after_marker(&obs.capture, inputs.marker) as u64;
        let observable = capture_complete && obs.finish_reason.as_deref() != Some("length");
        ControlledOutput {
            requested_words: inputs.response_words,
            observed_words: observed,
            observable,
            exact: observable && observed == u64::from(inputs.response_words),
        }
    });
    if let (Some(c), OutputPolicy::Strict) = (&controlled, inputs.policy)
        && !c.exact
    {
        let detail = format!(
            "asked {} words, observed {} (observable={})",
            c.requested_words, c.observed_words, c.observable
        );
        obs.fail(FailureClass::ControlledOutput, detail);
    }
    (canary, controlled)
}

/// A request's timings and rates from its own send, ms (`None`: the
/// stream never got that far, or too few tokens to mean anything).
struct Timings {
    e2e: Option<f64>,
    /// Time to the first output, reasoning included.
    tfo: Option<f64>,
    /// Time to the first visible content.
    ttft: Option<f64>,
    generation: Option<f64>,
    visible_generation: Option<f64>,
    output_tokens: Option<u64>,
    prompt_tokens: Option<u64>,
    tpot: Option<f64>,
    decode: Option<f64>,
    prefill: Option<f64>,
    tokens_per_chunk: Option<f64>,
}

impl Timings {
    fn of(obs: &StreamObservation, end: Instant) -> Self {
        let e2e = Some(ms(end.saturating_duration_since(obs.start)));
        let tfo = since(obs.first_output, obs.start);
        let ttft = since(obs.first_content, obs.start);
        let generation = e2e.zip(tfo).map(|(e, t)| e - t);
        let visible_generation = e2e.zip(ttft).map(|(e, t)| e - t);
        let output_tokens = obs.usage.map(|u| u.completion_tokens);
        let prompt_tokens = obs.usage.map(|u| u.prompt_tokens);
        // Both need at least two tokens and a positive generation time to mean anything.
        let after_first = output_tokens.filter(|n| *n >= 2).map(|n| (n - 1) as f64);
        let tpot = after_first.zip(generation.filter(|g| *g > 0.0)).map(|(n, g)| g / n);
        let decode = after_first.zip(generation.filter(|g| *g > 0.0)).map(|(n, g)| n / (g / 1000.0));
        let prefill = prompt_tokens.zip(tfo.filter(|t| *t > 0.0)).map(|(p, t)| p as f64 / (t / 1000.0));
        let chunks = obs.content_chunks + obs.reasoning_chunks;
        let tokens_per_chunk = output_tokens.filter(|_| chunks > 0).map(|n| n as f64 / f64::from(chunks));
        Self {
            e2e,
            tfo,
            ttft,
            generation,
            visible_generation,
            output_tokens,
            prompt_tokens,
            tpot,
            decode,
            prefill,
            tokens_per_chunk,
        }
    }
}

/// The latencies an SLO judges, from the request's own send.
struct Latencies {
    ttft: Option<f64>,
    tpot: Option<f64>,
    e2e: Option<f64>,
}

/// The request against its schedule: when it was meant to be sent and was,
/// its latencies from the schedule (open loop only), and its SLO's verdict.
struct OnSchedule {
    intended_send_ms: f64,
    actual_send_ms: f64,
    send_lag_ms: f64,
    ttft_from_schedule: Option<f64>,
    e2e_from_schedule: Option<f64>,
    slo_met: Option<bool>,
}

impl OnSchedule {
    fn of(obs: &StreamObservation, inputs: &RecordInputs<'_>, own: Latencies, eligible: bool) -> Self {
        let Latencies { ttft, tpot, e2e } = own;
        let intended_send_ms = ms(inputs.intended.saturating_duration_since(inputs.run_start));
        let actual_send_ms = ms(obs.start.saturating_duration_since(inputs.run_start));
        let send_lag_ms = actual_send_ms - intended_send_ms;
        let from_schedule = |v: Option<f64>| v.filter(|_| inputs.open_loop).map(|v| v + send_lag_ms);
        let (ttft_from_schedule, e2e_from_schedule) = (from_schedule(ttft), from_schedule(e2e));
        let slo_met = inputs.slo.map(|slo| {
            let (slo_ttft, slo_e2e) = match slo.from {
                SloFrom::Schedule if inputs.open_loop => (ttft_from_schedule, e2e_from_schedule),
                _ => (ttft, e2e),
            };
            eligible
                && slo.ttft_ms.is_none_or(|l| slo_ttft.is_some_and(|v| v <= l))
                && slo.tpot_ms.is_none_or(|l| tpot.is_some_and(|v| v <= l))
                && slo.e2e_ms.is_none_or(|l| slo_e2e.is_some_and(|v| v <= l))
        });
        Self { intended_send_ms, actual_send_ms, send_lag_ms, ttft_from_schedule, e2e_from_schedule, slo_met }
    }
}

/// `SO_TIMESTAMPNS` resolution mapped onto the monotonic clock (the two
/// clock reads of the mapping are well under a microsecond apart).
pub const STAMP_RESOLUTION_MS: f64 = 0.001;

/// How far a first content's arrival stamp may be off, ms
/// (`output::client_error`): the stamp's resolution when the kernel stamped
/// its read alone, the stream's median event gap when it shared its read
/// with the next event; `None` for a read-time stamp (the cell's read
/// delay bounds it, known only once the cell is done).
pub fn first_content_stamp_bound_ms(
    receive_clock: &str,
    shared_read: bool,
    chunk_gaps_us: &[u32],
) -> Option<f64> {
    if receive_clock != "kernel" {
        return None;
    }
    if !shared_read {
        return Some(STAMP_RESOLUTION_MS);
    }
    let mut gaps: Vec<u32> = chunk_gaps_us.iter().copied().filter(|g| *g > 0).collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_unstable();
    Some(f64::from(gaps[gaps.len() / 2]) / 1000.0)
}

impl RequestRecord {
    /// [`first_content_stamp_bound_ms`] of this record.
    pub fn stamp_bound_ms(&self) -> Option<f64> {
        first_content_stamp_bound_ms(&self.receive_clock, self.first_content_shared_read, &self.chunk_gaps_us)
    }

    /// Notes where a replayed request came from, and whether its output
    /// length was met.
    pub fn set_origin(&mut self, origin: &crate::workload::request::Origin) {
        self.trace_line = origin.trace_line;
        self.dataset_entry = origin.dataset_entry;
        self.session = origin.session;
        self.turn = origin.turn;
        self.requested_output_tokens = origin.requested_output_tokens;
        self.output_length_met =
            origin.requested_output_tokens.map(|asked| self.output_tokens == Some(asked));
        self.ideal_cached_tokens = origin.ideal_cached_tokens;
    }
}

fn receive_clock(reads: u32, kernel_stamped: u32) -> &'static str {
    match kernel_stamped {
        0 if reads == 0 => "none",
        0 => "read",
        k if k == reads => "kernel",
        _ => "mixed",
    }
}
