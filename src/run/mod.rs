//! Running a plan: independent steps in parallel, stored steps skipped,
//! servers started lazily, `finally` steps always, and a run record at the end.

mod cell;
mod check;
mod decision;
mod gate;
mod outcome;
mod progress;
mod results;
mod screen;
mod servers;
mod step;
mod task;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anvil_store::{Fingerprint, NodeStatus, RunNode, RunRecord, RunStatus, Store};
use serde_json::{Map, Value, json};
use tokio::task::JoinSet;

pub use outcome::Ending;
pub use servers::registry_dir;

use crate::plan::{Plan, Status};
use crate::recipe::{Decl, Kind, Spec};
use progress::Progress;
use servers::ServerPool;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub jobs: usize,
    pub force: Vec<String>,
    pub only: Vec<String>,
    pub keep_going: bool,
    /// `--gpus 0,1,…`; detected with nvidia-smi when absent.
    pub gpus: Option<String>,
    /// Where campaign outputs go (a folder per campaign inside).
    pub out: PathBuf,
}

/// How one step ended in this run.
#[derive(Debug, Clone)]
pub struct StepReport {
    pub name: String,
    pub kind: Kind,
    pub fingerprint: Fingerprint,
    pub ending: Ending,
    pub detail: String,
    pub duration: Duration,
}

#[derive(Debug, Clone)]
pub struct RunSummary {
    pub run_id: String,
    pub steps: Vec<StepReport>,
    pub elapsed: Duration,
    /// Campaign artifacts written at the end (decision summary, manifest).
    pub outputs: Vec<PathBuf>,
    /// The exit code a signal asks for (130 for Ctrl-C), when one stopped the run.
    pub interrupted: Option<i32>,
}

impl RunSummary {
    pub fn count(&self, ending: Ending) -> usize {
        self.steps.iter().filter(|s| s.ending == ending && s.kind != Kind::Server).count()
    }

    /// A run succeeds when nothing failed and no gate rejected.
    pub fn succeeded(&self) -> bool {
        self.count(Ending::Failed) == 0 && self.count(Ending::Rejected) == 0
    }
}

/// Shared by every step of the run.
struct Context {
    store: Store,
    servers: ServerPool,
    recipe_dir: PathBuf,
    recipe_key: String,
    seed: u64,
    run_id: String,
    progress: Arc<Progress>,
}

/// What a step needs to execute, taken out of the plan.
struct Job {
    index: usize,
    decl: Decl,
    fingerprint: Fingerprint,
    preimage: Value,
    forced: bool,
    inputs: Option<Value>,
    server: Option<usize>,
}

struct Finished {
    index: usize,
    ending: Ending,
    detail: String,
    evidence: Option<String>,
    duration: Duration,
    /// False for a result taken from the store.
    executed: bool,
}

pub async fn execute(mut plan: Plan, store: Store, options: RunOptions) -> anyhow::Result<RunSummary> {
    let started = Instant::now();
    let started_at = now_rfc3339();
    let run_id =
        format!("run-{}-{}", started_at.replace([':', '-'], "").trim_end_matches('Z'), std::process::id());
    let n = plan.nodes.len();
    let selected = selection(&plan, &options.only)?;
    let forced: BTreeSet<usize> = options
        .force
        .iter()
        .map(|name| plan.index_of(name).ok_or_else(|| anyhow::anyhow!("--force: no step named `{name}`")))
        .collect::<Result<_, _>>()?;

    // A server serves the selected steps that will run (cached ones never start it).
    let mut users: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, node) in plan.nodes.iter().enumerate() {
        if selected[i] && node.kind != Kind::Server && (node.status == Status::Pending || forced.contains(&i))
        {
            for &d in &node.deps {
                if plan.nodes[d].kind == Kind::Server {
                    *users.entry(d).or_default() += 1;
                }
            }
        }
    }
    let server_decls = plan
        .recipe
        .steps
        .iter()
        .enumerate()
        .filter_map(|(i, step)| match &step.spec {
            Spec::Server(server) => Some((i, (step.name.clone(), server.clone()))),
            _ => None,
        })
        .collect();
    let recipe_dir = plan.recipe.dir();
    let log_dir = std::env::temp_dir().join(format!("anvil-{run_id}"));
    std::fs::create_dir_all(&log_dir)?;
    let gpus = match &options.gpus {
        Some(list) => anvil_proc::GpuPool::from_list(list),
        None => anvil_proc::GpuPool::detect(),
    };
    let ctx = Arc::new(Context {
        store: store.clone(),
        servers: ServerPool::new(server_decls, users, plan.mode, log_dir, recipe_dir.clone(), gpus),
        recipe_dir,
        recipe_key: plan.recipe.key.clone(),
        seed: plan.recipe.campaign.seed,
        run_id: run_id.clone(),
        progress: Arc::new(Progress::new(0)),
    });

    // The record exists from the start: it is a gc root while the run goes on.
    let mut record = RunRecord {
        run_id: run_id.clone(),
        recipe: plan.recipe.key.clone(),
        recipe_path: plan.recipe.path.display().to_string(),
        started_at: started_at.clone(),
        finished_at: None,
        status: RunStatus::Running,
        // Listed from the start so that gc keeps what this run stores even
        // if the run is killed before it records how each step ended.
        nodes: plan
            .nodes
            .iter()
            .map(|n| RunNode {
                name: n.name.clone(),
                kind: n.kind.to_string(),
                fingerprint: n.fingerprint,
                status: NodeStatus::Planned,
                started_at: None,
                duration_ms: None,
                detail: None,
            })
            .collect(),
        extra: json!({"campaign": plan.recipe.campaign.name, "preimages": preimages(&plan)}),
    };
    store.record_run(&record)?;

    let progress = ctx.progress.clone();
    progress.set_total(
        plan.nodes.iter().enumerate().filter(|(i, n)| selected[*i] && n.kind != Kind::Server).count(),
    );
    let mut endings: Vec<Option<Finished>> = (0..n).map(|_| None).collect();
    let mut launched = vec![false; n];
    let mut running = JoinSet::new();
    let jobs = options.jobs.max(1);
    let mut stop_reason: Option<String> = None;
    let mut interrupted: Option<i32> = None;
    let mut interrupt = Box::pin(interruption());

    loop {
        // Start every step whose dependencies are settled, up to --jobs at once.
        for &i in &plan.order.clone() {
            if launched[i] || running.len() >= jobs {
                continue;
            }
            let node = &plan.nodes[i];
            let deps_done =
                node.deps.iter().all(|&d| endings[d].is_some() || (plan.nodes[d].kind == Kind::Finally));
            if !deps_done {
                continue;
            }
            launched[i] = true;
            let skip = if !selected[i] {
                Some("not selected by --only".to_string())
            } else if node.kind == Kind::Finally {
                // Restoring is needed only if this run touched anything.
                let executed = endings.iter().flatten().any(|f| f.executed);
                let always = matches!(&plan.recipe.steps[i].spec, Spec::Finally(f) if f.always);
                (!executed && !always).then(|| {
                    "nothing ran, so nothing to restore (set `always #true` to run it anyway)".to_string()
                })
            } else if let Some(reason) = &stop_reason {
                Some(reason.clone())
            } else {
                node.deps
                    .iter()
                    .find(|&&d| {
                        endings[d]
                            .as_ref()
                            .is_some_and(|f| matches!(f.ending, Ending::Failed | Ending::Skipped))
                            && plan.nodes[d].kind != Kind::Server
                    })
                    .map(|&d| format!("upstream {} did not succeed", plan.recipe.steps[d].qualified()))
            };
            if node.kind == Kind::Server && skip.is_none() {
                endings[i] = Some(Finished {
                    index: i,
                    ending: Ending::Ran,
                    detail: String::new(),
                    evidence: None,
                    duration: Duration::ZERO,
                    executed: false,
                });
                continue;
            }
            if let Some(reason) = skip {
                if let Some(server) = server_of(&plan, i)
                    && selected[i]
                    && (node.status == Status::Pending || forced.contains(&i))
                {
                    ctx.servers.release(server).await;
                }
                if selected[i] || node.kind != Kind::Server {
                    progress.finished(
                        &plan.nodes[i].name,
                        node.kind,
                        Ending::Skipped,
                        &reason,
                        Duration::ZERO,
                        selected[i],
                    );
                }
                endings[i] = Some(Finished {
                    index: i,
                    ending: Ending::Skipped,
                    detail: reason,
                    evidence: None,
                    duration: Duration::ZERO,
                    executed: false,
                });
                continue;
            }
            let inputs = if crate::plan::reads_results(node.kind) {
                plan.settle(i, &store);
                Some(results::inputs_of(&plan, i, &store))
            } else {
                None
            };
            let node = &plan.nodes[i];
            let job = Job {
                index: i,
                decl: plan.recipe.steps[i].clone(),
                fingerprint: node.fingerprint,
                preimage: node.preimage.clone(),
                forced: forced.contains(&i),
                inputs,
                server: server_of(&plan, i),
            };
            progress.started(&node.name, node.kind);
            let ctx = ctx.clone();
            running.spawn(async move { step::run_job(ctx, job).await });
        }
        let joined = tokio::select! {
            joined = running.join_next() => joined,
            code = &mut interrupt => {
                // Ctrl-C (or SIGTERM/SIGHUP): stop what runs, stop the servers, record it.
                running.abort_all();
                interrupted = Some(code);
                progress.clear();
                eprintln!("anvil: interrupted; stopping servers");
                break;
            }
        };
        let Some(joined) = joined else { break };
        let finished = match joined {
            Ok(f) => f,
            Err(err) => anyhow::bail!("a step's task crashed: {err}"),
        };
        let i = finished.index;
        progress.finished(
            &plan.nodes[i].name,
            plan.nodes[i].kind,
            finished.ending,
            &finished.detail,
            finished.duration,
            true,
        );
        if finished.ending == Ending::Failed && !options.keep_going && stop_reason.is_none() {
            stop_reason = Some(format!(
                "not started: {} failed (use --keep-going to go on past failures)",
                plan.recipe.steps[i].qualified()
            ));
        }
        endings[i] = Some(finished);
    }
    ctx.servers.stop_all().await;
    progress.clear();

    let mut steps = Vec::new();
    record.nodes.clear();
    for (i, finished) in endings.into_iter().enumerate() {
        let node = &plan.nodes[i];
        let unfinished = if interrupted.is_some() { "interrupted" } else { "never reached" };
        let finished = finished.unwrap_or(Finished {
            index: i,
            ending: Ending::Skipped,
            detail: unfinished.into(),
            evidence: None,
            duration: Duration::ZERO,
            executed: false,
        });
        record.nodes.push(RunNode {
            name: node.name.clone(),
            kind: node.kind.to_string(),
            fingerprint: node.fingerprint,
            // Servers and finally steps are never stored: their statuses say so.
            status: match node.kind {
                Kind::Server => NodeStatus::Server,
                Kind::Finally => finished.ending.finally_status(),
                _ => finished.ending.record_status(),
            },
            started_at: None,
            duration_ms: Some(finished.duration.as_millis() as u64),
            detail: Some(match &finished.evidence {
                Some(evidence) => format!("{}\n{evidence}", finished.detail),
                None => finished.detail.clone(),
            }),
        });
        steps.push(StepReport {
            name: node.name.clone(),
            kind: node.kind,
            fingerprint: node.fingerprint,
            ending: finished.ending,
            detail: finished.detail,
            duration: finished.duration,
        });
    }
    let mut summary =
        RunSummary { run_id, steps, elapsed: started.elapsed(), outputs: Vec::new(), interrupted };
    record.finished_at = Some(now_rfc3339());
    if summary.interrupted.is_none() && plan.recipe.steps.iter().any(|s| s.kind == Kind::Decision) {
        summary.outputs = write_campaign_outputs(
            &plan,
            &store,
            &summary,
            &options,
            record.finished_at.clone().unwrap_or_default(),
        )?;
    }
    record.status = match (summary.interrupted, summary.succeeded()) {
        (Some(_), _) => RunStatus::Interrupted,
        (None, true) => RunStatus::Succeeded,
        (None, false) => RunStatus::Failed,
    };
    if let Value::Object(extra) = &mut record.extra {
        extra.insert("preimages".into(), preimages(&plan)); // gates settled during the run
    }
    store.record_run(&record)?;
    Ok(summary)
}

fn write_campaign_outputs(
    plan: &Plan,
    store: &Store,
    summary: &RunSummary,
    options: &RunOptions,
    finished_at: String,
) -> anyhow::Result<Vec<PathBuf>> {
    let endings: Vec<(usize, &'static str, String)> =
        summary.steps.iter().enumerate().map(|(i, s)| (i, s.ending.as_str(), s.detail.clone())).collect();
    let outcomes = crate::report::campaign::Outcomes {
        endings: &endings,
        finished_at,
        all_succeeded: summary.succeeded(),
    };
    let dir = options.out.join(&plan.recipe.campaign.name);
    std::fs::create_dir_all(&dir)?;
    let manifest = dir.join("workload-manifest.json");
    let decision = dir.join("decision-summary.json");
    std::fs::write(&manifest, serde_json::to_vec_pretty(&crate::report::campaign::workload_manifest(plan))?)?;
    std::fs::write(
        &decision,
        serde_json::to_vec_pretty(&crate::report::campaign::decision_summary(plan, store, &outcomes))?,
    )?;
    Ok(vec![manifest, decision])
}

/// Resolves when the user asks anvil to stop: the conventional exit code
/// (128 + signal number).
async fn interruption() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => 130,
        _ = term.recv() => 143,
        _ = hup.recv() => 129,
    }
}

fn server_of(plan: &Plan, i: usize) -> Option<usize> {
    plan.nodes[i].deps.iter().copied().find(|&d| {
        plan.nodes[d].kind == Kind::Server
            && plan.recipe.steps[i].spec.server() == Some(plan.nodes[d].name.as_str())
    })
}

/// `--only a b`: those steps and everything they depend on.
fn selection(plan: &Plan, only: &[String]) -> anyhow::Result<Vec<bool>> {
    if only.is_empty() {
        return Ok(vec![true; plan.nodes.len()]);
    }
    let mut selected = vec![false; plan.nodes.len()];
    let mut stack = Vec::new();
    for name in only {
        let i = plan.index_of(name).ok_or_else(|| {
            let hint = crate::recipe::did_you_mean(name, plan.nodes.iter().map(|n| n.name.as_str()))
                .map(|h| format!(" ({h})"))
                .unwrap_or_default();
            anyhow::anyhow!("--only: no step named `{name}`{hint}")
        })?;
        stack.push(i);
    }
    while let Some(i) = stack.pop() {
        if !std::mem::replace(&mut selected[i], true) {
            stack.extend(plan.nodes[i].deps.iter().copied().filter(|&d| plan.nodes[d].kind != Kind::Finally));
        }
    }
    Ok(selected)
}

fn preimages(plan: &Plan) -> Value {
    let map: Map<String, Value> =
        plan.nodes.iter().map(|n| (n.fingerprint.to_string(), n.preimage.clone())).collect();
    Value::Object(map)
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
