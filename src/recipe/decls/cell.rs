//! `cell`: one server × one workload, measured under the capacity-v4 protocol.

use super::super::problem::Problems;
use super::super::settings::{Draft, settings};
use super::load::{self, LoadDecl};
use super::run_to_run::{self, RunToRunDecl};
use crate::step_kind::Kind;

settings! {
    #[derive(Debug, Clone)]
    pub struct CellDecl {
        pub server: String = required "server" as Ref(Kind::Server) or String::new(),
        /// The workload it took its settings from (a name only: the settings count).
        pub workload: Option<String> = "workload" as Ref(Kind::Workload),
        /// How far runs of this configuration differ (not fingerprinted: it judges, it measures nothing).
        key run_to_run = unhashed "run-to-run" as Headed,
        pub run_to_run: Option<RunToRunDecl>,
        /// The workload's settings with the cell's own overrides.
        pub load: LoadDecl,
    }
    /// The workload's settings and the run-to-run spread, built apart.
    struct CellRest;
}

pub(in crate::recipe) fn build(draft: &Draft, problems: &mut Problems) -> CellDecl {
    let run_to_run = run_to_run::build(draft, key::run_to_run, problems);
    CellDecl::from_settings(&draft.settings, CellRest { run_to_run, load: load::build(draft, problems) })
}
