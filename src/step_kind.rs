//! The kinds of step a campaign holds (and of declaration a recipe may
//! hold): vocabulary shared by the recipe, the plan, step documents and the
//! executors, so none of them needs another's types to name a kind.

use anvil_words::words;

words! {
    #[serde]
    #[derive(PartialOrd, Ord)]
    pub enum Kind {
        Server = "server",
        Workload = "workload",
        Cell = "cell",
        Check = "check",
        Gate = "gate",
        Task = "task",
        Screen = "screen",
        Decision = "decision",
        Finally = "finally",
        Search = "search",
    }
}

impl Kind {
    /// Workloads are settings that cells take in; they are not steps of the DAG.
    pub fn is_step(self) -> bool {
        self != Kind::Workload
    }
}
