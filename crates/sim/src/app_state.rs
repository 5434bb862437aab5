//! State shared by every handler of one sim server.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::answer_book::AnswerBook;
use crate::engine::EngineHandle;
use crate::ground_truth::GroundTruthLog;
use crate::metrics::Metrics;
use crate::profile::SimProfile;
use crate::request::DEFAULT_MODEL_NAME;

/// Time for the last response's bytes to leave before the process exits.
const EXIT_GRACE: Duration = Duration::from_millis(20);

/// What the `exit-after-requests` fault does.
pub enum ExitAction {
    /// A real crash: `std::process::exit(3)` (the `anvil sim` child process).
    ExitProcess,
    /// In-process servers (tests) stop serving instead of killing the test.
    StopServer(watch::Sender<bool>),
}

pub struct AppState {
    pub profile: SimProfile,
    /// The profile's `answers`, read when the server starts.
    pub answers: Option<AnswerBook>,
    pub engine: EngineHandle,
    pub metrics: Arc<Metrics>,
    pub ground_truth: GroundTruthLog,
    next_request: AtomicU64,
    finished_requests: AtomicU64,
    exit: ExitAction,
}

impl AppState {
    pub fn new(
        profile: SimProfile,
        engine: EngineHandle,
        metrics: Arc<Metrics>,
        ground_truth: GroundTruthLog,
        exit: ExitAction,
    ) -> Self {
        Self {
            profile,
            answers: None,
            engine,
            metrics,
            ground_truth,
            next_request: AtomicU64::new(0),
            finished_requests: AtomicU64::new(0),
            exit,
        }
    }

    pub fn with_answers(self, answers: Option<AnswerBook>) -> Self {
        Self { answers, ..self }
    }

    /// The model name `/v1/models` lists.
    pub fn model_name(&self) -> &str {
        self.profile.model.as_deref().unwrap_or(DEFAULT_MODEL_NAME)
    }

    /// A number unique to each generation request of this server.
    pub fn next_request_number(&self) -> u64 {
        self.next_request.fetch_add(1, Ordering::Relaxed)
    }

    /// Count a finished generation request (any outcome); fire the
    /// `exit-after-requests` fault when the count is reached.
    pub fn request_finished(&self) {
        let finished = self.finished_requests.fetch_add(1, Ordering::AcqRel) + 1;
        if self.profile.faults.exit_after_requests != Some(finished) {
            return;
        }
        match &self.exit {
            ExitAction::ExitProcess => {
                tokio::spawn(async {
                    tokio::time::sleep(EXIT_GRACE).await;
                    std::process::exit(3);
                });
            }
            ExitAction::StopServer(stop) => {
                let _ = stop.send(true);
            }
        }
    }
}
