//! anvil-expr: the gate expression language.
//!
//! A recipe's gate says `require "check.tp2-json.passed && pct_delta(cell.tp2.aggregate_tok_s, cell.tp1.aggregate_tok_s) > 5"`.
//! [`parse`] turns that into an [`Expr`]; [`Expr::references`] lists the
//! paths it reads (for validation and fingerprints); [`Expr::eval`] decides
//! the gate through a caller-supplied [`Resolver`] and explains the verdict.
//! The language reference is `docs/expressions.md`.
//!
//! ```
//! use anvil_expr::{JsonResolver, Value, evaluate_value, parse};
//!
//! let gate = parse("check.tp2-json.passed && pct_delta(cell.tp2.tok_s, cell.tp1.tok_s) > 5")?;
//! let read: Vec<String> = gate.references().iter().map(|r| r.to_string()).collect();
//! assert_eq!(read, ["check.tp2-json.passed", "cell.tp2.tok_s", "cell.tp1.tok_s"]);
//!
//! let results = serde_json::json!({
//!     "check": { "tp2-json": { "passed": true } },
//!     "cell": { "tp1": { "tok_s": 790.1 }, "tp2": { "tok_s": 812.4 } },
//! });
//! let verdict = gate.eval(&JsonResolver::new(&results));
//! assert_eq!(verdict.status(), "rejected");
//! assert!(verdict.detail().ends_with("= 2.822 > 5 → false) → false"));
//!
//! // Screens want a value: the name of the winning node.
//! let screen = parse("argmax(cell.tp*.tok_s)")?;
//! let winner = evaluate_value(&screen, &JsonResolver::new(&results))?;
//! assert_eq!(winner, Value::String("tp2".into()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Pipeline: `lexer` → `parser` → `ast` (+ `span`, `op`) → `eval` (+ `operators`,
//! `functions`) → `print` (details) → `evaluation` (verdict). Over intervals:
//! `over_ranges` (+ `range`) → [`Truth`].

mod ast;
mod error;
mod eval;
mod evaluation;
mod expr;
mod functions;
mod lexer;
mod logic;
mod op;
mod operators;
mod over_ranges;
mod parser;
mod print;
mod range;
mod reference;
mod resolver;
mod span;
mod value;

pub use error::{EvalError, ParseError, SelectError};
pub use evaluation::Evaluation;
pub use expr::Expr;
pub use logic::{Atom, Logic};
pub use over_ranges::Reading;
pub use range::{Range, Truth};
pub use reference::{PathSegment, Reference, glob_match};
pub use resolver::{JsonResolver, Resolved, Resolver};
pub use span::Span;
pub use value::{ListItem, Value, format_number};

/// Parses an expression. Errors carry a span into `src`.
pub fn parse(src: &str) -> Result<Expr, ParseError> {
    let tokens = lexer::tokenize(src)?;
    let (root, node_count) = parser::parse_tokens(src, tokens)?;
    Ok(Expr::new(src, root, node_count))
}

/// Evaluates to any value (not only true/false): for screens, e.g.
/// `argmax(cell.sglang-d*.aggregate_tok_s)` gives the winning node's name.
pub fn evaluate_value(expr: &Expr, resolver: &dyn Resolver) -> Result<Value, EvalError> {
    expr.evaluate_value(resolver)
}
