//! anvil-sim: a simulated OpenAI-compatible inference engine.
//!
//! A real HTTP server (axum) that frames chat completions, completions and
//! a Responses API subset byte for byte like vLLM, with a continuous
//! batching performance model, deterministic replies that obey benchmark
//! instructions, injectable faults and server-side ground-truth timings.
//! Everything it produces is labelled simulated. See `docs/sim.md`.

mod answer_book;
mod api_error;
mod app_state;
mod chat_format;
mod completions_format;
mod engine;
mod error;
mod faults;
mod generation_stream;
mod ground_truth;
mod instructions;
mod jitter;
mod json_text;
mod metrics;
mod perf_model;
mod prefix_cache;
mod profile;
mod recorder;
mod reply;
mod request;
mod responses_format;
mod rng;
mod routes;
mod schema;
mod tokenizer;
mod wire_format;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt as _;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use error::{ProfileError, SimError};
pub use ground_truth::{ChunkRecord, GroundTruthRecord, Stamp};
pub use profile::{AnswerProfile, FaultProfile, SimProfile};
pub use tokenizer::count_tokens;

use app_state::{AppState, ExitAction};
use ground_truth::GroundTruthLog;
use metrics::Metrics;

/// Build the server's state and start its engine task.
fn start_app(profile: SimProfile, exit: ExitAction) -> Result<(axum::Router, JoinHandle<()>), SimError> {
    profile.validate().map_err(SimError::InvalidProfile)?;
    let metrics = Arc::new(Metrics::default());
    let (engine, engine_task) = engine::start(&profile, metrics.clone());
    let ground_truth = GroundTruthLog::new(profile.ground_truth, profile.ground_truth_file.as_deref())?;
    let answers = answer_book::AnswerBook::load(&profile)?;
    let state = Arc::new(AppState::new(profile, engine, metrics, ground_truth, exit).with_answers(answers));
    Ok((routes::router(state), engine_task))
}

/// Small SSE writes must leave at once, not wait for Nagle's algorithm.
fn no_delay(listener: TcpListener) -> impl axum::serve::Listener<Addr = SocketAddr> {
    listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    })
}

/// Serve until the process is killed (or the `exit-after-requests` fault
/// fires → `std::process::exit(3)`).
pub async fn serve(profile: SimProfile, listener: TcpListener) -> Result<(), SimError> {
    let (app, _engine_task) = start_app(profile, ExitAction::ExitProcess)?;
    axum::serve(no_delay(listener), app).await.map_err(SimError::Server)
}

/// A sim server running inside this process (for tests and benches).
pub struct SimHandle {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    server: JoinHandle<std::io::Result<()>>,
    engine: JoinHandle<()>,
}

/// Start a sim server on `listener` in the background of the current
/// runtime. The `exit-after-requests` fault stops this server (new
/// connections are refused) instead of exiting the process.
pub async fn spawn(profile: SimProfile, listener: TcpListener) -> Result<SimHandle, SimError> {
    let addr = listener.local_addr().map_err(SimError::Listener)?;
    let (stop, mut stopped) = watch::channel(false);
    let (app, engine) = start_app(profile, ExitAction::StopServer(stop.clone()))?;
    let server = tokio::spawn(async move {
        axum::serve(no_delay(listener), app)
            .with_graceful_shutdown(async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            })
            .await
    });
    Ok(SimHandle { addr, stop, server, engine })
}

impl SimHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stop the engine and the server; open streams end without `[DONE]`.
    pub async fn shutdown(self) -> Result<(), SimError> {
        let _ = self.stop.send(true);
        self.engine.abort();
        self.server.await?.map_err(SimError::Server)
    }
}
