//! `anvil export`: one run's closure written as one bundle, streamed (each
//! file is hashed, then copied into the archive while hashed again, so a
//! file that changes under us is caught and memory stays flat).

use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::path::{Path, PathBuf};

use anvil_store::{RunRecord, Store};
use flate2::Compression;
use flate2::write::GzEncoder;

use super::manifest::{BundleManifest, FORMAT, Invocation, MANIFEST_NAME, Member};
use super::member_path::relative_to;
use crate::recipe::Recipe;
use crate::report::stored_outputs;

/// What to export.
pub struct ExportRequest<'a> {
    pub store: &'a Store,
    pub run: RunRecord,
    /// The recipe as the run read it (with the run's `--set` values).
    pub recipe: &'a Recipe,
    pub invocation: Invocation,
    pub out: PathBuf,
}

#[derive(Debug)]
pub struct ExportSummary {
    pub path: PathBuf,
    pub digest: String,
    pub members: usize,
    pub entries: usize,
    /// Uncompressed bytes of all members, manifest included.
    pub bytes_in: u64,
    /// The bundle file's size.
    pub bytes_out: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: io::Error },
    #[error("{} is outside the recipe's folder tree {}: a bundle holds files relative to it", path.display(), base.display())]
    Outside { path: PathBuf, base: PathBuf },
    #[error("{} changed while it was exported", path.display())]
    Changed { path: PathBuf },
    #[error("{} changed since run {run} read it, and the run kept only its digest: restore it to export that run", path.display())]
    ChangedSinceRun { path: PathBuf, run: String },
    #[error(transparent)]
    Store(#[from] anvil_store::StoreError),
}

fn io_error(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ExportError {
    let path = path.to_path_buf();
    move |source| ExportError::Io { what, path, source }
}

/// Write the bundle; returns its digest and sizes.
pub fn export(request: &ExportRequest<'_>) -> Result<ExportSummary, ExportError> {
    let scratch =
        tempfile::tempdir().map_err(io_error("creating a temporary folder in", &std::env::temp_dir()))?;
    let (sources, main_recipe) = collect(request, scratch.path())?;
    let mut members = Vec::with_capacity(sources.len());
    for (path, source) in &sources {
        let (bytes, blake3) = hash_file(source)?;
        members.push(Member { path: path.clone(), bytes, blake3 });
    }
    let manifest = BundleManifest {
        format: FORMAT.to_string(),
        anvil_version: env!("CARGO_PKG_VERSION").to_string(),
        created_at: crate::run::now_rfc3339(),
        campaign: request.recipe.campaign.name.clone(),
        run_id: request.run.run_id.clone(),
        recipe: main_recipe,
        invocation: request.invocation.clone(),
        exported_on: crate::environment::capture(),
        members,
        run_to_run: super::run_to_run::stated(request.store, &request.run, request.recipe),
    };
    let mut manifest_bytes = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
    manifest_bytes.push(b'\n');

    // Written beside the target and renamed into place: a reader never sees half a bundle.
    let partial = request.out.with_extension("anvil.partial");
    let file = File::create(&partial).map_err(io_error("creating", &partial))?;
    let mut tar = tar::Builder::new(GzEncoder::new(BufWriter::new(file), Compression::fast()));
    tar.mode(tar::HeaderMode::Deterministic);
    append(&mut tar, MANIFEST_NAME, manifest_bytes.len() as u64, &manifest_bytes[..], &partial)?;
    for ((_, source), member) in sources.iter().zip(&manifest.members) {
        let file = File::open(source).map_err(io_error("reading", source))?;
        let mut reader = HashingReader { inner: file, hasher: blake3::Hasher::new() };
        append(&mut tar, &member.path, member.bytes, &mut reader, &partial)?;
        if reader.hasher.finalize().to_hex().as_str() != member.blake3 {
            return Err(ExportError::Changed { path: source.clone() });
        }
    }
    let writer = tar.into_inner().map_err(io_error("writing", &partial))?;
    let file = writer.finish().map_err(io_error("writing", &partial))?;
    let file = file.into_inner().map_err(|e| ExportError::Io {
        what: "writing",
        path: partial.clone(),
        source: e.into_error(),
    })?;
    file.sync_all().map_err(io_error("syncing", &partial))?;
    std::fs::rename(&partial, &request.out)
        .map_err(io_error("moving the bundle into place at", &request.out))?;
    let bytes_out = std::fs::metadata(&request.out).map(|m| m.len()).unwrap_or(0);
    Ok(ExportSummary {
        path: request.out.clone(),
        digest: BundleManifest::digest_of(&manifest_bytes),
        members: manifest.members.len() + 1,
        entries: sources
            .iter()
            .filter(|(p, _)| p.ends_with("/result.json") && p.starts_with("entries/"))
            .count(),
        bytes_in: manifest_bytes.len() as u64 + manifest.members.iter().map(|m| m.bytes).sum::<u64>(),
        bytes_out,
    })
}

/// Every member as (path in the bundle, file here), and the main recipe's member path.
fn collect(
    request: &ExportRequest<'_>,
    scratch: &Path,
) -> Result<(Vec<(String, PathBuf)>, String), ExportError> {
    let recipe = request.recipe;
    let canonical = |p: &Path| p.canonicalize().map_err(io_error("reading", p));
    // The recipe and every file it includes or reads, relative to their common folder.
    let mut files: Vec<PathBuf> = recipe.files.clone();
    let dir = canonical(&recipe.dir())?;
    for step in &recipe.steps {
        for read in step.spec.reads() {
            files.push(canonical(&dir.join(read))?);
        }
    }
    files.sort();
    files.dedup();
    let base = common_folder(&files).unwrap_or_else(|| dir.clone());
    let mut sources = Vec::new();
    let frozen = crate::run_extra::RunExtra::of(&request.run).frozen_inputs;
    for file in &files {
        let relative = relative_to(file, &base)
            .ok_or_else(|| ExportError::Outside { path: file.clone(), base: base.clone() })?;
        let packed = as_the_run_read_it(file, &frozen, scratch, &relative, &request.run.run_id)?;
        sources.push((format!("recipe/{relative}"), packed));
    }
    let main = canonical(&recipe.path)?;
    let main_recipe = format!("recipe/{}", relative_to(&main, &base).unwrap_or_default());

    // The run record, as stored.
    let run_json = scratch.join("run.json");
    let mut bytes = serde_json::to_vec_pretty(&request.run).unwrap_or_default();
    bytes.push(b'\n');
    std::fs::write(&run_json, bytes).map_err(io_error("writing", &run_json))?;
    sources.push(("run.json".to_string(), run_json));

    // Every stored entry the run produced or reused (failures are never stored).
    let mut seen = std::collections::BTreeSet::new();
    // The run's outputs travel as `outputs/` (below), not as an entry.
    for node in request.run.nodes.iter().filter(|n| n.status.stored() && stored_outputs::is_step(n)) {
        if !seen.insert(node.fingerprint) {
            continue;
        }
        let Some(entry) = request.store.read(&node.fingerprint)? else { continue };
        for file in &entry.files {
            sources.push((format!("entries/{}/{}", node.fingerprint, file.name), entry.path_of(&file.name)));
        }
    }

    // The campaign outputs of that run, as stored with it (never a
    // `results/` folder, which may hold another run's).
    if let Some(entry) = stored_outputs::entry_of(request.store, &request.run) {
        for name in ["decision-summary.json", "workload-manifest.json"] {
            let path = entry.path_of(name);
            if path.is_file() {
                sources.push((format!("outputs/{name}"), path));
            }
        }
    }
    Ok((sources, main_recipe))
}

/// The file as the run read it when it started (its record's frozen
/// inputs, src/run/frozen.rs): the file itself while its bytes are the ones
/// the run froze; the frozen text, written into `scratch`, for a recipe or
/// include edited since; an error for an edited file of which the run kept
/// only a digest. A run recorded before inputs were frozen packs the file.
fn as_the_run_read_it(
    file: &Path,
    frozen: &std::collections::BTreeMap<String, crate::run_extra::FrozenInput>,
    scratch: &Path,
    relative: &str,
    run_id: &str,
) -> Result<PathBuf, ExportError> {
    if frozen.is_empty() {
        return Ok(file.to_path_buf());
    }
    let bytes = std::fs::read(file).map_err(io_error("reading", file))?;
    let now = format!("blake3:{}", blake3::hash(&bytes).to_hex());
    if frozen.values().any(|f| f.blake3 == now) {
        return Ok(file.to_path_buf());
    }
    // The frozen entry of this file: its name is the path the run saw.
    let same_file = |name: &str| {
        Path::new(name).canonicalize().is_ok_and(|p| p == file)
            || Path::new(name).file_name().is_some_and(|n| Some(n) == file.file_name())
    };
    let text =
        frozen.iter().find(|(name, f)| f.text.is_some() && same_file(name)).and_then(|(_, f)| f.text.clone());
    let Some(text) = text else {
        return Err(ExportError::ChangedSinceRun { path: file.to_path_buf(), run: run_id.to_string() });
    };
    let out = scratch.join("frozen").join(relative);
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).map_err(io_error("creating", parent))?;
    }
    std::fs::write(&out, text).map_err(io_error("writing", &out))?;
    Ok(out)
}

/// The deepest folder holding every file.
fn common_folder(files: &[PathBuf]) -> Option<PathBuf> {
    let mut common = files.first()?.parent()?.to_path_buf();
    for file in &files[1..] {
        while !file.starts_with(&common) {
            common = common.parent()?.to_path_buf();
        }
    }
    Some(common)
}

fn hash_file(path: &Path) -> Result<(u64, String), ExportError> {
    let mut file = File::open(path).map_err(io_error("reading", path))?;
    let mut hasher = blake3::Hasher::new();
    let bytes = io::copy(&mut file, &mut hasher).map_err(io_error("reading", path))?;
    Ok((bytes, hasher.finalize().to_hex().to_string()))
}

fn append<W: io::Write>(
    tar: &mut tar::Builder<W>,
    name: &str,
    size: u64,
    data: impl Read,
    bundle: &Path,
) -> Result<(), ExportError> {
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_mtime(0);
    tar.append_data(&mut header, name, data).map_err(io_error("writing", bundle))
}

/// Hashes what passes through, so the archived bytes are the hashed ones.
struct HashingReader<R> {
    inner: R,
    hasher: blake3::Hasher,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}
