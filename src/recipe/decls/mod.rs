//! One typed declaration per kind of step, each in its own file with the
//! fields it accepts: the field table is what the loader checks and the
//! docs list, the struct is what the plan and the executors read.

pub mod arm_check;
pub mod cell;
pub mod check;
pub mod decision;
pub mod executor;
pub mod finally;
pub mod gate;
pub mod load;
pub mod run_to_run;
pub mod screen;
pub mod search;
pub mod server;
pub mod task;

pub use cell::CellDecl;
pub use check::CheckDecl;
pub use decision::{DecisionDecl, Rule};
pub use executor::ExecutorDecl;
pub use finally::FinallyDecl;
pub use gate::GateDecl;
pub use load::{Arrival, LoadDecl, SloDecl};
pub use screen::ScreenDecl;
pub use search::SearchDecl;
pub use server::{CommandEngine, DEFAULT_MODEL, Engine, Readiness, ServerDecl, Warmup};
pub use task::TaskDecl;

use super::expression::Expression;
use super::problem::Problems;
use super::schema::{FieldSpec, Shape};
use super::settings::Draft;
use crate::step_kind::Kind;

/// What a step does, by kind.
#[derive(Debug, Clone)]
pub enum Spec {
    Server(ServerDecl),
    /// A workload: settings that cells take in; not a step of the DAG.
    Workload(LoadDecl),
    Cell(CellDecl),
    Check(CheckDecl),
    Gate(GateDecl),
    Task(TaskDecl),
    Screen(ScreenDecl),
    Decision(DecisionDecl),
    Finally(FinallyDecl),
    /// The highest rate or concurrency that meets an SLO, probed cell by cell.
    Search(SearchDecl),
}

impl Spec {
    /// Build the typed form of a checked declaration. Problems the field
    /// checks did not catch (an open loop without a rate, an expression that
    /// does not parse) are reported here.
    pub(super) fn build(draft: &Draft, problems: &mut Problems) -> Spec {
        match draft.kind {
            Kind::Server => Spec::Server(server::build(draft, problems)),
            Kind::Workload => Spec::Workload(load::build(draft, problems)),
            Kind::Cell => Spec::Cell(cell::build(draft, problems)),
            Kind::Check => Spec::Check(check::build(draft)),
            Kind::Gate => Spec::Gate(gate::build(draft, problems)),
            Kind::Task => Spec::Task(task::build(draft)),
            Kind::Screen => Spec::Screen(screen::build(draft, problems)),
            Kind::Decision => Spec::Decision(decision::build(draft, problems)),
            Kind::Finally => Spec::Finally(finally::build(draft)),
            Kind::Search => Spec::Search(search::build(draft, problems)),
        }
    }

    /// The server a cell, check or search measures.
    pub fn server(&self) -> Option<&str> {
        match self {
            Spec::Cell(cell) => Some(&cell.server),
            Spec::Check(check) => Some(&check.server),
            Spec::Search(search) => Some(&search.server),
            _ => None,
        }
    }

    /// Files whose content enters the fingerprint.
    pub fn reads(&self) -> &[String] {
        match self {
            Spec::Server(server) => &server.reads,
            Spec::Task(task) | Spec::Finally(FinallyDecl { task, .. }) => &task.reads,
            // A cell's trace or dataset file.
            Spec::Cell(cell) => &cell.load.reads,
            _ => &[],
        }
    }

    pub fn expressions(&self) -> Vec<&Expression> {
        match self {
            Spec::Gate(gate) => gate.require.iter().chain(gate.arms.iter().map(|a| &a.reads)).collect(),
            Spec::Screen(screen) => screen.expression.iter().collect(),
            Spec::Decision(decision) => {
                decision.rules.iter().map(|r| &r.when).chain(decision.promote_when.as_ref()).collect()
            }
            _ => Vec::new(),
        }
    }
}

/// The names of the fields every step may carry.
#[allow(non_upper_case_globals)]
pub mod common {
    /// What the step is for (it changes no result).
    pub const description: &str = "description";
    /// Steps this one runs after (ordering only).
    pub const after: &str = "after";
}

/// Fields every step may carry.
const COMMON: &[FieldSpec] = &[
    FieldSpec::new(common::description, Shape::Str).unhashed(),
    FieldSpec::new(common::after, Shape::StepRefs).many(),
];

/// A workload is not a step, but it may say what it is for.
const DESCRIBED: &[FieldSpec] = COMMON.split_at(1).0;

/// Every field a declaration of `kind` accepts (built once per kind: every
/// declaration's conversion looks its fields up here).
pub fn fields_of(kind: Kind) -> &'static [FieldSpec] {
    static BY_KIND: [std::sync::OnceLock<Vec<FieldSpec>>; Kind::ALL.len()] =
        [const { std::sync::OnceLock::new() }; Kind::ALL.len()];
    BY_KIND[kind as usize].get_or_init(|| {
        let own: &[&[FieldSpec]] = match kind {
            Kind::Server => &[server::FIELDS],
            Kind::Workload => &[load::FIELDS, DESCRIBED],
            Kind::Cell => &[cell::FIELDS, load::FIELDS],
            Kind::Check => &[check::FIELDS],
            Kind::Gate => &[gate::FIELDS],
            Kind::Task => &[task::FIELDS],
            Kind::Finally => &[task::FIELDS, finally::FIELDS],
            Kind::Screen => &[screen::FIELDS],
            Kind::Decision => &[decision::FIELDS],
            Kind::Search => &[search::FIELDS],
        };
        let mut all: Vec<FieldSpec> = own.iter().flat_map(|f| f.iter().copied()).collect();
        if matches!(kind, Kind::Workload | Kind::Cell) {
            all.extend(load::request_option_fields());
        }
        if kind.is_step() {
            all.extend(COMMON.iter().copied());
        }
        all
    })
}

/// The field `name` of `kind`, if it accepts one.
pub fn field_of(kind: Kind, name: &str) -> Option<FieldSpec> {
    fields_of(kind).iter().find(|f| f.name == name).copied()
}
