//! The step documents a job of cells, checks or tasks runs from: written by
//! the head into `<store>/documents/<fingerprint>.json` (the steps' and
//! their server's), so the node reads them from the shared store and needs
//! no recipe.

use std::path::{Path, PathBuf};

use crate::document::{StepDocument, document_of};
use crate::plan::Plan;
use crate::step_kind::Kind;

/// The documents of `members` (one server's steps, or tasks), written now;
/// None when the job cannot run from documents alone: a member is a search
/// (searches still plan the recipe on the node), or its key waits on
/// results not yet produced (the node settles those by planning).
pub fn job_documents(
    plan: &Plan,
    store_root: &Path,
    members: &[usize],
    server: Option<usize>,
) -> Result<Option<Vec<PathBuf>>, String> {
    let settled = |i: usize| !plan.nodes[i].provisional && plan.nodes[i].waits_for.is_empty();
    let runs_from_document = |m: usize| match plan.nodes[m].kind {
        Kind::Cell | Kind::Check => server.is_some() && settled(m),
        Kind::Task => settled(m),
        _ => false,
    };
    if !members.iter().all(|&m| runs_from_document(m)) || !server.is_none_or(settled) {
        return Ok(None);
    }
    let dir = StepDocument::folder_in(store_root);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    if let Some(server) = server {
        document_of(plan, server).write_into(&dir)?;
    }
    members.iter().map(|&m| document_of(plan, m).write_into(&dir)).collect::<Result<Vec<_>, _>>().map(Some)
}
