//! `finally`: a task that runs at the end of a run; it takes a task's
//! settings (`task::FIELDS`) and its own.

use super::super::settings::{Draft, settings};
use super::task::{self, TaskDecl};

settings! {
    #[derive(Debug, Clone)]
    pub struct FinallyDecl {
        pub task: TaskDecl,
        /// Run even when nothing else in the run executed.
        pub always: bool = "always" as Bool or false,
    }
    /// The task it runs.
    struct FinallyRest;
}

pub(super) fn build(draft: &Draft) -> FinallyDecl {
    FinallyDecl::from_settings(&draft.settings, FinallyRest { task: task::build(draft) })
}
