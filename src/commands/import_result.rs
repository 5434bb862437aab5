//! `anvil import-result FILE [--from TOOL]`: a peer tool's result as a
//! stored cell (src/peers/), and what the import could and could not do:
//! the fields left unfilled, the tool's printed summaries re-derived with
//! its own definitions, and anvil's own re-derivation of the artifact.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use super::common::{Exit, failed, input, open_store};
use crate::cli::PeerTool;
use crate::peers::{self, Imported, Tool};

fn tool_of(from: PeerTool) -> Tool {
    match from {
        PeerTool::VllmBench => Tool::VllmBench,
        PeerTool::Aiperf => Tool::Aiperf,
        PeerTool::Guidellm => Tool::Guidellm,
    }
}

pub fn import_result(
    store_root: &Path,
    file: &Path,
    from: Option<PeerTool>,
    as_json: bool,
) -> Result<i32, Exit> {
    let imported = peers::read(file, from.map(tool_of)).map_err(input)?;
    let store = open_store(store_root)?;
    let stored = peers::stored::store(&store, file, &imported).map_err(|e| failed(format!("store: {e}")))?;
    let mut clean = true;
    let mut results = Vec::new();
    let mut text = String::new();
    for (one, cell) in imported.iter().zip(&stored.cells) {
        let verify = anvil_evidence::rederive(&cell.artifact).map_err(|e| failed(format!("verify: {e}")))?;
        let mismatched = one.checks.iter().filter(|c| !c.matches()).count();
        clean &= mismatched == 0 && verify.is_clean();
        describe(&mut text, one, cell, &verify);
        results.push(json!({
            "cell": cell.cell,
            "fingerprint": cell.fingerprint.to_string(),
            "added": cell.added,
            "tool": one.tool.as_str(),
            "version": one.version,
            "version_note": one.version_note,
            "files": one.files,
            "part": one.part,
            "requests": one.records.len(),
            "failed": one.failed(),
            "unfilled": one.unfilled,
            "notes": one.notes,
            "checks": one.checks.iter().map(|c| json!({
                "metric": c.metric, "stat": c.stat, "printed_at": c.printed_at, "unit": c.unit,
                "printed": c.printed, "rederived": c.rederived, "matches": c.matches(),
            })).collect::<Vec<_>>(),
            "verify": {"summary": verify.summary(), "mismatches": verify.mismatches, "unchecked": verify.unchecked.len()},
        }));
    }
    if as_json {
        let out = json!({"run_id": stored.run_id, "run_added": stored.run_added, "results": results, "clean": clean});
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        let _ = writeln!(
            text,
            "run {} ({}): `anvil report --run {0}`, `anvil export-data {0}`; gc keeps it",
            stored.run_id,
            if stored.run_added { "recorded" } else { "already recorded" }
        );
        print!("{text}");
    }
    if !clean {
        eprintln!(
            "anvil: MISMATCH: a value re-derived from the file's own per-request data differs from what the file says (above); the artifact is stored, but read it with care"
        );
    }
    Ok(if clean { 0 } else { 1 })
}

fn describe(
    out: &mut String,
    one: &Imported,
    cell: &peers::stored::StoredCell,
    verify: &anvil_evidence::Report,
) {
    let version = match (&one.version, &one.version_note) {
        (Some(v), _) => v.clone(),
        (None, Some(note)) => format!("unknown ({note})"),
        (None, None) => "unknown".into(),
    };
    let files: Vec<&str> = one.files.iter().map(|f| f.name.as_str()).collect();
    let _ = writeln!(out, "imported {} {version} from {}", one.tool.title(), files.join(" + "));
    let _ = writeln!(out, "  requests {}, failed {}", one.records.len(), one.failed());
    let _ = writeln!(
        out,
        "  stored cell {} as {} ({})",
        cell.cell,
        cell.fingerprint,
        if cell.added { "new" } else { "already stored: nothing added" }
    );
    if !one.unfilled.is_empty() {
        let _ = writeln!(out, "  not filled (absent from the artifact):");
        for u in &one.unfilled {
            let _ = writeln!(out, "    {}: {}", u.field, u.why);
        }
    }
    for note in &one.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    let _ = writeln!(
        out,
        "  the file's printed summaries, re-derived from its per-request data with {}'s own definitions:",
        one.tool.title()
    );
    let _ = writeln!(out, "    {:<6} {:<7} {:>20} {:>20}", "metric", "stat", "printed", "re-derived");
    let shown = ["mean", "p50", "p90", "p95", "p99"];
    let mut hidden = 0;
    for c in &one.checks {
        let ok = c.matches();
        if ok && !shown.contains(&c.stat.as_str()) {
            hidden += 1;
            continue;
        }
        let _ = writeln!(
            out,
            "    {:<6} {:<7} {:>20} {:>20}  {} {}",
            c.metric,
            c.stat,
            format!("{:.6}", c.printed),
            c.rederived.map_or_else(|| "—".into(), |d| format!("{d:.6}")),
            c.unit,
            if ok { "=" } else { "MISMATCH" }
        );
    }
    let mismatched = one.checks.iter().filter(|c| !c.matches()).count();
    let _ = writeln!(
        out,
        "    {} printed values checked ({hidden} more not shown), {}",
        one.checks.len(),
        if mismatched == 0 {
            "all equal to the tool's rounding".to_string()
        } else {
            format!("{mismatched} MISMATCHED")
        }
    );
    let _ = writeln!(
        out,
        "  anvil verify of the artifact (anvil's definitions, anvil-evidence): {}{}",
        verify.summary(),
        if verify.is_clean() { "" } else { " — MISMATCH" }
    );
    for m in &verify.mismatches {
        let _ = writeln!(out, "    {}: stored {} derived {}", m.path, m.stored, m.derived);
    }
}
