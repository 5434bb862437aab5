//! A task's (or `finally` step's) document body: the command as it is
//! started, its literal braces undone and its folder made absolute.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::placeholders::unescape;
use crate::recipe::decls::TaskDecl;

/// What running a command step needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskExec {
    /// Program and arguments, as passed to the program.
    pub argv: Vec<String>,
    /// Where it runs: the recipe's folder, or `cwd` under it.
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    /// Files under `cwd` it must leave behind; they are stored with it.
    pub outputs: Vec<String>,
    /// Killed with its process group past this many milliseconds.
    pub timeout_ms: Option<u64>,
    /// A `finally` step's `always`: run even when nothing else in the run
    /// executed.
    #[serde(default)]
    pub always: bool,
    /// The recipe's folder: where the files its key names are found.
    pub workdir: PathBuf,
}

impl TaskExec {
    /// The task as declared in a recipe in `recipe_dir` (absolute).
    pub fn of(decl: &TaskDecl, recipe_dir: &Path) -> TaskExec {
        TaskExec {
            // `{{`/`}}` in a recipe are literal braces.
            argv: decl.run.iter().map(|a| unescape(a)).collect(),
            cwd: match &decl.cwd {
                Some(dir) => recipe_dir.join(dir),
                None => recipe_dir.to_path_buf(),
            },
            env: decl.env.clone(),
            outputs: decl.outputs.clone(),
            timeout_ms: decl.timeout.map(|t| t.as_millis() as u64),
            always: false,
            workdir: recipe_dir.to_path_buf(),
        }
    }
}
