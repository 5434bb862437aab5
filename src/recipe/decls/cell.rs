//! `cell`: one server × one workload, measured under the capacity-v4 protocol.

use super::super::decl::Draft;
use super::super::kind::Kind;
use super::super::problem::Problems;
use super::super::schema::{FieldSpec, Shape, field, required};
use super::load::{self, LoadDecl};

pub const FIELDS: &[FieldSpec] =
    &[required("server", Shape::Ref(Kind::Server)), field("workload", Shape::Ref(Kind::Workload))];

#[derive(Debug, Clone)]
pub struct CellDecl {
    pub server: String,
    /// The workload it took its settings from (a name only: the settings count).
    pub workload: Option<String>,
    /// The workload's settings with the cell's own overrides.
    pub load: LoadDecl,
}

pub(super) fn build(draft: &Draft, problems: &mut Problems) -> CellDecl {
    CellDecl {
        server: draft.settings.string("server").unwrap_or_default(),
        workload: draft.settings.string("workload"),
        load: load::build(draft, problems),
    }
}
