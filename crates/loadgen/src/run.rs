//! Running one cell: calibrate the prompt length, warm up, then send the
//! measured requests on schedule (closed or open loop) across the targets.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::error::CellError;
use crate::observe::failure::FailureClass;
use crate::observe::precision::{PrecisionWatch, StoppingRecord};
use crate::observe::record::{RecordInputs, RequestRecord, derive};
use crate::observe::saturation::{FlightLog, SaturationWatch};
use crate::output::ending::{EndReason, Ending};
use crate::output::record_log::{FAILURE_CLASSES, RecordLog, Stored};
use crate::output::tokens::{TokenAccount, TokenTally};
use crate::send::client::{endpoint, planned_body, request_body};
use crate::send::conversation as session;
use crate::send::http::{Endpoint, Payload, execute, execute_at};
use crate::send::liveness::Liveness;
use crate::send::pacer;
use crate::send::prepare::presize_fd_table;
use crate::send::sender::{self, SendQueue};
use crate::workload::agent_plan::AgentPlan;
use crate::workload::calibrate::{Calibration, calibrate};
use crate::workload::error_budget::ErrorBudget;
use crate::workload::prompt::{PromptBuilder, SplitMix64, marker, streams};
use crate::workload::request::Planned;
use crate::workload::session::SessionPlan;
use crate::workload::source::Source;
use crate::workload::spec::{Arrival, Balance, CellContext, CellSpec, Connect, Progress, Target};
use crate::workload::stages;

/// Everything a finished cell run produced, before it becomes an artifact.
pub struct RunOutput {
    /// Measured requests of all repeats, stored in request order.
    pub store: Stored,
    pub preparation: Preparation,
    pub calibration: Option<Calibration>,
    pub warmup_completed: u32,
    pub warmup_failed: u32,
    pub started_at: SystemTime,
    pub finished_at: SystemTime,
    /// The artifact's `traffic`: where the requests came from (`null`:
    /// synthetic prompts), with per-turn figures for sessions.
    pub traffic: serde_json::Value,
    /// Open loop: how often the in-flight cap held a due request back.
    pub cap_holds: Option<crate::output::offered::CapHolds>,
    /// Where the cell sits on a load axis, as measured.
    pub offered: crate::output::offered::OfferedLoad,
    /// How the measurement ended.
    pub ending: Ending,
    /// The stopping rule's looks and intervals, when the cell has one.
    pub stopping: Option<StoppingRecord>,
    /// `steady-load`: the unmeasured requests sent around the measured ones.
    pub load_margins: Option<LoadMargins>,
    /// The tokenizer, the template overhead, and the server's account of
    /// the prompts joined to the plan (empty: nothing to say).
    pub tokens: TokenAccount,
    /// Agent tasks judged as jobs (agent traffic only).
    pub jobs: Option<crate::output::jobs::Jobs>,
    /// With `keep_answers_bytes`: the measured requests' answers.
    pub answers: Option<crate::output::answers::Answers>,
}

/// The artifact's `load_margins`: with `steady-load`, the unmeasured
/// requests sent on the cell's own schedule before the measured ones
/// (`lead`, its `warmup-requests`) and after them until every measured
/// request had ended (`tail`), over all repeats.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadMargins {
    pub lead: u64,
    pub tail: u64,
}

/// Whether the cell keeps its open loop's load on around the measured requests.
/// Only an open loop of its own arrivals (synthetic prompts or a dataset):
/// a trace's schedule is the trace's, stages change the load on purpose.
fn steady_load(spec: &CellSpec) -> bool {
    use crate::workload::traffic::Traffic;
    spec.options.steady_load == Some(true)
        && !matches!(spec.arrival, Arrival::ClosedLoop)
        && spec.stages.is_empty()
        && matches!(spec.traffic, Traffic::Synthetic | Traffic::Dataset(_))
}

/// How a stopping rule ended the run (at a look, at its time bound, or at
/// `max-requests` still imprecise), and its record; `None`s without a rule.
fn stopping_outcome(sink: &Sink, max_requests: u32) -> (Option<Ending>, Option<StoppingRecord>) {
    let Some(watch) = sink.precision.as_ref().and_then(|w| w.lock().ok()) else { return (None, None) };
    let unsent = u64::from(max_requests).saturating_sub(sink.ended());
    let ending = match sink.halted.lock().ok().and_then(|mut h| h.take()) {
        Some(ending) => Ending { unsent, repeat: Some(0), ..ending },
        None => Ending {
            reason: EndReason::MaxRequests,
            repeat: Some(0),
            detail: format!("max-requests reached before the precision: {}", watch.imprecise()),
            ..Ending::completed()
        },
    };
    (Some(ending), Some(watch.record()))
}

/// What keeps the cell from running as specified, caught before any request.
pub fn validate(spec: &CellSpec, targets: &[Target]) -> Result<(), CellError> {
    if targets.is_empty() {
        return Err(CellError::Invalid(format!("cell `{}` has no target server", spec.name)));
    }
    let invalid =
        |problem: &dyn std::fmt::Display| Err(CellError::Invalid(format!("cell `{}`: {problem}", spec.name)));
    if spec.concurrency == 0 {
        return invalid(&"concurrency must be at least 1");
    }
    if spec.repeat == 0 {
        return invalid(&"repeat must be at least 1");
    }
    if spec.request_timeout_ms == 0 {
        return invalid(&"request_timeout_ms must be positive");
    }
    if let Arrival::Poisson { rate_per_s } | Arrival::Constant { rate_per_s } = spec.arrival
        && !(rate_per_s.is_finite() && rate_per_s > 0.0)
    {
        return invalid(&format_args!("arrival rate must be a positive number, got {rate_per_s}"));
    }
    if !(spec.extra_body.is_null() || spec.extra_body.is_object()) {
        return invalid(&"extra_body must be a JSON object");
    }
    if let crate::workload::traffic::Traffic::Dataset(d) = &spec.traffic {
        if d.bounds_tokens() && spec.tokenizer.is_none() {
            return invalid(
                &"`min-prompt-tokens` and `max-prompt-tokens` count the model's own tokens: give its server a `tokenizer`",
            );
        }
        if d.truncate && d.max_prompt_tokens.is_none() {
            return invalid(&"`truncate` cuts prompts to `max-prompt-tokens`: set it");
        }
    }
    if let Err(problem) = stages::check(spec) {
        return invalid(&problem);
    }
    if let Some(rule) = &spec.stopping {
        if let Err(problem) = rule.check() {
            return invalid(&problem);
        }
        let conflict = if spec.repeat > 1 {
            Some("a stopping rule measures one run: drop `repeat`")
        } else if !spec.stages.is_empty() {
            Some("a staged cell's stages fix its length: drop `until`")
        } else if matches!(spec.traffic, crate::workload::traffic::Traffic::Sessions(_)) {
            Some("sessions cannot stop mid-conversation: drop `until`")
        } else {
            None
        };
        if let Some(problem) = conflict {
            return invalid(&problem);
        }
    }
    Ok(())
}

/// How long before its time an open-loop request is prepared (prompt and
/// body built, connection taken) for the sender thread. It holds its
/// concurrency slot from then.
const PREPARE_AHEAD: Duration = Duration::from_millis(5);

/// At most this many connections per target are opened ahead for an
/// open-loop cell (its cap may be far above what it ever has in flight);
/// beyond them the sender path opens each one before its request is due.
const OPEN_LOOP_AHEAD: u32 = 256;

/// What was made ready before the clocks started.
#[derive(Debug, Default)]
pub struct Preparation {
    /// Descriptor slots the process's table holds (see [`crate::send::prepare`]).
    pub fd_table_slots: usize,
    pub ahead: Vec<AheadConnection>,
}

/// A connection opened before a measured run's clock started.
#[derive(Debug)]
pub struct AheadConnection {
    pub repeat: u32,
    pub target: String,
    pub connection_id: u64,
    /// TCP connect and, for https, the TLS handshake.
    pub connect_ms: f64,
    /// The TLS handshake's part of `connect_ms` (https only).
    pub tls_handshake_ms: Option<f64>,
}

/// Which part of the measurement a request belongs to.
#[derive(Debug, Clone, Copy)]
struct Origin {
    repeat: u32,
    stage: Option<u32>,
    /// Sent on an open-loop schedule.
    open_loop: bool,
}

/// Shared state of the requests in flight.
struct Runner {
    spec: CellSpec,
    targets: Vec<Target>,
    /// One per target, holding its idle keep-alive connections.
    endpoints: Vec<Endpoint>,
    balance: Balance,
    outstanding: Vec<AtomicU32>,
    next_round_robin: AtomicU64,
    prompts: PromptBuilder,
    /// What each request is (synthetic prompts, a trace, a dataset, sessions).
    source: Source,
    timeout: Duration,
    /// Open-loop requests that found the in-flight cap full when due (only
    /// measured requests are sent open loop: warmup is closed loop).
    cap_held: AtomicU64,
    /// The longest of those waits, in µs.
    cap_longest_hold_us: AtomicU64,
    /// Set when a rule stopped the measurement early (no later repeat runs).
    stopped: std::sync::Mutex<Option<Ending>>,
    /// The first index of `steady-load`'s unmeasured requests.
    margin_base: u64,
    /// `steady-load`'s unmeasured requests, over all repeats.
    margins: std::sync::Mutex<LoadMargins>,
    /// With a tokenizer: the tokens the chat template adds on the server.
    template_overhead: Option<u64>,
    /// Names this cell run's requests in their `X-Request-Id` (`anvil-{tag}-{index}`).
    request_tag: String,
    /// Sender lanes of an open loop: one per load-generator worker.
    sender_lanes: usize,
    /// With `keep_answers_bytes`: where the measured requests' answers go.
    answers: Option<crate::output::answers::AnswerLog>,
}

impl Runner {
    fn pick_target(&self) -> usize {
        match self.balance {
            Balance::RoundRobin => {
                (self.next_round_robin.fetch_add(1, Ordering::Relaxed) % self.targets.len() as u64) as usize
            }
            Balance::LeastOutstanding => (0..self.targets.len())
                .min_by_key(|i| self.outstanding[*i].load(Ordering::Relaxed))
                .unwrap_or(0),
        }
    }

    /// Sends request `index` and returns its record and when it ended; with
    /// a sender `queue`, the sender thread sends it at `intended`.
    async fn send(
        &self,
        index: u64,
        origin: Origin,
        run_start: Instant,
        intended: Instant,
        queue: Option<&SendQueue>,
    ) -> (RequestRecord, Instant) {
        let t = self.pick_target();
        self.outstanding[t].fetch_add(1, Ordering::Relaxed);
        let planned = self.source.plan(index, &self.prompts, self.spec.max_tokens, self.spec.seed);
        let (rec, finished, _) =
            self.send_planned(index, origin, run_start, intended, queue, planned, t).await;
        (rec, finished)
    }

    /// Sends `planned` as request `index` to target `t`; also returns the
    /// visible reply (a session's next turn resends it).
    #[allow(clippy::too_many_arguments)]
    async fn send_planned(
        &self,
        index: u64,
        origin: Origin,
        run_start: Instant,
        intended: Instant,
        queue: Option<&SendQueue>,
        planned: Planned,
        t: usize,
    ) -> (RequestRecord, Instant, String) {
        let marker = marker(self.spec.seed, index);
        // Replayed prompts are the trace's or dataset's own: no canary instruction was added.
        let synthetic = planned.origin == crate::workload::request::Origin::default();
        let body = planned_body(
            &self.spec,
            &planned.content,
            index,
            &marker,
            planned.max_tokens,
            planned.ignore_eos,
        );
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let request_id = format!("anvil-{}-{index}", self.request_tag);
        let payload = Payload { body: &body, request_id: Some(&request_id) };
        let (obs, finished) = match queue {
            Some(queue) => {
                let on_demand = self.spec.connect == Connect::OnDemand;
                execute_at(
                    &self.endpoints[t],
                    self.spec.api,
                    payload,
                    self.timeout,
                    queue,
                    intended,
                    on_demand,
                )
                .await
            }
            None => execute(&self.endpoints[t], self.spec.api, payload, self.timeout).await,
        };
        self.outstanding[t].fetch_sub(1, Ordering::Relaxed);
        if let Some(answers) = &self.answers {
            let item = self.source.item_id(planned.origin.dataset_entry);
            answers.keep(index, origin.repeat, &planned.content, item, &obs);
        }
        let reply = if planned.origin.session.is_some() { obs.capture.clone() } else { String::new() };
        let inputs = RecordInputs {
            index,
            repeat: origin.repeat,
            target: &self.targets[t].label,
            planned_context_tokens: planned.origin.planned_input_tokens.unwrap_or(self.spec.context_tokens),
            marker: (self.spec.canaries && synthetic).then_some(marker.as_str()),
            response_words: if synthetic { self.spec.response_words } else { 0 },
            policy: self.spec.controlled_output_policy,
            slo: self.spec.slo.as_ref(),
            run_start,
            intended,
            open_loop: origin.open_loop,
            stage: origin.stage,
        };
        let mut rec = derive(obs, &inputs, finished);
        rec.set_origin(&planned.origin);
        rec.request_id = Some(request_id);
        if let (Some(content), Some(overhead)) = (planned.exact_tokens, self.template_overhead) {
            rec.prompt_tokens_expected = Some(content + overhead);
            rec.prompt_length_met = rec.prompt_tokens.map(|got| got == content + overhead);
        }
        (rec, finished, reply)
    }
}

/// A session turn goes through the runner like any request, then to the sink.
struct SessionTurns {
    runner: Arc<Runner>,
    sink: Arc<Sink>,
    repeat: u32,
}

impl session::TurnSender for SessionTurns {
    fn plan(&self, index: u64) -> Planned {
        self.runner.source.plan(
            index,
            &self.runner.prompts,
            self.runner.spec.max_tokens,
            self.runner.spec.seed,
        )
    }

    async fn send_turn(
        &self,
        index: u64,
        run_start: Instant,
        intended: Instant,
        planned: Planned,
    ) -> (RequestRecord, Instant, String) {
        let origin = Origin { repeat: self.repeat, stage: None, open_loop: false };
        let t = self.runner.pick_target();
        self.runner.outstanding[t].fetch_add(1, Ordering::Relaxed);
        self.runner.send_planned(index, origin, run_start, intended, None, planned, t).await
    }

    fn finished(&self, rec: RequestRecord) {
        self.sink.finished(rec);
    }
}

/// Counts measured requests for the progress callback.
struct ProgressCounter {
    tx: mpsc::UnboundedSender<Progress>,
    total: u32,
    done: AtomicU32,
    failed: AtomicU32,
    tokens: AtomicU64,
    since: Instant,
    /// When progress was last sent, ms after `since`.
    shown_ms: AtomicU64,
}

/// Progress goes to the caller at most this often (and at the last request).
const PROGRESS_EVERY_MS: u64 = 20;

impl ProgressCounter {
    fn record(&self, rec: &RequestRecord) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let failed = self.failed.fetch_add(u32::from(!rec.performance_eligible), Ordering::Relaxed)
            + u32::from(!rec.performance_eligible);
        let tokens = self.tokens.fetch_add(rec.output_tokens.unwrap_or(0), Ordering::Relaxed)
            + rec.output_tokens.unwrap_or(0);
        let elapsed = self.since.elapsed();
        // Every request woke the caller's thread; a few times a second is
        // enough for a progress line (the last one always goes).
        let at_ms = elapsed.as_millis() as u64;
        let due = done >= self.total || at_ms >= self.shown_ms.load(Ordering::Relaxed) + PROGRESS_EVERY_MS;
        if !due {
            return;
        }
        self.shown_ms.store(at_ms, Ordering::Relaxed);
        let elapsed = elapsed.as_secs_f64();
        let tok_s = if elapsed > 0.0 { tokens as f64 / elapsed } else { 0.0 };
        let _ = self.tx.send(Progress { done, total: self.total, failed, tok_s });
    }
}

/// Where a phase's finished records go.
struct Sink {
    log: Option<Arc<RecordLog>>,
    progress: Option<Arc<ProgressCounter>>,
    completed: AtomicU32,
    failed: AtomicU32,
    /// The stopping rule's watch over the measured requests.
    precision: Option<std::sync::Mutex<PrecisionWatch>>,
    /// Set when a stopping rule ended the run: no more requests are sent;
    /// those in flight end and are recorded.
    halted: std::sync::Mutex<Option<Ending>>,
    halt: std::sync::atomic::AtomicBool,
    /// The server's account of the records' tokens, summed.
    tokens: TokenTally,
    /// `abort-on-errors`: the share of failed requests that ends the run.
    error_budget: Option<ErrorBudget>,
    /// Failed records by class (`FAILURE_CLASSES` order), for the budget's reason.
    failures_by_class: [AtomicU32; FAILURE_CLASSES.len()],
    /// `stall-timeout`: the cell's last-byte clock, read when a request stalls.
    liveness: Option<Arc<Liveness>>,
    /// When the ended requests were sent and how long they took, for the
    /// over-saturation rule.
    flights: FlightLog,
}

/// The rules that may end a measured phase from its records.
#[derive(Default)]
struct SinkRules {
    precision: Option<PrecisionWatch>,
    error_budget: Option<ErrorBudget>,
    liveness: Option<Arc<Liveness>>,
}

impl Sink {
    fn new(log: Option<Arc<RecordLog>>, progress: Option<Arc<ProgressCounter>>) -> Arc<Self> {
        Self::watching(log, progress, SinkRules::default())
    }

    fn watching(
        log: Option<Arc<RecordLog>>,
        progress: Option<Arc<ProgressCounter>>,
        rules: SinkRules,
    ) -> Arc<Self> {
        let SinkRules { precision, error_budget, liveness } = rules;
        Arc::new(Self {
            log,
            progress,
            completed: AtomicU32::new(0),
            failed: AtomicU32::new(0),
            precision: precision.map(std::sync::Mutex::new),
            halted: std::sync::Mutex::new(None),
            halt: Default::default(),
            tokens: TokenTally::default(),
            error_budget,
            liveness,
            failures_by_class: Default::default(),
            flights: FlightLog::default(),
        })
    }

    /// Whether a stopping rule has ended the run (checked before each send).
    fn halted(&self) -> bool {
        self.halt.load(Ordering::Relaxed)
    }

    /// Ends the run by a stopping rule; the first reason given stands.
    fn stop(&self, ending: Ending) {
        if let Ok(mut halted) = self.halted.lock()
            && halted.is_none()
        {
            *halted = Some(ending);
            self.halt.store(true, Ordering::Relaxed);
        }
    }

    /// Requests ended so far, failed or not.
    fn ended(&self) -> u64 {
        u64::from(self.completed.load(Ordering::Relaxed)) + u64::from(self.failed.load(Ordering::Relaxed))
    }

    /// Counts the record and hands it to the writer thread: nothing of it
    /// stays here once the request is over.
    fn finished(&self, rec: RequestRecord) {
        let counter = if rec.performance_eligible { &self.completed } else { &self.failed };
        counter.fetch_add(1, Ordering::Relaxed);
        // Every ended request, failed or not, as `ended()` counts them; by
        // when it was due, as the watch counts arrivals.
        self.flights.ended(rec.intended_send_ms);
        if let Some(p) = &self.progress {
            p.record(&rec);
        }
        self.tokens.take(&rec);
        let precise = self.precision.as_ref().and_then(|watch| {
            let mut watch = watch.lock().ok()?;
            watch.take(&rec)?.precise_detail()
        });
        if let Some(detail) = precise {
            self.stop(Ending { reason: EndReason::Precise, detail, ..Ending::completed() });
        }
        if let Some(failure) = &rec.failure
            && let Some(code) = FAILURE_CLASSES.iter().position(|c| *c == failure.class)
        {
            self.failures_by_class[code].fetch_add(1, Ordering::Relaxed);
        }
        if let Some(budget) = &self.error_budget
            && !self.halted()
        {
            self.judge_errors(budget);
        }
        if rec.failure.as_ref().is_some_and(|f| f.class == FailureClass::Stalled)
            && let Some(liveness) = self.liveness.as_ref().filter(|l| l.server_stalled())
        {
            let detail = format!(
                "a request got no byte for {} ms, and no request of the cell received one for {} ms",
                liveness.idle.unwrap_or_default().as_millis(),
                liveness.silence().as_millis()
            );
            self.stop(Ending { reason: EndReason::Stalled, detail, ..Ending::completed() });
        }
        if let Some(log) = &self.log {
            log.push(rec);
        }
    }
}

impl Sink {
    /// Stop the run once its failed requests spend the error budget.
    fn judge_errors(&self, budget: &ErrorBudget) {
        let counts: Vec<(&str, u64)> = FAILURE_CLASSES
            .iter()
            .zip(&self.failures_by_class)
            .map(|(class, n)| (class.as_str(), u64::from(n.load(Ordering::Relaxed))))
            .filter(|(_, n)| *n > 0)
            .collect();
        let failed: u64 = counts.iter().map(|(_, n)| n).sum();
        let ended = self.ended();
        if !budget.spent(failed, ended) {
            return;
        }
        let classes: Vec<String> = counts.iter().map(|(class, n)| format!("{class} {n}")).collect();
        let detail = format!(
            "error storm: {failed} of {ended} measured requests failed ({:.0}%; `abort-on-errors` allows under {:.0}% after {}): {}",
            failed as f64 / ended as f64 * 100.0,
            budget.share * 100.0,
            budget.after,
            classes.join(", ")
        );
        self.stop(Ending { reason: EndReason::ErrorStorm, detail, ..Ending::completed() });
    }

    /// The ending the sink's own rules (error budget, stall) gave, when no
    /// stopping rule's record takes it.
    fn rule_ending(&self, planned: u64, repeat: u32) -> Option<Ending> {
        let halted = self.halted.lock().ok()?.clone()?;
        matches!(halted.reason, EndReason::ErrorStorm | EndReason::Stalled).then(|| Ending {
            unsent: planned.saturating_sub(self.ended()),
            repeat: Some(repeat),
            ..halted
        })
    }
}

/// Where a phase's request indices come from.
enum Indices {
    /// `first..first + count`, in order: a phase with a request budget.
    Budget { first: u64, count: u32 },
    /// As many as the phase sends before `until`, from a counter the run's
    /// stages share (a stage's length is a time, not a count).
    Until { next: Arc<AtomicU64>, until: Instant },
}

/// What one phase sends and how.
struct Load {
    arrival: Arrival,
    /// Closed loop: the workers; open loop: the in-flight cap.
    concurrency: u32,
    /// Open loop: when each request is due (none in closed loop).
    arrivals: Schedule,
    indices: Indices,
    /// Closed loop: when the workers mean to send their first requests.
    start: Instant,
    /// Open loop with `steady-load`: the unmeasured requests around the measured ones.
    margins: Option<Margins>,
}

/// `steady-load`: the open loop's schedule starts `lead` arrivals before
/// the measured requests and goes on after them, unmeasured, until every
/// measured request has ended, so the measured ones see the load of the
/// long run and not an idle server's start or its drain.
struct Margins {
    lead: u32,
    measured: u32,
    /// The first index of the unmeasured requests (their prompts are their own).
    first_unmeasured: u64,
    /// Where their records go: counted, never logged.
    sink: Arc<Sink>,
    /// Unmeasured requests sent after the measured ones, for the artifact.
    tail_sent: Arc<AtomicU64>,
}

/// Sends `count` requests starting at index `first` on the given schedule.
async fn run_phase(
    runner: &Arc<Runner>,
    first: u64,
    count: u32,
    repeat: u32,
    arrival: Arrival,
    sink: &Arc<Sink>,
) -> anyhow::Result<()> {
    let open_loop = !matches!(arrival, Arrival::ClosedLoop);
    // Threads and timetables are ready before the run's clock starts.
    let mode = pacer::mode();
    let queue =
        if open_loop && mode == pacer::Mode::Sender { sender::spawn(runner.sender_lanes) } else { None };
    let steady = open_loop && steady_load(&runner.spec) && sink.log.is_some();
    let lead = if steady { runner.spec.warmup_requests } else { 0 };
    let schedule_start = Instant::now();
    let arrivals = match (open_loop, runner.source.schedule()) {
        // A trace's requests are due at their recorded times.
        (true, Some(trace)) => Schedule::trace(schedule_start, trace.requests()),
        // With steady load: the lead, the measured requests, and as many again after them at most.
        (true, None) if steady => {
            let planned = lead.saturating_add(count.saturating_mul(2));
            Schedule::gaps(schedule_start, planned, arrival, runner.spec.seed, repeat)
        }
        (true, None) => Schedule::gaps(schedule_start, count, arrival, runner.spec.seed, repeat),
        (false, _) => Schedule::listed(schedule_start, Vec::new()),
    };
    // The measured run's clock starts at its first measured request's arrival.
    let run_start = arrivals.peek_nth(u64::from(lead), runner.source.schedule()).unwrap_or(schedule_start);
    let tail_sent = Arc::new(AtomicU64::new(0));
    let margins = steady.then(|| Margins {
        lead,
        measured: count,
        first_unmeasured: runner.margin_base + u64::from(repeat) * (u64::from(lead) + 2 * u64::from(count)),
        sink: Sink::new(None, None),
        tail_sent: tail_sent.clone(),
    });
    let load = Load {
        arrival,
        concurrency: runner.spec.concurrency,
        arrivals,
        indices: Indices::Budget { first, count },
        start: run_start,
        margins,
    };
    let mut tasks: JoinSet<()> = JoinSet::new();
    let origin = Origin { repeat, stage: None, open_loop };
    let ended_before = sink.ended();
    if steady && let Ok(mut margins) = runner.margins.lock() {
        margins.lead += u64::from(lead);
    }
    let deadline = spawn_deadline(runner, sink, run_start);
    launch(runner, load, origin, run_start, queue.as_ref(), &mut tasks, sink).await?;
    join_all(tasks).await?;
    if let Some(deadline) = deadline {
        deadline.abort();
    }
    if steady && let Ok(mut margins) = runner.margins.lock() {
        margins.tail += tail_sent.load(Ordering::Relaxed);
    }
    // What a stop left undone: sent but cancelled in flight.
    if let Ok(mut stopped) = runner.stopped.lock()
        && let Some(ending) = stopped.as_mut().filter(|e| e.repeat == Some(repeat))
    {
        let sent = u64::from(count) - ending.unsent;
        ending.cancelled = sent.saturating_sub(sink.ended() - ended_before);
    }
    Ok(())
}

/// A stopping rule's time bound (`max-duration`): a task that stops the
/// run's sends at it; `None` without one.
fn spawn_deadline(
    runner: &Runner,
    sink: &Arc<Sink>,
    run_start: Instant,
) -> Option<tokio::task::JoinHandle<()>> {
    let ms = runner.spec.stopping.as_ref()?.max_duration_ms.filter(|_| sink.precision.is_some())?;
    let sink = sink.clone();
    Some(tokio::spawn(async move {
        tokio::time::sleep_until((run_start + Duration::from_millis(ms)).into()).await;
        let detail = format!("max-duration ({ms} ms) ran out before the precision was reached");
        sink.stop(Ending {
            reason: EndReason::MaxDuration,
            at_ms: Some(ms as f64),
            detail,
            ..Ending::completed()
        });
    }))
}

/// One measured run of a staged cell: each stage's load in its window,
/// one after another on one clock (see [`crate::workload::stages`]).
async fn run_stages(
    runner: &Arc<Runner>,
    repeat: u32,
    next: &Arc<AtomicU64>,
    sink: &Arc<Sink>,
) -> anyhow::Result<()> {
    let (_, any_open) = stages::widest(&runner.spec);
    let queue = if any_open && pacer::mode() == pacer::Mode::Sender {
        sender::spawn(runner.sender_lanes)
    } else {
        None
    };
    let run_start = Instant::now();
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut start = run_start;
    for (i, stage) in (0u32..).zip(&runner.spec.stages) {
        let duration = Duration::from_millis(stage.duration_ms);
        let until = start + duration;
        let open_loop = !matches!(stage.arrival, Arrival::ClosedLoop);
        let arrivals = if open_loop {
            stages::arrivals_in(start, duration, stage.arrival, runner.spec.seed, repeat, i)
        } else {
            // Closed-loop workers start with their window.
            tokio::time::sleep_until(start.into()).await;
            Vec::new()
        };
        let arrivals = Schedule::listed(start, arrivals);
        let load = Load {
            arrival: stage.arrival,
            concurrency: stage.concurrency,
            arrivals,
            indices: Indices::Until { next: next.clone(), until },
            start,
            margins: None,
        };
        let origin = Origin { repeat, stage: Some(i), open_loop };
        launch(runner, load, origin, run_start, queue.as_ref(), &mut tasks, sink).await?;
        start = until;
    }
    join_all(tasks).await
}

async fn join_all(mut tasks: JoinSet<()>) -> anyhow::Result<()> {
    while let Some(done) = tasks.join_next().await {
        match done {
            // Cancelled by a stopping rule: counted in the ending, not recorded.
            Err(e) if e.is_cancelled() => {}
            done => done.context("a request task panicked")?,
        }
    }
    Ok(())
}

/// Starts `load`'s requests as tasks in `tasks`: closed loop, its workers
/// (at once); open loop, each request at its arrival (returns after the last).
async fn launch(
    runner: &Arc<Runner>,
    load: Load,
    origin: Origin,
    run_start: Instant,
    queue: Option<&SendQueue>,
    tasks: &mut JoinSet<()>,
    sink: &Arc<Sink>,
) -> anyhow::Result<()> {
    match load.arrival {
        Arrival::ClosedLoop => {
            spawn_workers(runner, load, origin, run_start, tasks, sink);
            Ok(())
        }
        Arrival::Poisson { .. } | Arrival::Constant { .. } => {
            send_on_schedule(runner, load, origin, run_start, queue, tasks, sink).await
        }
    }
}

impl Indices {
    /// A closed-loop worker's next request index (`taken`: those the
    /// workers took from a budget); `None` once the budget is spent or the
    /// stage's window is over.
    fn next_for_worker(&self, taken: &AtomicU64) -> Option<u64> {
        match self {
            Indices::Budget { first, count } => {
                let k = taken.fetch_add(1, Ordering::Relaxed);
                (k < u64::from(*count)).then(|| first + k)
            }
            Indices::Until { next, until } => {
                (Instant::now() < *until).then(|| next.fetch_add(1, Ordering::Relaxed))
            }
        }
    }
}

/// Closed loop: starts the load's workers, each sending its next request
/// as soon as its previous one ended, until the indices run out or a rule
/// halts the run.
fn spawn_workers(
    runner: &Arc<Runner>,
    load: Load,
    origin: Origin,
    run_start: Instant,
    tasks: &mut JoinSet<()>,
    sink: &Arc<Sink>,
) {
    let workers = match &load.indices {
        Indices::Budget { count, .. } => load.concurrency.min(*count),
        Indices::Until { .. } => load.concurrency,
    };
    let start = load.start;
    let indices = Arc::new(load.indices);
    let taken = Arc::new(AtomicU64::new(0));
    for _ in 0..workers {
        let (runner, indices, taken, sink) = (runner.clone(), indices.clone(), taken.clone(), sink.clone());
        tasks.spawn(async move {
            // A closed-loop worker means to send as soon as its previous request ends.
            let mut intended = start;
            while !sink.halted() {
                let Some(index) = indices.next_for_worker(&taken) else { break };
                let (rec, finished) = runner.send(index, origin, run_start, intended, None).await;
                intended = finished;
                sink.finished(rec);
            }
        });
    }
}

/// Open loop: sends each of the load's arrivals when it is due, each as a
/// task under the in-flight cap; returns after the last is sent, or when a
/// rule halts the run, the server is found over-saturated, or (`steady-load`)
/// every measured request has ended.
async fn send_on_schedule(
    runner: &Arc<Runner>,
    load: Load,
    origin: Origin,
    run_start: Instant,
    queue: Option<&SendQueue>,
    tasks: &mut JoinSet<()>,
    sink: &Arc<Sink>,
) -> anyhow::Result<()> {
    let first = match &load.indices {
        Indices::Budget { first, .. } => *first,
        Indices::Until { next, .. } => next.fetch_add(load.arrivals.len(), Ordering::Relaxed),
    };
    let cap = Arc::new(Semaphore::new(load.concurrency as usize));
    let trace = runner.source.schedule();
    let mut arrivals = load.arrivals;
    // The older pacer thread (a comparison path) takes the list up front.
    let mut paced = match pacer::mode() == pacer::Mode::Thread {
        true => {
            let mut ahead = arrivals.clone();
            pacer::spawn(std::iter::from_fn(|| ahead.next(trace)).collect())
        }
        false => None,
    };
    // A budgeted open loop of its own arrivals may stop when clearly
    // past capacity (a trace's arrivals are the trace's to keep).
    let watched = runner.spec.options.stop_when_saturated == Some(true)
        && matches!(load.indices, Indices::Budget { .. })
        && load.margins.is_none()
        && runner.source.schedule().is_none();
    if watched {
        sink.flights.reset();
    }
    let (planned, ended_before) = (arrivals.len(), sink.ended());
    let mut watch = watched.then(|| LoadWatch {
        watch: SaturationWatch::default(),
        arrival: load.arrival,
        run_start,
        planned,
        ended_before,
        repeat: origin.repeat,
    });
    for k in 0u64.. {
        let Some(intended) = arrivals.next(trace) else { break };
        wait_until_due(intended, queue, &mut paced).await?;
        if sink.halted() {
            break;
        }
        // Which request this arrival is, and where its record goes.
        let Some((index, to)) = route(load.margins.as_ref(), first, k, sink, ended_before) else {
            // Every measured request has ended: the tail's work is done.
            tasks.abort_all();
            break;
        };
        if let Some(watch) = &mut watch
            && let Some(ending) = watch.look(runner, sink, k, intended)
        {
            tasks.abort_all();
            if let Ok(mut stopped) = runner.stopped.lock() {
                *stopped = Some(ending);
            }
            break;
        }
        let permit = take_slot(runner, &cap).await?;
        let (runner, sink, queue) = (runner.clone(), to.clone(), queue.cloned());
        tasks.spawn(async move {
            let (rec, _) = runner.send(index, origin, run_start, intended, queue.as_ref()).await;
            drop(permit);
            sink.finished(rec);
        });
        // A finished task keeps its memory (the size of its future,
        // ~4 KB) until it is joined: join as we go, or a 100,000-request
        // cell holds ~400 MB of finished tasks (benches/schedule.rs).
        while let Some(done) = tasks.try_join_next() {
            done.context("a request task panicked")?;
        }
    }
    Ok(())
}

/// Waits until an arrival is to be handed on: with the sender thread, a
/// little ahead of `intended` (it sends at `intended`); with the pacer
/// thread, until it releases the arrival; else until `intended`.
async fn wait_until_due(
    intended: Instant,
    queue: Option<&SendQueue>,
    paced: &mut Option<mpsc::UnboundedReceiver<usize>>,
) -> anyhow::Result<()> {
    match (queue, paced) {
        // Prepared ahead; the sender thread sends at `intended`.
        (Some(_), _) => {
            let ahead = intended.checked_sub(PREPARE_AHEAD).unwrap_or(intended);
            tokio::time::sleep_until(ahead.into()).await;
        }
        (None, Some(released)) => {
            released.recv().await.context("the pacer thread stopped early")?;
        }
        (None, None) => tokio::time::sleep_until(intended.into()).await,
    }
    Ok(())
}

/// Arrival `k`'s request index and the sink of its record: without
/// `steady-load` margins, measured request `first + k`; with them, the
/// lead's and the tail's arrivals are unmeasured. `None` when the tail is
/// no longer needed: every measured request (counted from `ended_before`) has ended.
fn route<'a>(
    margins: Option<&'a Margins>,
    first: u64,
    k: u64,
    sink: &'a Arc<Sink>,
    ended_before: u64,
) -> Option<(u64, &'a Arc<Sink>)> {
    let Some(m) = margins else { return Some((first + k, sink)) };
    let (lead, measured) = (u64::from(m.lead), u64::from(m.measured));
    if k < lead {
        Some((m.first_unmeasured + k, &m.sink))
    } else if k < lead + measured {
        Some((first + k - lead, sink))
    } else if sink.ended() - ended_before >= measured {
        None
    } else {
        m.tail_sent.fetch_add(1, Ordering::Relaxed);
        Some((m.first_unmeasured + k, &m.sink))
    }
}

/// The over-saturation rule over one budgeted open loop of its own arrivals.
struct LoadWatch {
    watch: SaturationWatch,
    arrival: Arrival,
    run_start: Instant,
    /// The loop's arrivals, for the ending's `unsent`.
    planned: u64,
    /// Requests the sink had ended before the loop began.
    ended_before: u64,
    repeat: u32,
}

impl LoadWatch {
    /// At arrival `k` (due at `intended`), when a look is due: the ending
    /// that stops the run if the server is clearly past capacity. The clock
    /// is read only here, for a watched loop: this is the send path.
    fn look(&mut self, runner: &Runner, sink: &Sink, k: u64, intended: Instant) -> Option<Ending> {
        let t = self.run_start.elapsed().as_secs_f64();
        if !self.watch.due(t) {
            return None;
        }
        let cap_held = runner.cap_held.load(Ordering::Relaxed) > 0;
        let due = arrivals_due(self.arrival, k, t, intended, self.run_start, cap_held);
        let saturated = self.watch.look(t, due, sink.ended() - self.ended_before, &sink.flights)?;
        Some(Ending {
            reason: EndReason::OverSaturated,
            repeat: Some(self.repeat),
            at_ms: Some(saturated.at_s * 1000.0),
            detail: saturated.detail,
            unsent: self.planned - k,
            cancelled: 0,
            drain: None,
        })
    }
}

/// A slot under the in-flight cap. The cap may hold the request back; that
/// lag is recorded, not hidden, and the requests it held are counted for
/// the artifact.
async fn take_slot(
    runner: &Runner,
    cap: &Arc<Semaphore>,
) -> anyhow::Result<tokio::sync::OwnedSemaphorePermit> {
    if let Ok(permit) = cap.clone().try_acquire_owned() {
        return Ok(permit);
    }
    let waited = Instant::now();
    let permit = cap.clone().acquire_owned().await.context("concurrency cap closed")?;
    let us = waited.elapsed().as_micros().min(u128::from(u64::MAX)) as u64;
    runner.cap_held.fetch_add(1, Ordering::Relaxed);
    runner.cap_longest_hold_us.fetch_max(us, Ordering::Relaxed);
    Ok(permit)
}

/// Arrivals of an open loop due by `t` seconds, for the over-saturation
/// rule: `k` (those sent or being sent) while the loop keeps its schedule;
/// when its in-flight cap has held arrivals back (`cap_held`: the backlog
/// fills the cap) and the loop has fallen behind, those its rate has made
/// due since, which the server is not taking: what was sent alone would
/// follow the completions and hide the overload. A loop behind for want of
/// CPU, with the cap never reached, keeps `k`: the server cannot be blamed
/// for what the client did not send.
fn arrivals_due(
    arrival: Arrival,
    k: u64,
    t: f64,
    intended: Instant,
    run_start: Instant,
    cap_held: bool,
) -> u64 {
    let behind = cap_held && t - intended.saturating_duration_since(run_start).as_secs_f64() > 0.05;
    match arrival {
        Arrival::Poisson { rate_per_s } | Arrival::Constant { rate_per_s } if behind => {
            k.max((rate_per_s * t) as u64)
        }
        _ => k,
    }
}

/// Connections per target the run can use at once.
fn connections_wanted(spec: &CellSpec, count: u32, targets: usize, balance: Balance) -> usize {
    let (concurrency, open_loop) = match spec.stages.is_empty() {
        true => (spec.concurrency, !matches!(spec.arrival, Arrival::ClosedLoop)),
        false => stages::widest(spec),
    };
    let at_once = match open_loop {
        false => concurrency.min(count),
        true => concurrency.min(count).min(OPEN_LOOP_AHEAD),
    } as usize;
    let share = at_once.div_ceil(targets.max(1));
    match balance {
        Balance::RoundRobin => share,
        // Least-outstanding can lean on one replica for a while.
        Balance::LeastOutstanding => share.saturating_mul(2).min(at_once),
    }
}

/// Before a measured run: with `connect ahead`, opens (concurrently, up to
/// 64 at a time) the connections it can use at once, so no measured
/// request waits for a connect; with `on-demand`, closes the idle ones, so
/// the run measures its connection setup whatever warmup left open.
async fn prepare_connections(runner: &Arc<Runner>, repeat: u32, count: u32) -> Vec<AheadConnection> {
    let mut opened = Vec::new();
    if runner.spec.connect == Connect::OnDemand {
        for endpoint in &runner.endpoints {
            endpoint.close_idle();
        }
        return opened;
    }
    let wanted = connections_wanted(&runner.spec, count, runner.endpoints.len(), runner.balance);
    for (t, endpoint) in runner.endpoints.iter().enumerate() {
        let mut missing = wanted.saturating_sub(endpoint.idle_count());
        while missing > 0 {
            let batch = missing.min(64);
            let mut set = JoinSet::new();
            for _ in 0..batch {
                let runner = runner.clone();
                set.spawn(async move {
                    tokio::time::timeout(runner.timeout, runner.endpoints[t].connect()).await
                });
            }
            let mut failed = false;
            while let Some(done) = set.join_next().await {
                match done {
                    Ok(Ok(Ok(socket))) => {
                        opened.push(AheadConnection {
                            repeat,
                            target: runner.targets[t].label.clone(),
                            connection_id: socket.id,
                            connect_ms: socket.connect_time.as_secs_f64() * 1000.0,
                            tls_handshake_ms: socket.tls_handshake_time.map(|t| t.as_secs_f64() * 1000.0),
                        });
                        endpoint.keep_idle(socket);
                    }
                    // The measured requests will meet (and record) the failure.
                    _ => failed = true,
                }
            }
            if failed {
                break;
            }
            missing -= batch;
        }
    }
    opened
}

/// When each open-loop request is due, computed as it is asked for (not a
/// list of every arrival: that grew with the request count).
#[derive(Clone)]
struct Schedule {
    start: Instant,
    /// Arrivals left to give.
    left: u64,
    kind: Due,
}

#[derive(Clone)]
enum Due {
    /// Seeded exponential gaps (Poisson) or equal gaps (constant), summed
    /// in f64 from the start: the first at `start`.
    Gaps { arrival: Arrival, rng: SplitMix64, offset_s: f64 },
    /// A trace's recorded times: request `next` of the run is due at `trace.due(next)`.
    Trace { next: u64 },
    /// Listed ahead (a stage's arrivals, bounded by its window).
    Listed(std::vec::IntoIter<Instant>),
}

impl Schedule {
    fn gaps(start: Instant, count: u32, arrival: Arrival, seed: u64, repeat: u32) -> Self {
        let rng = SplitMix64::new(seed, streams::ARRIVALS + u64::from(repeat));
        Self { start, left: u64::from(count), kind: Due::Gaps { arrival, rng, offset_s: 0.0 } }
    }

    fn trace(start: Instant, requests: u64) -> Self {
        Self { start, left: requests, kind: Due::Trace { next: 0 } }
    }

    fn listed(start: Instant, times: Vec<Instant>) -> Self {
        Self { start, left: times.len() as u64, kind: Due::Listed(times.into_iter()) }
    }

    /// Arrivals left.
    fn len(&self) -> u64 {
        self.left
    }

    /// The next arrival; `trace` is the source's schedule for a replay.
    fn next(&mut self, trace: Option<&crate::workload::trace::Trace>) -> Option<Instant> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        match &mut self.kind {
            Due::Gaps { arrival, rng, offset_s } => {
                let at = self.start + Duration::from_secs_f64(*offset_s);
                *offset_s += stages::gap_s(*arrival, rng);
                Some(at)
            }
            Due::Trace { next } => {
                let at = self.start + trace?.due(*next);
                *next += 1;
                Some(at)
            }
            Due::Listed(times) => times.next(),
        }
    }

    /// The `k`th arrival from now, without taking any.
    fn peek_nth(&self, k: u64, trace: Option<&crate::workload::trace::Trace>) -> Option<Instant> {
        let mut ahead = Self { start: self.start, left: self.left, kind: self.kind.clone() };
        for _ in 0..k {
            let _ = ahead.next(trace);
        }
        ahead.next(trace)
    }
}

/// Every arrival of an open loop of `count` (its tasks, for agent traffic).
fn arrival_times(run_start: Instant, count: u32, arrival: Arrival, seed: u64, repeat: u32) -> Vec<Instant> {
    let mut schedule = Schedule::gaps(run_start, count, arrival, seed, repeat);
    std::iter::from_fn(|| schedule.next(None)).collect()
}

/// Asks the server how many tokens `prompt` is (sent as request `index`, one token asked for).
async fn probe_prompt_tokens(
    endpoint: &Endpoint,
    spec: &CellSpec,
    prompt: &str,
    index: u64,
) -> anyhow::Result<u64> {
    Ok(probe_usage(endpoint, spec, prompt, index).await?.prompt_tokens)
}

/// The server's `usage` for `prompt` (sent as request `index`, one token asked for).
async fn probe_usage(
    endpoint: &Endpoint,
    spec: &CellSpec,
    prompt: &str,
    index: u64,
) -> anyhow::Result<crate::observe::chunk::Usage> {
    let marker = marker(spec.seed, index);
    let body = serde_json::to_vec(&request_body(spec, prompt, index, &marker, 1))?;
    let timeout = Duration::from_millis(spec.request_timeout_ms);
    let (obs, _) = execute(endpoint, spec.api, Payload::body(&body), timeout).await;
    match (obs.usage, obs.failure) {
        (Some(usage), _) => Ok(usage),
        (None, Some((class, detail))) => bail!("probe request failed ({}): {detail}", class.as_str()),
        (None, None) => bail!("probe request returned no usage.prompt_tokens"),
    }
}

/// A short tag that tells this cell run's request ids from another's on
/// the same server (its log keeps them all): the wall clock's low bits.
fn request_tag() -> String {
    let ns = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{:08x}", (ns as u64) & 0xffff_ffff)
}

/// The sockets' side of a cell, made ready before any request.
struct Endpoints {
    /// Descriptor slots the process's table holds (see [`crate::send::prepare`]).
    fd_table_slots: usize,
    /// The cell's last-byte clock, with an idle or stall timeout.
    liveness: Option<Arc<Liveness>>,
    /// One per target, resolved.
    endpoints: Vec<Endpoint>,
}

/// Sizes the descriptor table, then opens one endpoint per target and
/// resolves its host, so that no measured connect waits on either.
async fn open_endpoints(spec: &CellSpec, targets: &[Target]) -> anyhow::Result<Endpoints> {
    // The descriptor table's final size, before any socket is opened: every
    // connection the cell may hold at once, their duplicates for the sender
    // thread, and room for the rest of the process.
    let at_once = match spec.stages.is_empty() {
        true => (spec.concurrency.min(spec.requests.max(spec.warmup_requests)) as usize).max(1),
        false => stages::widest(spec).0 as usize,
    };
    let fd_table_slots = presize_fd_table(at_once.saturating_mul(targets.len()).saturating_mul(2) + 256);
    let liveness = (spec.idle_timeout_ms.is_some() || spec.stall_timeout_ms.is_some()).then(|| {
        Arc::new(Liveness::new(
            spec.idle_timeout_ms.map(Duration::from_millis),
            spec.stall_timeout_ms.map(Duration::from_millis),
        ))
    });
    let endpoints = targets
        .iter()
        .map(|t| {
            Endpoint::with_tls(&endpoint(&t.base_url, spec.api), t.api_key.as_deref(), &t.tls)
                .map(|e| e.with_liveness(liveness.clone()))
                .with_context(|| format!("target {}", t.label))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    for (endpoint, target) in endpoints.iter().zip(targets) {
        // Resolved once here; no connect inside a measurement waits on it.
        // A failure shows up as the requests' connect failures.
        let _ = endpoint.resolve().await.map_err(|e| anyhow::anyhow!("resolving {}: {e}", target.label));
    }
    Ok(Endpoints { fd_table_slots, liveness, endpoints })
}

/// Where a cell's request indices lie: the measured requests' first, over
/// all repeats; after them the unmeasured ones (warmup, calibration probes,
/// `steady-load`'s margins), so that their prompts can never pre-fill a
/// prefix cache for a measured request.
struct IndexPlan {
    /// Measured requests over all repeats.
    measured_total: u64,
    /// The warmup's first index.
    unmeasured_base: u64,
    /// The one index all calibration probes use, so the search sees how
    /// length changes the count, not how one random prompt differs from another.
    probe_index: u64,
}

impl IndexPlan {
    fn of(spec: &CellSpec) -> Self {
        let staged = !spec.stages.is_empty();
        // A staged cell's request count follows from its stages' durations.
        let measured_total = match staged {
            false => u64::from(spec.requests) * u64::from(spec.repeat),
            true => stages::expected_requests(&spec.stages) * u64::from(spec.repeat),
        };
        let unmeasured_base = if staged { stages::UNMEASURED_INDEX_BASE } else { measured_total };
        let probe_index = unmeasured_base + u64::from(spec.warmup_requests);
        Self { measured_total, unmeasured_base, probe_index }
    }
}

/// The cell's prompts, fitted to the model before the warmup.
struct Prompts {
    builder: PromptBuilder,
    /// The traffic, its prompts' token counts filled in with a tokenizer.
    source: Source,
    /// The tokenizer's account; the server's is added at the end.
    tokens: TokenAccount,
    /// With a tokenizer: the tokens the chat template adds on the server.
    template_overhead: Option<u64>,
    calibration: Option<Calibration>,
}

/// Fits the prompts to the model, asking the first target: with the
/// model's own tokenizer, prompts are exact by construction and the server
/// is asked only what its chat template adds; without one, synthetic
/// prompts of a context length are calibrated (replayed and
/// conversational prompts have their own lengths).
async fn fit_prompts(
    spec: &CellSpec,
    mut source: Source,
    targets: &[Target],
    endpoints: &[Endpoint],
    probe_index: u64,
) -> anyhow::Result<Prompts> {
    let mut prompts = PromptBuilder {
        seed: spec.seed,
        salt: spec.prompt_salt,
        mode: spec.prompt_cache_mode,
        context_tokens: spec.context_tokens,
        canaries: spec.canaries,
        response_words: spec.response_words,
        words: 1,
        filler: Default::default(),
        instruction_tokens: 0,
    };
    let mut tokens = TokenAccount::default();
    let mut template_overhead = None;
    if let Some(tokenizer) = &spec.tokenizer {
        let exact = crate::workload::token_exact::prepare(
            spec,
            tokenizer,
            &targets[0],
            &prompts,
            &source,
            async |text| probe_usage(&endpoints[0], spec, text, probe_index).await,
        )
        .await
        .with_context(|| format!("preparing token-exact prompts for {}", targets[0].label))?;
        if let Some(counted) = exact.source {
            source = counted;
        }
        prompts.filler = exact.filler;
        prompts.instruction_tokens = exact.instruction_tokens;
        template_overhead = Some(exact.template_overhead);
        tokens = exact.account;
    }
    let calibration = if spec.context_tokens > 0 && spec.traffic.is_synthetic() && spec.tokenizer.is_none() {
        let c = calibrate(spec.context_tokens, async |words| {
            let prompt = PromptBuilder { words, ..prompts.clone() }.build(probe_index);
            probe_prompt_tokens(&endpoints[0], spec, &prompt, probe_index).await
        })
        .await
        .with_context(|| format!("calibrating prompt length on {}", targets[0].label))?;
        prompts.words = c.words;
        Some(c)
    } else {
        None
    };
    Ok(Prompts { builder: prompts, source, tokens, template_overhead, calibration })
}

/// The unmeasured warmup, closed loop, on the indices after the measured
/// ones; with `steady-load` the warmup requests lead the open loop on its
/// own schedule instead, and none are sent here.
async fn warm_up(runner: &Arc<Runner>, first: u64) -> anyhow::Result<Arc<Sink>> {
    let warmup = Sink::new(None, None);
    let closed_warmup = if steady_load(&runner.spec) { 0 } else { runner.spec.warmup_requests };
    run_phase(runner, first, closed_warmup, 0, Arrival::ClosedLoop, &warmup).await?;
    Ok(warmup)
}

/// Where the measured requests' records go, and when they started.
struct MeasuredPhase {
    /// Counts the records, shows progress, and applies the rules that may
    /// stop the run (stopping rule, error budget, stall).
    sink: Arc<Sink>,
    log: Arc<RecordLog>,
    started_at: SystemTime,
}

impl MeasuredPhase {
    /// Creates the record log in `dir` and the sink that feeds it.
    fn open(
        runner: &Runner,
        dir: &std::path::Path,
        keep_records: bool,
        progress_tx: mpsc::UnboundedSender<Progress>,
        measured_total: u64,
        liveness: Option<Arc<Liveness>>,
    ) -> anyhow::Result<Self> {
        let labels = runner.targets.iter().map(|t| t.label.clone()).collect();
        let log = Arc::new(
            RecordLog::create(dir, labels, keep_records)
                .with_context(|| format!("creating the record log in {}", dir.display()))?,
        );
        let started_at = SystemTime::now();
        let counter = Arc::new(ProgressCounter {
            tx: progress_tx,
            total: measured_total as u32,
            done: AtomicU32::new(0),
            failed: AtomicU32::new(0),
            tokens: AtomicU64::new(0),
            since: Instant::now(),
            shown_ms: AtomicU64::new(0),
        });
        let precision = runner.spec.stopping.as_ref().and_then(PrecisionWatch::new);
        let rules = SinkRules { precision, error_budget: runner.spec.abort_on_errors, liveness };
        let sink = Sink::watching(Some(log.clone()), Some(counter), rules);
        Ok(Self { sink, log, started_at })
    }
}

/// What the measured repeats left beside their records.
struct Repeats {
    /// The connections opened ahead of each repeat's clock.
    ahead: Vec<AheadConnection>,
    /// Sessions' traffic: the plan and its per-turn tally.
    sessions: Option<Arc<SessionPlan>>,
    session_tally: Arc<std::sync::Mutex<session::SessionTally>>,
    /// Agent traffic: the plan and the facts of each task that ended.
    agents: Option<Arc<AgentPlan>>,
    tasks_done: Arc<std::sync::Mutex<Vec<crate::output::jobs::TaskFacts>>>,
}

/// Sends the measured requests, repeat after repeat, each once its
/// connections are ready: agent tasks, sessions, stages, or one phase on
/// the cell's schedule. A stop (a stopping rule, over-saturation, an error
/// storm, a stalled server, a halted agent run) leaves the later repeats unsent.
async fn send_repeats(runner: &Arc<Runner>, measured: &Arc<Sink>) -> anyhow::Result<Repeats> {
    let sessions = runner.source.sessions();
    if sessions.is_some() && measured.precision.is_some() {
        bail!("cell `{}`: sessions cannot stop mid-conversation: drop `until`", runner.spec.name);
    }
    let session_tally = Arc::new(std::sync::Mutex::new(session::SessionTally::default()));
    let agents = runner.source.agents();
    if agents.is_some() && measured.precision.is_some() {
        bail!("cell `{}`: agent tasks cannot stop mid-task: drop `until`", runner.spec.name);
    }
    let tasks_done = Arc::new(std::sync::Mutex::new(Vec::new()));
    let next_staged_index = Arc::new(AtomicU64::new(0));
    let mut ahead = Vec::new();
    for repeat in 0..runner.spec.repeat {
        let first = u64::from(repeat) * u64::from(runner.spec.requests);
        let go_on = if let Some(plan) = &agents {
            ahead.extend(prepare_connections(runner, repeat, runner.spec.requests).await);
            let calls = Arc::new(SessionTurns { runner: runner.clone(), sink: measured.clone(), repeat });
            let arrivals = task_arrivals(plan, &runner.spec, repeat);
            crate::send::agents::run(calls, plan.clone(), arrivals, first, repeat, &tasks_done).await?;
            !measured.halted()
        } else if let Some(plan) = &sessions {
            ahead.extend(prepare_connections(runner, repeat, runner.spec.requests).await);
            let turns = Arc::new(SessionTurns { runner: runner.clone(), sink: measured.clone(), repeat });
            let trace = match &runner.source {
                Source::Trace(t) => Some(t.clone()),
                _ => None,
            };
            session::run(turns, plan, trace, first, &session_tally).await?;
            true
        } else if !runner.spec.stages.is_empty() {
            ahead.extend(prepare_connections(runner, repeat, u32::MAX).await);
            run_stages(runner, repeat, &next_staged_index, measured).await?;
            true
        } else {
            ahead.extend(prepare_connections(runner, repeat, runner.spec.requests).await);
            run_repeat(runner, first, repeat, measured).await?
        };
        if !go_on {
            break;
        }
    }
    Ok(Repeats { ahead, sessions, session_tally, agents, tasks_done })
}

/// One repeat of a cell on its own schedule, from request index `first`;
/// whether the next repeat may run.
async fn run_repeat(
    runner: &Arc<Runner>,
    first: u64,
    repeat: u32,
    measured: &Arc<Sink>,
) -> anyhow::Result<bool> {
    // A trace's arrivals are open loop, whatever `arrival` says.
    let arrival = match runner.source.schedule() {
        Some(_) => Arrival::Constant { rate_per_s: 1.0 },
        None => runner.spec.arrival,
    };
    run_phase(runner, first, runner.spec.requests, repeat, arrival, measured).await?;
    if runner.stopped.lock().is_ok_and(|s| s.is_some()) {
        return Ok(false);
    }
    // An error storm or a stalled server ends every repeat: the later ones are not sent.
    if measured.halted() && runner.spec.stopping.is_none() {
        let planned = u64::from(runner.spec.requests) * u64::from(runner.spec.repeat);
        if let (Some(ending), Ok(mut stopped)) =
            (measured.rule_ending(planned, repeat), runner.stopped.lock())
        {
            *stopped = Some(ending);
        }
        return Ok(false);
    }
    Ok(true)
}

/// The measured phase once its records are written.
struct Collected {
    store: Stored,
    /// How a stopping rule ended the run, when the cell has one.
    ending_by_rule: Option<Ending>,
    stopping: Option<StoppingRecord>,
}

/// Closes the measured phase: the stopping rule's outcome, the server's
/// account of the tokens added to `tokens`, and the record log written out
/// (the sink holds the log: it is dropped first).
fn collect(
    runner: &Runner,
    phase: MeasuredPhase,
    tokens: &mut TokenAccount,
    cache_block_tokens: Option<u64>,
) -> anyhow::Result<Collected> {
    let MeasuredPhase { sink, log, .. } = phase;
    let (ending_by_rule, stopping) = stopping_outcome(&sink, runner.spec.requests);
    // Synthetic unique prompts share nothing with any earlier request.
    let meant_cold = runner.spec.traffic.is_synthetic()
        && matches!(runner.spec.prompt_cache_mode, crate::workload::spec::PromptCacheMode::Unique);
    sink.tokens.fill(tokens, cache_block_tokens, meant_cold);
    drop(sink);
    let log = Arc::try_unwrap(log).map_err(|_| anyhow::anyhow!("the record log is still in use"))?;
    let store = log.finish().context("writing the request records")?;
    Ok(Collected { store, ending_by_rule, stopping })
}

/// What was made before the measured requests, for the output.
struct Made {
    preparation: Preparation,
    calibration: Option<Calibration>,
    tokens: TokenAccount,
    warmup: Arc<Sink>,
    started_at: SystemTime,
}

/// The run's output: its records, how its load and its end read from
/// them, and what was counted along the way.
fn assemble(
    runner: &Runner,
    made: Made,
    repeats: Repeats,
    collected: Collected,
) -> anyhow::Result<RunOutput> {
    let Collected { store, ending_by_rule, stopping } = collected;
    let Repeats { sessions, session_tally, agents, tasks_done, .. } = repeats;
    let warmup_failed = made.warmup.failed.load(Ordering::Relaxed);
    let mut traffic = runner.source.describe();
    if sessions.is_some()
        && let (Value::Object(t), Ok(tally)) = (&mut traffic, session_tally.lock())
        && let Value::Object(summary) = tally.summary()
    {
        t.extend(summary);
    }
    // A trace replayed as sessions runs closed loop, turn after turn; agent
    // tasks on recorded arrivals are open loop, their calls' rate measured.
    let recorded_agents = agents.as_ref().is_some_and(|a| a.spec.recorded_arrivals);
    let trace = (matches!(runner.source, Source::Trace(_)) && sessions.is_none()) || recorded_agents;
    let closed_basis = match (&sessions, &agents) {
        (Some(_), _) => Some("closed loop: one worker per session"),
        (_, Some(_)) => {
            Some("closed loop: concurrent agents, each taking the next task when its last one ended")
        }
        _ => None,
    };
    let offered = crate::output::offered::measure(&runner.spec, trace, closed_basis, &store)
        .context("reading the request records")?;
    // Agent calls are sent by their tasks, never held by the in-flight cap.
    let capped = crate::output::offered::is_open_loop(&runner.spec, trace) && agents.is_none();
    let cap_holds = capped.then(|| runner.cap_holds());
    // An open loop of its own arrivals is judged at its end too: whether
    // the server kept up, even when everything was sent and ended.
    let own_arrivals = !trace && runner.spec.stages.is_empty() && sessions.is_none() && agents.is_none();
    let ending = runner.ending(ending_by_rule, own_arrivals, &store)?;
    let load_margins =
        steady_load(&runner.spec).then(|| runner.margins.lock().map(|m| *m).unwrap_or_default());
    let jobs = agents.is_some().then(|| {
        let facts = tasks_done.lock().map(|mut d| std::mem::take(&mut *d)).unwrap_or_default();
        crate::output::jobs::summarize(facts.iter().map(|f| f.row()).collect())
    });
    Ok(RunOutput {
        tokens: made.tokens,
        ending,
        stopping,
        load_margins,
        offered,
        cap_holds,
        traffic,
        store,
        preparation: made.preparation,
        calibration: made.calibration,
        warmup_completed: made.warmup.completed.load(Ordering::Relaxed),
        warmup_failed,
        started_at: made.started_at,
        finished_at: SystemTime::now(),
        jobs,
        answers: runner.answers.as_ref().map(crate::output::answers::AnswerLog::finish),
    })
}

impl Runner {
    /// Open loop: how often the in-flight cap held a due request back.
    fn cap_holds(&self) -> crate::output::offered::CapHolds {
        crate::output::offered::CapHolds {
            limit: match self.spec.stages.is_empty() {
                true => self.spec.concurrency,
                false => stages::widest(&self.spec).0,
            },
            held_requests: self.cap_held.load(Ordering::Relaxed),
            longest_hold_ms: self.cap_longest_hold_us.load(Ordering::Relaxed) as f64 / 1000.0,
        }
    }

    /// How the measurement ended: a stop the runner recorded, else the
    /// stopping rule's ending, else completed; an open loop of its own
    /// arrivals (`own_arrivals`) is also judged on its drain.
    fn ending(&self, by_rule: Option<Ending>, own_arrivals: bool, store: &Stored) -> anyhow::Result<Ending> {
        let mut ending =
            self.stopped.lock().ok().and_then(|mut s| s.take()).or(by_rule).unwrap_or_else(Ending::completed);
        if own_arrivals && crate::output::offered::is_open_loop(&self.spec, false) {
            ending.drain =
                crate::output::drain::judge_stored(store).context("reading the request records")?;
        }
        Ok(ending)
    }
}

/// The whole measurement, step by step; runs on the load generator's own runtime.
#[allow(clippy::too_many_arguments)]
pub async fn measure(
    spec: CellSpec,
    source: Source,
    targets: Vec<Target>,
    ctx: CellContext,
    progress_tx: mpsc::UnboundedSender<Progress>,
    scratch_dir: std::path::PathBuf,
    keep_records: bool,
) -> anyhow::Result<RunOutput> {
    let Endpoints { fd_table_slots, liveness, endpoints } = open_endpoints(&spec, &targets).await?;
    let indices = IndexPlan::of(&spec);
    let prompts = fit_prompts(&spec, source, &targets, &endpoints, indices.probe_index).await?;
    let Prompts { builder, source, mut tokens, template_overhead, calibration } = prompts;
    let runner = Arc::new(Runner {
        endpoints,
        outstanding: targets.iter().map(|_| AtomicU32::new(0)).collect(),
        targets,
        balance: ctx.balance,
        next_round_robin: AtomicU64::new(0),
        prompts: builder,
        source,
        timeout: Duration::from_millis(spec.request_timeout_ms),
        cap_held: AtomicU64::new(0),
        cap_longest_hold_us: AtomicU64::new(0),
        stopped: std::sync::Mutex::new(None),
        // After the warmup's indices and the calibration probe's.
        margin_base: indices.probe_index + 1,
        margins: Default::default(),
        template_overhead,
        request_tag: request_tag(),
        sender_lanes: ctx.workers() as usize,
        answers: spec.keep_answers_bytes.map(|budget| {
            crate::output::answers::AnswerLog::new(budget, indices.unmeasured_base, ctx.simulated)
        }),
        spec,
    });
    let warmup = warm_up(&runner, indices.unmeasured_base).await?;
    let phase = MeasuredPhase::open(
        &runner,
        &scratch_dir,
        keep_records,
        progress_tx,
        indices.measured_total,
        liveness,
    )?;
    let started_at = phase.started_at;
    let mut repeats = send_repeats(&runner, &phase.sink).await?;
    let collected = collect(&runner, phase, &mut tokens, ctx.cache_block_tokens)?;
    let preparation = Preparation { fd_table_slots, ahead: std::mem::take(&mut repeats.ahead) };
    let made = Made { preparation, calibration, tokens, warmup, started_at };
    assemble(&runner, made, repeats, collected)
}

/// When an agent trace's tasks start: at their recorded arrivals, on the
/// cell's open-loop rate (tasks per second), or as `concurrency` agents
/// become free.
fn task_arrivals(plan: &AgentPlan, spec: &CellSpec, repeat: u32) -> crate::send::agents::TaskArrivals {
    use crate::send::agents::TaskArrivals;
    let tasks = plan.tasks.len();
    if plan.spec.recorded_arrivals {
        let due = (0..tasks)
            .map(|t| Duration::from_secs_f64(plan.recorded_arrival_ms(t).unwrap_or(0.0).max(0.0) / 1000.0))
            .collect();
        return TaskArrivals::Due(due);
    }
    match spec.arrival {
        Arrival::ClosedLoop => TaskArrivals::Agents(spec.concurrency),
        open => {
            let start = Instant::now();
            let due = arrival_times(start, tasks as u32, open, spec.seed, repeat);
            TaskArrivals::Due(due.into_iter().map(|t| t.saturating_duration_since(start)).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_times_start_at_the_run_start_and_follow_the_rate() {
        let start = Instant::now();
        let constant = arrival_times(start, 5, Arrival::Constant { rate_per_s: 100.0 }, 1, 0);
        let offsets: Vec<u128> = constant.iter().map(|t| (*t - start).as_micros()).collect();
        assert_eq!(offsets, vec![0, 10_000, 20_000, 30_000, 40_000]);
        let poisson = arrival_times(start, 2000, Arrival::Poisson { rate_per_s: 1000.0 }, 7, 0);
        assert_eq!(
            poisson,
            arrival_times(start, 2000, Arrival::Poisson { rate_per_s: 1000.0 }, 7, 0),
            "seeded"
        );
        assert_ne!(
            poisson,
            arrival_times(start, 2000, Arrival::Poisson { rate_per_s: 1000.0 }, 7, 1),
            "per repeat"
        );
        assert!(poisson.windows(2).all(|w| w[0] <= w[1]));
        // 2000 exponential gaps of mean 1 ms: the span is within a few percent of 2 s.
        let span = (poisson[1999] - start).as_secs_f64();
        assert!((1.8..2.2).contains(&span), "span {span}");
    }
}
