//! The simulated engine: ONE scheduler task that steps a continuous batch.
//!
//! Between steps, new requests join the waiting queue and move into the
//! running batch while it has room. Each step prefills up to the chunked
//! prefill budget of waiting prompt tokens (first come, first served) and
//! decodes one token (more with speculative decoding) for every sequence
//! past prefill. The step lasts as long as the performance model says for
//! that mix, and its tokens go out to each request as one event when it
//! ends. Steps are scheduled on absolute deadlines so timer rounding does
//! not accumulate into drift.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::jitter::Jitter;
use crate::metrics::Metrics;
use crate::perf_model::PerfModel;
use crate::prefix_cache::PrefixCache;
use crate::profile::SimProfile;
use crate::rng::SimRng;
use crate::tokenizer::PromptTokens;

/// A lag behind schedule longer than this is a hiccup (the process was not
/// scheduled), not timer rounding: the engine resynchronises instead of
/// bursting steps to catch up.
const MAX_CATCH_UP: Duration = Duration::from_millis(5);

/// One request handed to the engine.
pub struct EngineJob {
    pub prompt: PromptTokens,
    /// Tokens to generate (the reply plan's length; at least 1).
    pub output_tokens: u32,
    pub seed: u64,
    /// Where the engine sends this request's tokens, one event per step.
    pub events: mpsc::UnboundedSender<EngineEvent>,
}

/// Tokens produced for one request in one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineEvent {
    pub tokens: u32,
    /// Prompt tokens served from the prefix cache (same in every event).
    pub cached_tokens: u32,
}

/// The engine stopped (its task ended); the request cannot be served.
#[derive(Debug, thiserror::Error)]
#[error("the simulated engine has stopped")]
pub struct EngineStopped;

/// Submits requests to the engine task.
#[derive(Clone)]
pub struct EngineHandle {
    jobs: mpsc::UnboundedSender<EngineJob>,
    /// Requests submitted but not yet in the running batch (the HTTP side
    /// reads it to reject past `max-queue`).
    waiting: Arc<AtomicU64>,
}

impl EngineHandle {
    pub fn submit(&self, job: EngineJob) -> Result<(), EngineStopped> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        self.jobs.send(job).map_err(|_| {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            EngineStopped
        })
    }

    /// Requests waiting for a place in the running batch.
    pub fn waiting(&self) -> u64 {
        self.waiting.load(Ordering::Relaxed)
    }
}

/// Start the scheduler task on the current runtime.
pub fn start(profile: &SimProfile, metrics: Arc<Metrics>) -> (EngineHandle, JoinHandle<()>) {
    let (jobs, incoming) = mpsc::unbounded_channel();
    let waiting = Arc::new(AtomicU64::new(0));
    let scheduler = Scheduler {
        waiting_count: waiting.clone(),
        model: PerfModel::new(profile),
        jitter: Jitter::new(profile.step_jitter_pct, profile.seed),
        cache: PrefixCache::new(profile.prefix_cache, profile.prefix_cache_max_blocks),
        block_tokens: profile.prefix_cache_block_tokens,
        metrics,
        waiting: VecDeque::new(),
        running: Vec::new(),
    };
    let task = tokio::spawn(scheduler.run(incoming));
    (EngineHandle { jobs, waiting }, task)
}

/// A request in the running batch.
struct Sequence {
    job: EngineJob,
    cached_tokens: u32,
    prefill_left: u32,
    prefill_this_step: u32,
    decoding: bool,
    generated: u32,
    spec_rng: SimRng,
}

struct Scheduler {
    model: PerfModel,
    /// Run-to-run noise on step times (`step-jitter-pct`).
    jitter: Option<Jitter>,
    cache: PrefixCache,
    block_tokens: u32,
    metrics: Arc<Metrics>,
    waiting: VecDeque<EngineJob>,
    /// Shared with `EngineHandle`: submitted and not yet admitted or dropped.
    waiting_count: Arc<AtomicU64>,
    running: Vec<Sequence>,
}

impl Scheduler {
    async fn run(mut self, mut incoming: mpsc::UnboundedReceiver<EngineJob>) {
        let mut step_start = Instant::now();
        loop {
            if self.running.is_empty() && self.waiting.is_empty() {
                self.publish_gauges();
                match incoming.recv().await {
                    Some(job) => self.waiting.push_back(job),
                    None => return,
                }
                step_start = Instant::now();
            }
            while let Ok(job) = incoming.try_recv() {
                self.waiting.push_back(job);
            }
            // Clients that went away free their slot, as an abort would.
            let queued = self.waiting.len();
            self.waiting.retain(|job| !job.events.is_closed());
            self.waiting_count.fetch_sub((queued - self.waiting.len()) as u64, Ordering::Relaxed);
            self.running.retain(|seq| !seq.job.events.is_closed());
            self.admit();
            self.publish_gauges();
            if self.running.is_empty() {
                continue;
            }

            let deadline = step_start + self.plan_step();
            if deadline > Instant::now() {
                tokio::time::sleep_until(deadline).await;
            } else {
                // A step already due runs at once; the cooperative budget
                // still hands the thread to the HTTP side every so often,
                // which then sends the steps that piled up in one write.
                tokio::task::consume_budget().await;
            }
            let now = Instant::now();
            step_start = if now.saturating_duration_since(deadline) > MAX_CATCH_UP { now } else { deadline };
            self.finish_step();
        }
    }

    /// Move waiting requests into the running batch while it has room.
    fn admit(&mut self) {
        while self.running.len() < self.model.max_running {
            let Some(job) = self.waiting.pop_front() else { break };
            self.waiting_count.fetch_sub(1, Ordering::Relaxed);
            let cached_blocks = self.cache.cached_blocks(&job.prompt.block_hashes) as u32;
            // Like vLLM, the last prompt token is always computed, so a fully
            // cached prompt still takes one prefill token.
            let cached_tokens = (cached_blocks * self.block_tokens).min(job.prompt.count.saturating_sub(1));
            self.metrics.add(&self.metrics.prompt_tokens, u64::from(job.prompt.count));
            self.metrics.add(&self.metrics.prefix_cache_queries, u64::from(job.prompt.count));
            self.metrics.add(&self.metrics.prefix_cache_hits, u64::from(cached_tokens));
            self.running.push(Sequence {
                prefill_left: (job.prompt.count - cached_tokens).max(1),
                spec_rng: SimRng::for_purpose(job.seed, "spec-decode"),
                job,
                cached_tokens,
                prefill_this_step: 0,
                decoding: false,
                generated: 0,
            });
        }
    }

    /// Decide this step's prefill chunks and return how long it takes.
    fn plan_step(&mut self) -> Duration {
        let mut budget = self.model.prefill_budget;
        let mut prefill_work = 0.0;
        let mut decoding = 0;
        for seq in &mut self.running {
            seq.decoding = seq.prefill_left == 0;
            seq.prefill_this_step = 0;
            if seq.decoding {
                decoding += 1;
            } else if budget > 0 {
                seq.prefill_this_step = seq.prefill_left.min(budget);
                budget -= seq.prefill_this_step;
                let done = (seq.job.prompt.count - seq.cached_tokens).saturating_sub(seq.prefill_left)
                    + seq.cached_tokens;
                prefill_work += self.model.prefill_work(done, seq.prefill_this_step);
            }
        }
        let step = self.model.step_duration(decoding, prefill_work);
        match &mut self.jitter {
            Some(jitter) => jitter.apply(step),
            None => step,
        }
    }

    /// Hand out the step's tokens and retire finished sequences.
    fn finish_step(&mut self) {
        let mut generated_total = 0u64;
        for seq in &mut self.running {
            let tokens = if seq.decoding {
                let wanted = 1 + accepted_drafts(&self.model, &self.metrics, &mut seq.spec_rng);
                wanted.min(seq.job.output_tokens - seq.generated)
            } else if seq.prefill_this_step > 0 {
                seq.prefill_left -= seq.prefill_this_step;
                if seq.prefill_left > 0 {
                    continue;
                }
                self.cache.insert(&seq.job.prompt.block_hashes);
                // The step that finishes prefill also samples the first token.
                1
            } else {
                continue;
            };
            seq.generated += tokens;
            generated_total += u64::from(tokens);
            let event = EngineEvent { tokens, cached_tokens: seq.cached_tokens };
            // A closed receiver is noticed (and the sequence dropped) next step.
            let _ = seq.job.events.send(event);
        }
        self.metrics.add(&self.metrics.generation_tokens, generated_total);
        self.running.retain(|seq| seq.generated < seq.job.output_tokens);
    }

    fn publish_gauges(&self) {
        self.metrics.set(&self.metrics.running, self.running.len() as u64);
        self.metrics.set(&self.metrics.waiting, self.waiting.len() as u64);
    }
}

/// Speculative decoding: each of K draft tokens is accepted with the
/// acceptance rate, until the first rejection.
fn accepted_drafts(model: &PerfModel, metrics: &Metrics, rng: &mut SimRng) -> u32 {
    let k = model.spec_draft_tokens;
    if k == 0 {
        return 0;
    }
    let accepted = (0..k).take_while(|_| rng.chance(model.spec_acceptance)).count() as u32;
    metrics.add(&metrics.spec_drafts, 1);
    metrics.add(&metrics.spec_draft_tokens, u64::from(k));
    metrics.add(&metrics.spec_accepted_tokens, u64::from(accepted));
    accepted
}
