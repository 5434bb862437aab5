//! `anvil report`: a campaign's run as one self-contained HTML page (or
//! markdown, or CSV), from a recipe's latest run, a run id or a bundle.
//! Also `anvil completions` and `anvil man`, generated from the clap definitions.

use std::path::{Path, PathBuf};

use anvil_store::{RunRecord, Store};

use super::common::{Exit, failed, input, open_store};
use crate::cli::ReportFormat;
use crate::report::model::{self, Report, Sources};

pub struct ReportArgs<'a> {
    pub target: Option<&'a Path>,
    pub run: Option<&'a str>,
    pub out: Option<PathBuf>,
    pub format: ReportFormat,
    pub results: &'a Path,
}

pub fn report(store_root: &Path, args: &ReportArgs<'_>) -> Result<i32, Exit> {
    let started = std::time::Instant::now();
    // A bundle's temporary store lives as long as this scratch folder.
    let scratch = tempfile::tempdir().map_err(|e| failed(format!("temporary folder: {e}")))?;
    let report = resolve(store_root, args, scratch.path())?;
    let text = match args.format {
        ReportFormat::Html => crate::report::html::render(&report),
        ReportFormat::Md => crate::report::export::markdown(&report),
        ReportFormat::Csv => crate::report::export::csv(&report),
    };
    let out = match (&args.out, args.format) {
        (Some(path), _) if path.as_os_str() == "-" => None,
        (Some(path), _) => Some(path.clone()),
        (None, ReportFormat::Html) => Some(args.results.join(&report.campaign).join("report.html")),
        (None, _) => None,
    };
    match out {
        None => print!("{text}"),
        Some(path) => {
            write(&path, &text)?;
            eprintln!(
                "anvil: {} report of {} ({} steps) in {:.0} ms, {} KiB",
                match args.format {
                    ReportFormat::Html => "html",
                    ReportFormat::Md => "markdown",
                    ReportFormat::Csv => "csv",
                },
                report.run.run_id,
                report.steps.len(),
                started.elapsed().as_secs_f64() * 1000.0,
                text.len().div_ceil(1024)
            );
            println!("{}", path.display());
        }
    }
    Ok(0)
}

/// Why `anvil run --report` wrote no report (a warning: the run stands).
#[derive(Debug, thiserror::Error)]
pub enum WriteHtmlError {
    #[error(transparent)]
    Store(#[from] anvil_store::StoreError),
    #[error("no recorded run {run_id}")]
    NoRun { run_id: String },
    #[error("creating {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("writing {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Write the HTML report of a recorded run (what `anvil run --report` does).
/// `_recipe` is not read: the run's record says what the report shows of it.
pub fn write_html(
    store: &Store,
    run_id: &str,
    _recipe: &Path,
    results: &Path,
) -> Result<PathBuf, WriteHtmlError> {
    let run = store.run(run_id)?.ok_or_else(|| WriteHtmlError::NoRun { run_id: run_id.to_string() })?;
    let report = from_store(store, run);
    let path = results.join(&report.campaign).join("report.html");
    let text = crate::report::html::render(&report);
    write_file(&path, &text)?;
    Ok(path)
}

fn write(path: &Path, text: &str) -> Result<(), Exit> {
    write_file(path, text).map_err(failed)
}

/// `text` into `path`, its folder created first.
fn write_file(path: &Path, text: &str) -> Result<(), WriteHtmlError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|source| WriteHtmlError::CreateDir { path: parent.to_path_buf(), source })?;
    }
    std::fs::write(path, text).map_err(|source| WriteHtmlError::Write { path: path.to_path_buf(), source })
}

fn resolve(store_root: &Path, args: &ReportArgs<'_>, scratch: &Path) -> Result<Report, Exit> {
    if let Some(run_id) = args.run {
        let store = open_store(store_root)?;
        let run = store
            .run(run_id)?
            .ok_or_else(|| input(format!("no recorded run `{run_id}` in {}", store_root.display())))?;
        return Ok(from_store(&store, run));
    }
    let Some(target) = args.target else {
        return Err(input("name a recipe (.kdl), a bundle (.anvil) or --run RUN_ID"));
    };
    match target.extension().and_then(|e| e.to_str()) {
        Some("anvil") => from_bundle(target, scratch),
        _ => {
            let store = open_store(store_root)?;
            let key = target.canonicalize().unwrap_or_else(|_| target.to_path_buf()).display().to_string();
            let run = store.last_run_of(&key)?.ok_or_else(|| {
                input(format!(
                    "{} has no recorded run in {} (run it first: anvil run {0})",
                    target.display(),
                    store_root.display()
                ))
            })?;
            Ok(from_store(&store, run))
        }
    }
}

/// A recorded run, its outputs as stored with it (the recipe file is not
/// read: the run's record says what the report shows of it).
fn from_store(store: &Store, run: RunRecord) -> Report {
    let label = format!("{} (run {})", run.recipe_path, run.run_id);
    let outputs = crate::report::stored_outputs::entry_of(store, &run).map(|e| e.dir);
    let sources = Sources { outputs, label, link_files: true };
    model::load(store, run, sources)
}

fn from_bundle(bundle: &Path, scratch: &Path) -> Result<Report, Exit> {
    let imported =
        crate::bundle::unpack(bundle, scratch).map_err(|e| failed(format!("{}: {e}", bundle.display())))?;
    let temp_store = Store::open(&scratch.join("store"))?;
    crate::bundle::add_entries(&imported, &temp_store)
        .map_err(|e| failed(format!("{}: {e}", bundle.display())))?;
    // Its outputs are extracted beside the recipe; the recipe itself is not read.
    let _ = crate::bundle::extract_recipe(&imported, &scratch.join("recipe-out"));
    let outputs = scratch.join("recipe-out").join("outputs");
    let outputs = if outputs.is_dir() { outputs } else { imported.verified.dir.join("outputs") };
    let sources = Sources {
        outputs: Some(outputs),
        label: format!("bundle {} ({})", bundle.display(), imported.verified.digest),
        link_files: false,
    };
    Ok(model::load(&temp_store, imported.run.clone(), sources))
}

/// `anvil completions SHELL`: the completion script on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<i32, Exit> {
    let mut command = <crate::cli::Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut command, "anvil", &mut std::io::stdout());
    Ok(0)
}

/// `anvil man`: the roff man page on stdout (`anvil man | man -l -`).
pub fn man() -> Result<i32, Exit> {
    let command = <crate::cli::Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(command).render(&mut out).map_err(|e| failed(format!("man page: {e}")))?;
    use std::io::Write as _;
    std::io::stdout().write_all(&out).map_err(|e| failed(format!("stdout: {e}")))?;
    Ok(0)
}
