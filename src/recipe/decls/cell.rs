//! `cell`: one server × one workload, measured under the capacity-v4 protocol.

use super::super::kind::Kind;
use super::super::problem::Problems;
use super::super::settings::{Draft, settings};
use super::load::{self, LoadDecl};

settings! {
    #[derive(Debug, Clone)]
    pub struct CellDecl {
        pub server: String = required "server" as Ref(Kind::Server) or String::new(),
        /// The workload it took its settings from (a name only: the settings count).
        pub workload: Option<String> = "workload" as Ref(Kind::Workload),
        /// The workload's settings with the cell's own overrides.
        pub load: LoadDecl,
    }
    /// The workload's settings, built apart.
    struct CellRest;
}

pub(in crate::recipe) fn build(draft: &Draft, problems: &mut Problems) -> CellDecl {
    CellDecl::from_settings(&draft.settings, CellRest { load: load::build(draft, problems) })
}
