//! Results of peer benchmark tools (`vllm bench serve`, AIPerf, guidellm)
//! read into anvil's terms: which tool wrote a file (detected from its
//! keys, or named with `--from`), its per-request data as anvil records,
//! the workload facts it records, what it cannot fill and why, and its
//! printed summaries re-derived with the tool's own definitions
//! (docs/peers.md). `artifact` turns one into a benchmark/v1 artifact,
//! `stored` puts it into the store; `definitions` tells `compare` how each
//! tool's metrics differ from anvil's.
//!
//! The shared shape lives in `imported.rs` (not here) so the importers,
//! which this file calls, import no file that imports them.

mod aiperf;
pub mod artifact;
pub mod definitions;
mod error;
mod fields;
mod guidellm;
mod imported;
mod methods;
pub mod stored;
mod vllm;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use error::PeerError;
use imported::SourceFile;
pub use imported::{Imported, Tool};

use fields::{Doc, file_name, read_json};

/// The file's bytes named and hashed.
fn source(path: &Path, bytes: &[u8]) -> SourceFile {
    SourceFile { name: file_name(path), blake3: blake3::hash(bytes).to_hex().to_string() }
}

/// What a file holds: one JSON document, or one per line.
enum Content {
    One(Value),
    Lines(Vec<Value>),
}

fn parse(path: &Path) -> Result<(Vec<u8>, Content), PeerError> {
    let bytes = std::fs::read(path).map_err(|source| PeerError::Read { path: path.to_path_buf(), source })?;
    if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
        return Ok((bytes, Content::One(v)));
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Option<Vec<Value>> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).ok().filter(Value::is_object))
        .collect();
    match lines {
        Some(lines) if !lines.is_empty() => Ok((bytes, Content::Lines(lines))),
        _ => Err(PeerError::NotJson { path: path.to_path_buf() }),
    }
}

/// The tools whose files look like this content.
fn candidates(content: &Content) -> Vec<Tool> {
    match content {
        Content::One(v) => [
            (Tool::VllmBench, vllm::looks_like(v)),
            (Tool::Aiperf, aiperf::looks_like_summary(v)),
            (Tool::Guidellm, guidellm::looks_like(v)),
        ]
        .into_iter()
        .filter_map(|(t, yes)| yes.then_some(t))
        .collect(),
        Content::Lines(lines) => {
            let mut found = Vec::new();
            if lines.iter().all(vllm::looks_like) {
                found.push(Tool::VllmBench);
            }
            if lines.first().is_some_and(aiperf::looks_like_record) {
                found.push(Tool::Aiperf);
            }
            found
        }
    }
}

/// Reads a peer's result: `path` is a file, or an AIPerf export folder;
/// `from` names the tool when detection should not decide.
pub fn read(path: &Path, from: Option<Tool>) -> Result<Vec<Imported>, PeerError> {
    if path.is_dir() {
        if from.is_some_and(|t| t != Tool::Aiperf) {
            return Err(PeerError::FolderNotAiperf { path: path.to_path_buf() });
        }
        return read_aiperf(&path.join(aiperf::SUMMARY), &path.join(aiperf::RECORDS));
    }
    let (bytes, content) = parse(path)?;
    let found = candidates(&content);
    let tool = match (from, found.as_slice()) {
        (Some(tool), found) if found.is_empty() || found.contains(&tool) => tool,
        (Some(tool), found) => {
            return Err(PeerError::OtherTool {
                path: path.to_path_buf(),
                found: names(found),
                named: tool.title(),
            });
        }
        (None, [tool]) => *tool,
        (None, []) => return Err(PeerError::Unrecognised { path: path.to_path_buf() }),
        (None, found) => return Err(PeerError::Ambiguous { path: path.to_path_buf(), found: names(found) }),
    };
    let name = path.display().to_string();
    let doc = Doc { file: &name };
    let file = source(path, &bytes);
    let err = PeerError::Field;
    match (tool, content) {
        (Tool::VllmBench, Content::One(v)) => Ok(vec![vllm::read(doc, &v, vec![file]).map_err(err)?]),
        (Tool::VllmBench, Content::Lines(lines)) => lines
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut one = vllm::read(doc, v, vec![file.clone()]).map_err(err)?;
                one.part = (lines.len() > 1).then_some(i);
                Ok(one)
            })
            .collect(),
        (Tool::Guidellm, Content::One(v)) => guidellm::read(doc, &v, &[file]).map_err(err),
        (Tool::Aiperf, Content::One(_)) => read_aiperf(path, &sibling(path, aiperf::RECORDS)),
        (Tool::Aiperf, Content::Lines(_)) => read_aiperf(&sibling(path, aiperf::SUMMARY), path),
        (Tool::Guidellm, Content::Lines(_)) => Err(PeerError::GuidellmLines { path: path.to_path_buf() }),
    }
}

fn names(tools: &[Tool]) -> String {
    tools.iter().map(|t| t.title()).collect::<Vec<_>>().join(" or ")
}

fn sibling(path: &Path, name: &str) -> PathBuf {
    path.parent().unwrap_or(Path::new(".")).join(name)
}

/// AIPerf: the summary and the records next to it.
fn read_aiperf(summary: &Path, records: &Path) -> Result<Vec<Imported>, PeerError> {
    for (path, what) in [(summary, "summary"), (records, "per-request records")] {
        if !path.is_file() {
            return Err(PeerError::AiperfMissing { path: path.to_path_buf(), what });
        }
    }
    let (summary_bytes, summary_value) = read_json(summary)?;
    let records_bytes =
        std::fs::read(records).map_err(|source| PeerError::Read { path: records.to_path_buf(), source })?;
    let (summary_name, records_name) = (summary.display().to_string(), records.display().to_string());
    let (summary_doc, records_doc) = (Doc { file: &summary_name }, Doc { file: &records_name });
    let lines = aiperf::parse_lines(records_doc, &String::from_utf8_lossy(&records_bytes))?;
    // Summary first whichever file was named: the same export is the same entry.
    let files = vec![source(summary, &summary_bytes), source(records, &records_bytes)];
    let one = aiperf::read(summary_doc, &summary_value, records_doc, &lines, files)?;
    Ok(vec![one])
}
