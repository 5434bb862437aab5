//! What a campaign's outputs (the workload manifest, the decision summary)
//! read of a run's plan, as plain typed data: the campaign, its workload
//! classes and each step's name, kind, description, fingerprint and the few
//! settings the outputs name. `report` renders from this view and the
//! stored results, never from the recipe's declarations: the plan is the
//! run's (its recipe frozen when the run started), and what the report may
//! read of it is exactly what is here.

use std::collections::BTreeMap;

use anvil_store::Fingerprint;
use anvil_words::words;
use serde_json::Value;

use super::planned::Plan;
use crate::recipe::{Kind, Spec};

/// A run's plan as its campaign outputs see it.
#[derive(Debug, Clone)]
pub struct CampaignView {
    /// The campaign's name (`campaign "qwen38"`, else the recipe's stem).
    pub name: String,
    pub seed: u64,
    /// The workload classes, in the recipe's order.
    pub workloads: Vec<WorkloadView>,
    /// One per step, in the plan's order: `steps[i]` is `plan.nodes[i]`.
    pub steps: Vec<StepView>,
}

#[derive(Debug, Clone)]
pub struct WorkloadView {
    pub name: String,
    pub description: Option<String>,
}

#[derive(Debug, Clone)]
pub struct StepView {
    pub name: String,
    pub kind: StepKind,
    pub description: Option<String>,
    /// Its fingerprint in the plan (settled, for a step the run settled).
    pub fingerprint: Fingerprint,
    pub what: StepWhat,
}

words! {
    /// The kind of a step, by the word the recipe and the run record use: the
    /// view's own, so the report never names the recipe's `Kind`
    /// (tests/module_cycles.rs, `the_report_never_reads_the_recipe`).
    pub enum StepKind {
        Server = "server",
        Workload = "workload",
        Cell = "cell",
        Check = "check",
        Gate = "gate",
        Task = "task",
        Screen = "screen",
        Decision = "decision",
        Finally = "finally",
        Search = "search",
    }
}

impl From<Kind> for StepKind {
    fn from(kind: Kind) -> StepKind {
        match kind {
            Kind::Server => StepKind::Server,
            Kind::Workload => StepKind::Workload,
            Kind::Cell => StepKind::Cell,
            Kind::Check => StepKind::Check,
            Kind::Gate => StepKind::Gate,
            Kind::Task => StepKind::Task,
            Kind::Screen => StepKind::Screen,
            Kind::Decision => StepKind::Decision,
            Kind::Finally => StepKind::Finally,
            Kind::Search => StepKind::Search,
        }
    }
}

/// The settings of a step that the campaign outputs name.
#[derive(Debug, Clone)]
pub enum StepWhat {
    Server {
        /// `identity key=value …`, as declared.
        identity: BTreeMap<String, Value>,
        gpu_label: Option<String>,
    },
    Cell {
        /// The server it measures.
        server: String,
    },
    Screen {
        /// The cells compared (`cell.sglang-d*`) and the result field compared.
        over: String,
        metric: String,
    },
    Decision(DecisionView),
    /// A kind whose settings the outputs do not name.
    Other,
}

/// What the decision summary takes from the `decision` step.
#[derive(Debug, Clone, Default)]
pub struct DecisionView {
    /// Cells whose results head the decision summary.
    pub headline: Vec<String>,
    pub limitations: Vec<String>,
    pub controls: Vec<String>,
    pub identity: BTreeMap<String, Value>,
}

impl Plan {
    /// The view of this plan that the campaign outputs read.
    pub fn campaign_view(&self) -> CampaignView {
        let recipe = &self.recipe;
        let steps = self
            .nodes
            .iter()
            .zip(&recipe.steps)
            .map(|(node, step)| StepView {
                name: node.name.clone(),
                kind: node.kind.into(),
                description: step.description.clone(),
                fingerprint: node.fingerprint,
                what: match &step.spec {
                    Spec::Server(s) => {
                        StepWhat::Server { identity: s.identity.clone(), gpu_label: s.gpu_label.clone() }
                    }
                    Spec::Cell(c) => StepWhat::Cell { server: c.server.clone() },
                    Spec::Screen(s) => StepWhat::Screen { over: s.over.clone(), metric: s.metric.clone() },
                    Spec::Decision(d) => StepWhat::Decision(DecisionView {
                        headline: d.headline.clone(),
                        limitations: d.limitations.clone(),
                        controls: d.controls.clone(),
                        identity: d.identity.clone(),
                    }),
                    _ => StepWhat::Other,
                },
            })
            .collect();
        CampaignView {
            name: recipe.campaign.name.clone(),
            seed: recipe.campaign.seed,
            workloads: recipe
                .workloads
                .iter()
                .map(|w| WorkloadView { name: w.name.clone(), description: w.description.clone() })
                .collect(),
            steps,
        }
    }
}

impl CampaignView {
    /// The step named `name`, with its index in the plan.
    pub fn step(&self, name: &str) -> Option<(usize, &StepView)> {
        self.steps.iter().enumerate().find(|(_, s)| s.name == name)
    }

    /// The `decision` step, if the recipe has one.
    pub fn decision(&self) -> Option<(&StepView, &DecisionView)> {
        self.steps.iter().find_map(|s| match &s.what {
            StepWhat::Decision(d) => Some((s, d)),
            _ => None,
        })
    }

    /// Every cell with the server it measures.
    pub fn cells(&self) -> impl Iterator<Item = (&StepView, &str)> {
        self.steps.iter().filter_map(|s| match &s.what {
            StepWhat::Cell { server } => Some((s, server.as_str())),
            _ => None,
        })
    }

    /// Every server with its declared identity and GPU label.
    pub fn servers(&self) -> impl Iterator<Item = (&StepView, &BTreeMap<String, Value>, Option<&str>)> {
        self.steps.iter().filter_map(|s| match &s.what {
            StepWhat::Server { identity, gpu_label } => Some((s, identity, gpu_label.as_deref())),
            _ => None,
        })
    }

    /// The decision's headline cells that are cells, in its order.
    pub fn headline_cells(&self) -> Vec<(&StepView, &str)> {
        let Some((_, d)) = self.decision() else { return Vec::new() };
        d.headline
            .iter()
            .filter_map(|name| self.step(name))
            .filter_map(|(_, s)| match &s.what {
                StepWhat::Cell { server } => Some((s, server.as_str())),
                _ => None,
            })
            .collect()
    }

    pub fn has_kind(&self, kind: StepKind) -> bool {
        self.steps.iter().any(|s| s.kind == kind)
    }
}
