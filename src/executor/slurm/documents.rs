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
    let dir = store_root.join("documents");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    if let Some(server) = server {
        write(&dir, &document_of(plan, server))?;
    }
    members.iter().map(|&m| write(&dir, &document_of(plan, m))).collect::<Result<Vec<_>, _>>().map(Some)
}

/// Write a document under its fingerprint, atomically (a node may read it
/// while another head writes the same one).
fn write(dir: &Path, document: &StepDocument) -> Result<PathBuf, String> {
    let path = dir.join(StepDocument::file_name(&document.fingerprint));
    let text = serde_json::to_string_pretty(document).map_err(|e| format!("{}: {e}", path.display()))?;
    let staged = dir.join(format!(".{}.{}", document.fingerprint, std::process::id()));
    std::fs::write(&staged, text + "\n").map_err(|e| format!("writing {}: {e}", staged.display()))?;
    std::fs::rename(&staged, &path).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}
