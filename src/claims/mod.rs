//! What a claim over stored results can get wrong: which fields are sampled
//! (`field_class`), how often a claim reading verdicts and intervals errs
//! (`error_bound`), and a decision's claims taken together (`family`).
//! Neither recipe syntax nor run machinery: the recipe states these bounds
//! when it loads, and a decision step states them again from its results.

pub mod error_bound;
pub mod family;
pub mod field_class;
