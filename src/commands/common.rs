//! What every subcommand shares: its error (`Exit`), and opening the store
//! and planning a recipe as the command line asks.

use std::path::Path;

use anvil_store::Store;

use crate::cli::RecipeArgs;
use crate::plan::{EngineMode, Plan};

pub enum Exit {
    /// Bad input: a recipe error, an unknown name, a bad flag.
    Input(miette::Report),
    /// The work could not be done (store damage, I/O).
    Failed(miette::Report),
    /// `reproduce` could not be done (a bundle that does not verify, an
    /// interrupted run): apart from its answer `differs`, which is 1.
    NotReproduced(miette::Report),
}

/// `anvil reproduce`'s answers, each its own exit code (docs/bundles.md
/// "Exit codes"); 2 stays bad input, [`Exit::NotReproduced`] is 4.
pub mod reproduce_code {
    /// Equivalence shown: labels reached again, every judged cell reproduced.
    pub const REPRODUCED: i32 = 0;
    /// A label or a judged cell differs.
    pub const DIFFERS: i32 = 1;
    /// Neither shown.
    pub const INCONCLUSIVE: i32 = 3;
    /// The reproduction could not be done.
    pub const NOT_DONE: i32 = 4;
}

impl Exit {
    /// The process exit code: 2 for bad input, 1 for work that failed
    /// (4 for a reproduction that could not be done).
    pub fn code(&self) -> i32 {
        match self {
            Exit::Input(_) => 2,
            Exit::Failed(_) => 1,
            Exit::NotReproduced(_) => reproduce_code::NOT_DONE,
        }
    }

    pub fn report(&self) -> &miette::Report {
        match self {
            Exit::Input(report) | Exit::Failed(report) | Exit::NotReproduced(report) => report,
        }
    }

    /// As `reproduce` ends: work that failed is [`Exit::NotReproduced`].
    pub fn in_reproduce(self) -> Exit {
        match self {
            Exit::Failed(report) => Exit::NotReproduced(report),
            other => other,
        }
    }
}

impl From<crate::run::RunError> for Exit {
    fn from(err: crate::run::RunError) -> Exit {
        // A recipe error keeps its diagnostic: file, line and span.
        if let crate::run::RunError::Settle(diagnostic) = err {
            return Exit::Input(miette::Report::new_boxed(diagnostic));
        }
        let code = err.exit_code();
        let report = miette::miette!("{err}");
        if code == 2 { Exit::Input(report) } else { Exit::Failed(report) }
    }
}

impl From<anvil_store::StoreError> for Exit {
    fn from(err: anvil_store::StoreError) -> Exit {
        Exit::Failed(miette::miette!("store: {err}"))
    }
}

pub fn input(message: impl std::fmt::Display) -> Exit {
    Exit::Input(miette::miette!("{message}"))
}

pub fn failed(message: impl std::fmt::Display) -> Exit {
    Exit::Failed(miette::miette!("{message}"))
}

pub fn open_store(root: &Path) -> Result<Store, Exit> {
    Store::open(root).map_err(|err| failed(format!("cannot open the store at {}: {err}", root.display())))
}

/// Load a recipe and plan it; recipe errors are input errors with spans.
pub fn load_plan(args: &RecipeArgs, store: Option<&Store>) -> Result<Plan, Exit> {
    let recipe =
        crate::recipe::load(&args.recipe, &args.set).map_err(|e| Exit::Input(miette::Report::new(e)))?;
    let mode = if args.sim { EngineMode::SimulatedTwins } else { EngineMode::AsDeclared };
    // Before any server starts: a broken trace found hours into a campaign held its GPUs for nothing.
    crate::plan::inputs::check_inputs(&recipe, mode).map_err(|e| Exit::Input(miette::Report::new(e)))?;
    Plan::build(recipe, store, mode).map_err(|e| Exit::Input(miette::Report::new(e)))
}
