//! `task` and `finally`: run a command; its exit status, output and declared
//! output files are its result. A `finally` step runs at the end of a run.

use std::collections::BTreeMap;
use std::time::Duration;

use super::super::decl::Draft;
use super::super::schema::{FieldSpec, Shape, field, many, required};

pub const FIELDS: &[FieldSpec] = &[
    required("run", Shape::Strings),
    field("cwd", Shape::Str),
    many("env", Shape::Props),
    many("reads", Shape::Strings),
    many("outputs", Shape::Strings),
    field("timeout", Shape::Duration),
];

#[derive(Debug, Clone)]
pub struct TaskDecl {
    /// Program and arguments (`{{`/`}}` are literal braces).
    pub run: Vec<String>,
    pub cwd: Option<String>,
    pub env: BTreeMap<String, String>,
    pub reads: Vec<String>,
    pub outputs: Vec<String>,
    pub timeout: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct FinallyDecl {
    pub task: TaskDecl,
    /// Run even when nothing else in the run executed.
    pub always: bool,
}

pub(super) fn build(draft: &Draft) -> TaskDecl {
    let s = &draft.settings;
    TaskDecl {
        run: s.strings("run"),
        cwd: s.string("cwd"),
        env: s.text_props("env"),
        reads: s.strings("reads"),
        outputs: s.strings("outputs"),
        timeout: s.duration("timeout"),
    }
}

pub(super) fn build_finally(draft: &Draft) -> FinallyDecl {
    FinallyDecl { task: build(draft), always: draft.settings.bool("always").unwrap_or(false) }
}
