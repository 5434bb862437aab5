//! Over-saturation, seen while an open loop runs: the server completes
//! fewer requests than arrive, and the backlog (arrived, not yet ended)
//! grows without bound. A probe of a capacity search that is past capacity
//! has lost already; measuring it to the end only adds queue.
//!
//! **Why the total backlog cannot be judged by itself.** Let `A(t)` be the
//! arrivals by `t`, `E(t)` the requests ended, `N(t) = A(t) − E(t)` the
//! backlog. A stable queue (arrivals below capacity) has no sustained drift:
//! its backlog settles into a stationary distribution (by Little's law at a
//! mean of rate × mean sojourn), whatever the service distribution, as long
//! as its mean is finite. A server past capacity by a factor `ρ` ends
//! requests at its capacity, `1/ρ` of the arrivals, and its backlog grows by
//! `(1 − 1/ρ)` of the arrivals for ever. But a server starting idle also
//! fills: the backlog's drift at `t` is the rate times the share of
//! sojourns longer than `t`, so while `t` is short of a reply's length the
//! backlog grows as fast as under any overload (with 3 s replies nothing
//! has ended at 2 s), and with heavy tails (5% of replies 100 times the
//! rest; lognormal σ 1.5) it keeps growing for tens of reply lengths. A
//! drift threshold on the total backlog either stops stable heavy-tailed
//! loads or waits for the slowest reply before it can say anything.
//!
//! **The backlog of requests younger than an age `a`.** Split the backlog
//! by age. At a rate that does not change, the requests that arrived in the
//! last `a` seconds and are still in flight at `t ≥ 2a` are, in a stable
//! queue, distributed as the whole backlog was at `a`, when every request
//! was younger than `a`: the same number of arrivals, each still in flight
//! with the probability that its sojourn exceeds its age. What a filling
//! server adds to its backlog after `a` sits only in requests older than
//! `a` (replies longer than `a`), so this comparison is blind to the fill
//! and to the shape of the service distribution (exactly so for a server
//! that never queues; a server that queues near capacity adds the growth of
//! its waiting times, bounded by its stationary queue). Past capacity, FIFO
//! admission makes each request wait `(ρ − 1)` times its arrival time, so
//! later requests of the same age have ended less often: of the requests
//! aged below `a` at `t = 2a`, the share that ended is `(2/ρ − 1)` against
//! `1/ρ` at `a`, a shortfall of `ρ − 1` (all of it from 2× up, when no
//! young request ends at all). 1.1× overload falls 10% short; 15× falls
//! 100% short.
//!
//! **The rule.** Every [`LOOK_EVERY_S`] from [`MIN_ELAPSED_S`] on (at the
//! first arrival after), with `a` the time of the last look at `t/2` or
//! before (never the start): the old cohort is the `n₁` requests due by
//! `a`, `e₁` of which had ended at `a`; the young cohort is the `n₂` due
//! over `(t − a, t]`, `e₂` of which have ended now. It is short when
//! - `e₂/n₂` falls below `(1 − SHORTFALL)` of `e₁/n₁` ([`SHORTFALL`] 5%:
//!   room for the waiting a stable queue builds as it fills, and for a
//!   server that slows as its batch grows);
//! - by more than [`NOISE_SIGMAS`] standard errors of the difference of two
//!   binomial shares (pooled): in a server that never queues each ended
//!   count is a Poisson count, two independent ones with equal means under
//!   a stable load; queueing correlates requests near each other, which the
//!   margin and the confirmation absorb (`benches/saturation.rs` measures
//!   what is left);
//! - and the whole backlog grew since `a` by at least [`MIN_GROWTH`].
//!
//! **Confirmation.** A stable queue whose replies are this variable has
//! episodes of queueing: at 0.95× capacity with 5% of replies 100 times
//! the rest, runs of long replies fill all 64 slots and hundreds of
//! requests wait, for tens of seconds; over such an episode the young
//! cohort falls 10–20% short, as under 1.1× overload. What tells them
//! apart is time: an episode ends, an overload does not. So the rule
//! fires when every look has been short since `t/3` ([`CONFIRMING_SHARE`]
//! of the time elapsed), or, when the shortfall is at least
//! [`CLEAR_SHORTFALL`] (half: 2× capacity and beyond), at two looks in a
//! row: the episodes of the bench's stable queues fell 7–21% short, never
//! half (a queue that halves the ended share of a whole cohort has grown
//! by half the cohort).
//!
//! No request ended by `a`: no verdict (a server that answers nothing is
//! stalled, not saturated). `benches/saturation.rs` gives false stops and
//! detection delays across service distributions and loads: 1.05× is
//! mostly left alone (the drift is within what a stable queue's episodes
//! make), 1.1× stops within 300 reply lengths in 53–100% of runs, 1.5× and
//! beyond in all. A cell that sends all its requests before the watch can
//! speak (100 requests at 20 req/s to 4 slots of 3 s replies: all sent in
//! 5 s, the first short look ~18 s) is judged at its end instead
//! (`output/drain.rs`).

use std::sync::Mutex;

/// First look, in seconds after the run's start.
pub const MIN_ELAPSED_S: f64 = 1.0;
/// Seconds between looks.
pub const LOOK_EVERY_S: f64 = 0.25;
/// The young cohort's ended share below this share of the old one's falls short.
pub const SHORTFALL: f64 = 0.05;
/// ... and short by more than this many standard errors.
pub const NOISE_SIGMAS: f64 = 3.0;
/// Fewest requests the backlog must grow by since the old cohort's look.
pub const MIN_GROWTH: u64 = 20;
/// A shortfall of at least this share (the young cohort's requests ended
/// at half the old one's rate or less: 2× capacity and beyond) is confirmed
/// by two looks in a row.
pub const CLEAR_SHORTFALL: f64 = 0.5;
/// The looks that find the run over-saturated must run on, every one of
/// them, for this share of the time elapsed (from `t/3` to `t`, and at
/// least two looks): a queue past capacity stays short, a stable one's
/// episodes of queueing end.
pub const CONFIRMING_SHARE: f64 = 2.0 / 3.0;

/// What the watch saw when it fired.
#[derive(Debug, Clone, PartialEq)]
pub struct Saturated {
    /// Seconds after the run's start.
    pub at_s: f64,
    pub detail: String,
}

/// Width of a slot of send times, in ms.
const SEND_SLOT_MS: f64 = 50.0;
/// Slots summed in a block, so a look adds blocks, not slots.
const SLOTS_A_BLOCK: usize = 64;

/// When the ended requests were due, as the rule needs them: how many were
/// due in each 50 ms (and in each 64 of those), so a look can count the
/// ended requests of a cohort. The record path pays one uncontended lock a
/// request.
#[derive(Default)]
pub struct FlightLog {
    ended: Mutex<EndedByDue>,
}

#[derive(Default)]
struct EndedByDue {
    slots: Vec<u64>,
    blocks: Vec<u64>,
}

impl FlightLog {
    /// One request, due `send_ms` after the run's start, ended.
    pub fn ended(&self, send_ms: f64) {
        let slot = (send_ms.max(0.0) / SEND_SLOT_MS) as usize;
        if let Ok(mut ended) = self.ended.lock() {
            if ended.slots.len() <= slot {
                ended.slots.resize(slot + 1, 0);
                ended.blocks.resize(slot / SLOTS_A_BLOCK + 1, 0);
            }
            ended.slots[slot] += 1;
            ended.blocks[slot / SLOTS_A_BLOCK] += 1;
        }
    }

    /// Forget everything: a new run (repeat) starts its clock again.
    pub fn reset(&self) {
        if let Ok(mut ended) = self.ended.lock() {
            *ended = EndedByDue::default();
        }
    }

    /// Ended requests due before `at` seconds (linear within a slot).
    fn ended_sent_before(&self, at: f64) -> f64 {
        let Ok(ended) = self.ended.lock() else { return 0.0 };
        let position = (at * 1000.0 / SEND_SLOT_MS).max(0.0);
        let whole = (position as usize).min(ended.slots.len());
        let full_blocks = whole / SLOTS_A_BLOCK;
        let before: u64 = ended.blocks[..full_blocks].iter().sum::<u64>()
            + ended.slots[full_blocks * SLOTS_A_BLOCK..whole].iter().sum::<u64>();
        let part = ended.slots.get(whole).map_or(0.0, |n| *n as f64 * position.fract());
        before as f64 + part
    }
}

/// The counts of the two cohorts a look compares.
#[derive(Debug, Clone, Copy)]
struct Cohorts {
    /// Their age bound: the old cohort's look, in seconds.
    age_s: f64,
    /// Due by `age_s`, and ended by then.
    old: (f64, f64),
    /// Due over `(t − age_s, t]`, and ended by `t`.
    young: (f64, f64),
    /// The whole backlog at `age_s` and now.
    backlog: (u64, u64),
}

impl Cohorts {
    /// The young cohort's ended share below the old one's, as a share of
    /// the old one's; and the difference in pooled standard errors.
    fn shortfall(&self) -> (f64, f64) {
        let ((n1, e1), (n2, e2)) = (self.old, self.young);
        let (p1, p2) = (e1 / n1, e2 / n2);
        let pooled = (e1 + e2) / (n1 + n2);
        let se = (pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)).sqrt();
        let z = if se > 0.0 { (p1 - p2) / se } else { 0.0 };
        (1.0 - p2 / p1, z)
    }

    /// The shortfall, when the young cohort falls short.
    fn short(&self) -> Option<f64> {
        let (shortfall, z) = self.shortfall();
        let grew = self.backlog.1 >= self.backlog.0 + MIN_GROWTH;
        let short =
            self.old.1 > 0.0 && self.young.0 > 0.0 && shortfall > SHORTFALL && z > NOISE_SIGMAS && grew;
        short.then_some(shortfall)
    }
}

/// Counts at each look, to compare with those at half the time.
#[derive(Debug)]
pub struct SaturationWatch {
    /// `(t, sent, ended)` at each look, in order, from `(0, 0, 0)`.
    looks: Vec<(f64, u64, u64)>,
    /// The first of the looks in a row, up to the last, that found it over-saturated.
    short_since: Option<f64>,
    /// The same for the looks that found it clearly so ([`CLEAR_SHORTFALL`]).
    clear_since: Option<f64>,
}

impl Default for SaturationWatch {
    fn default() -> Self {
        SaturationWatch { looks: vec![(0.0, 0, 0)], short_since: None, clear_since: None }
    }
}

impl SaturationWatch {
    /// Whether a look is due at `t` seconds.
    pub fn due(&self, t: f64) -> bool {
        t >= MIN_ELAPSED_S && self.looks.last().is_none_or(|(last, _, _)| t - last >= LOOK_EVERY_S)
    }

    /// Requests due by `at` seconds, read off the looks (linear between two).
    fn sent_by(&self, at: f64) -> f64 {
        if at <= 0.0 {
            return 0.0;
        }
        let after = self.looks.partition_point(|(t, _, _)| *t < at);
        match (after.checked_sub(1).and_then(|i| self.looks.get(i)), self.looks.get(after)) {
            (Some(&(t0, s0, _)), Some(&(t1, s1, _))) if t1 > t0 => {
                s0 as f64 + (s1 as f64 - s0 as f64) * (at - t0) / (t1 - t0)
            }
            (_, Some(&(_, s, _))) | (Some(&(_, s, _)), None) => s as f64,
            (None, None) => 0.0,
        }
    }

    /// A look at `t` seconds with `sent` requests due and `ended` ended so
    /// far, `flights` the send times of those ended (call when
    /// [`due`](Self::due)); `Some` when the run is over-saturated.
    pub fn look(&mut self, t: f64, sent: u64, ended: u64, flights: &FlightLog) -> Option<Saturated> {
        // The counts at the last look no later than t/2, never the start.
        let half = self.looks.iter().rev().find(|(at, _, _)| *at <= t / 2.0 && *at > 0.0).copied();
        self.looks.push((t, sent, ended));
        let cohorts = half.map(|(age_s, old_sent, old_ended)| {
            let young_sent = sent as f64 - self.sent_by(t - age_s);
            let young_ended = (ended as f64 - flights.ended_sent_before(t - age_s)).max(0.0);
            Cohorts {
                age_s,
                old: (old_sent as f64, old_ended as f64),
                young: (young_sent, young_ended),
                backlog: (old_sent.saturating_sub(old_ended), sent.saturating_sub(ended)),
            }
        });
        let shortfall = cohorts.and_then(|c| c.short());
        self.short_since = shortfall.map(|_| self.short_since.unwrap_or(t));
        self.clear_since = shortfall.filter(|s| *s >= CLEAR_SHORTFALL).map(|_| self.clear_since.unwrap_or(t));
        let (c, since) = (cohorts?, self.short_since?);
        let clearly = self.clear_since.is_some_and(|clear| clear < t);
        let confirmed = clearly || (since < t && t - since >= CONFIRMING_SHARE * t);
        confirmed.then(|| Saturated { at_s: t, detail: describe(t, since, &c) })
    }
}

/// What a firing look saw, in words.
fn describe(t: f64, since: f64, c: &Cohorts) -> String {
    let ((n1, e1), (n2, e2)) = (c.old, c.young);
    let (shortfall, z) = c.shortfall();
    format!(
        "over-saturated at {t:.2} s: of the {n2:.0} requests due in the last {a:.2} s, {e2:.0} have ended \
         ({:.1}%), where {e1:.0} of the {n1:.0} due in the first {a:.2} s had ended by then ({:.1}%): \
         {:.0}% short, {z:.1} standard errors, short at every look since {since:.2} s; {} in flight, {} at {a:.2} s",
        100.0 * e2 / n2,
        100.0 * e1 / n1,
        100.0 * shortfall,
        c.backlog.1,
        c.backlog.0,
        a = c.age_s,
    )
}

#[cfg(test)]
#[path = "saturation_tests.rs"]
mod tests;
