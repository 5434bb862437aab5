//! What is sent: the cell's specification, where its requests come from
//! (synthetic prompts, a trace, a dataset, multi-turn sessions), how they
//! are paced in stages, and what their replies must say (canaries).

pub(crate) mod agent_format;
pub(crate) mod agent_plan;
pub mod agent_trace;
pub mod answer_budget;
pub(crate) mod calibrate;
pub(crate) mod canary;
pub(crate) mod dataset;
pub(crate) mod error_budget;
pub(crate) mod filler;
pub(crate) mod input_check;
#[cfg(test)]
mod input_proptests;
pub(crate) mod options;
pub(crate) mod prompt;
pub(crate) mod request;
pub(crate) mod scored;
pub(crate) mod session;
pub(crate) mod source;
pub(crate) mod spec;
pub(crate) mod split_mix;
pub(crate) mod stages;
pub(crate) mod stopping;
pub(crate) mod token_exact;
pub(crate) mod trace;
pub(crate) mod trace_line;
pub(crate) mod traffic;
