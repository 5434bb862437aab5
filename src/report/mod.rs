//! What anvil tells people: differences, summaries, rendered results.

pub mod campaign;
pub mod decision_summary;
pub mod export;
pub mod html;
pub mod model;
pub mod plot;
pub mod quality_summary;
pub mod stored_outputs;
pub mod workload_manifest;
