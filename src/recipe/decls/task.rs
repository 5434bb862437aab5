//! `task` and `finally`: run a command; its exit status, output and declared
//! output files are its result. A `finally` step runs at the end of a run.

use std::collections::BTreeMap;
use std::time::Duration;

use super::super::settings::{Draft, settings};

settings! {
    #[derive(Debug, Clone)]
    pub struct TaskDecl {
        /// Program and arguments (`{{`/`}}` are literal braces).
        pub run: Vec<String> = required "run" as Strings,
        pub cwd: Option<String> = "cwd" as Str,
        pub env: BTreeMap<String, String> = many "env" as TextProps,
        pub reads: Vec<String> = many "reads" as Strings,
        pub outputs: Vec<String> = many "outputs" as Strings,
        pub timeout: Option<Duration> = "timeout" as Duration,
    }
}

pub(super) fn build(draft: &Draft) -> TaskDecl {
    TaskDecl::from_settings(&draft.settings)
}
