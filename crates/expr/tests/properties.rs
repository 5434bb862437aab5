//! Property tests (fuzz target `expr`) of the gate expression parser, with
//! proptest strategies beside the hand-rolled fuzzer in `fuzz.rs`:
//! arbitrary text never panics, error spans lie within the source on
//! character boundaries, and a generated expression written in any spelling
//! (whitespace, parentheses, `and`/`&&`, quotes, number forms) parses to the
//! same canonical form, which parses back to itself. Driver and seed corpus:
//! `fuzz/harness.rs`, `fuzz/corpus/expr/`, `scripts/fuzz.sh`.

#[path = "../../../fuzz/harness.rs"]
mod harness;

use anvil_expr::{Expr, JsonResolver, evaluate_value, parse};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;

/// Whatever `parse` says about `src`, it says it without panicking, and
/// every span it hands out can be used to slice `src`.
fn check_spans(src: &str) -> Result<Option<Expr>, TestCaseError> {
    let expr = match parse(src) {
        Ok(expr) => expr,
        Err(error) => {
            let (start, len) = error.span;
            prop_assert!(
                start + len <= src.len(),
                "span {:?} past the end of {:?}: {:?}",
                error.span,
                src,
                error
            );
            prop_assert!(
                src.is_char_boundary(start) && src.is_char_boundary(start + len),
                "span {:?} splits a character of {:?}",
                error.span,
                src
            );
            prop_assert!(!error.message.is_empty());
            return Ok(None);
        }
    };
    for reference in expr.references() {
        let (start, len) = reference.span;
        prop_assert!(
            start + len <= src.len() && src.is_char_boundary(start) && src.is_char_boundary(start + len)
        );
    }
    Ok(Some(expr))
}

/// The canonical form parses back to itself and reads the same paths.
fn check_canonical(src: &str, expr: &Expr) -> Result<String, TestCaseError> {
    let canonical = expr.to_string();
    let reparsed =
        parse(&canonical).map_err(|e| TestCaseError::fail(format!("{src:?} → {canonical:?}: {e:?}")))?;
    prop_assert_eq!(&reparsed.to_string(), &canonical, "{:?}", src);
    let paths = |e: &Expr| e.references().iter().map(ToString::to_string).collect::<Vec<_>>();
    prop_assert_eq!(paths(&reparsed), paths(expr), "{:?} vs {:?}", src, canonical);
    // Evaluation against an empty campaign must not panic either.
    let empty = serde_json::json!({});
    let _ = expr.eval(&JsonResolver::new(&empty)).detail().to_string();
    let _ = evaluate_value(expr, &JsonResolver::new(&empty));
    Ok(canonical)
}

fn check_source(src: &str) -> TestCaseResult {
    if let Some(expr) = check_spans(src)? {
        check_canonical(src, &expr)?;
    }
    Ok(())
}

const TOKENS: &[&str] = &[
    "cell.tp1.aggregate_tok_s",
    "check.tp2-json.passed",
    "cell.sglang-d*.tok_s",
    "cell.x.runs[2]",
    "param.depth",
    "1",
    "2.5",
    "1e3",
    "1e",
    "-",
    "+",
    "*",
    "/",
    "%",
    "(",
    ")",
    ",",
    "!",
    "not",
    "and",
    "or",
    "&&",
    "||",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "true",
    "null",
    "'s'",
    "\"t\\\"",
    "'",
    "\"",
    "\\",
    "pct_delta(",
    "mean(",
    "exists(",
    "argmax(",
    "[",
    "]",
    ".",
    "é",
    "😀",
    "\u{0}",
    " ",
];

fn token_soup() -> impl Strategy<Value = String> {
    vec(proptest::sample::select(TOKENS), 0..16).prop_map(|tokens| tokens.concat())
}

#[test]
fn fuzz_expr_arbitrary_text_never_panics() {
    let text = prop_oneof![any::<String>(), "[ -~]{0,40}", token_soup()];
    harness::check("expr", "arbitrary_text", 256, text, |src| check_source(&src));
}

#[test]
fn fuzz_expr_arbitrary_bytes_never_panic() {
    let bytes = vec(any::<u8>(), 0..64);
    harness::check("expr", "arbitrary_bytes", 256, bytes, |bytes| {
        check_source(&String::from_utf8_lossy(&bytes))
    });
}

// ------------------------------------------------ generated expressions

/// A generated expression, written out by [`Spelling`].
#[derive(Debug, Clone)]
enum Gen {
    /// `mantissa * 10^-scale`, e.g. (25, 1) is 2.5.
    Number(u32, u8),
    Str(String),
    Bool(bool),
    Null,
    Path(String),
    Not(Box<Gen>),
    Negate(Box<Gen>),
    Binary(&'static str, Box<Gen>, Box<Gen>),
    Call(&'static str, Vec<Gen>),
    Exists(String),
}

const BINARY: &[&str] = &["||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"];

/// Functions and how many arguments they take (as in `fuzz.rs`).
const FUNCTIONS: &[(&str, usize)] = &[
    ("pct_delta", 2),
    ("abs", 1),
    ("min", 1),
    ("max", 3),
    ("mean", 2),
    ("count", 2),
    ("all", 1),
    ("any", 2),
    ("len", 1),
    ("contains", 2),
    ("argmax", 1),
    ("argmin", 1),
];

fn segment() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,4}(-[a-z0-9]{1,3})?".prop_filter("not a keyword", |s| {
        !["and", "or", "not", "true", "false", "null"].contains(&s.as_str())
    })
}

fn path() -> impl Strategy<Value = String> {
    let kind = proptest::sample::select(&["cell", "check", "server", "task", "gate", "param"][..]);
    let name = (segment(), any::<bool>()).prop_map(|(s, glob)| if glob { format!("{s}*") } else { s });
    let field = (segment(), proptest::option::of(0u8..5))
        .prop_map(|(s, index)| index.map_or(s.clone(), |i| format!("{s}[{i}]")));
    (kind, name, vec(field, 0..3)).prop_map(|(kind, name, fields)| {
        // A wildcard name needs a field after it.
        let fields =
            if name.ends_with('*') && fields.is_empty() { vec!["tok_s".to_string()] } else { fields };
        std::iter::once(kind.to_string())
            .chain(std::iter::once(name))
            .chain(fields)
            .collect::<Vec<_>>()
            .join(".")
    })
}

fn gen_expr() -> impl Strategy<Value = Gen> {
    let leaf = prop_oneof![
        (0u32..100_000, 0u8..4).prop_map(|(m, s)| Gen::Number(m, s)),
        "[a-zA-Z0-9 _'\"\\\\\n\t-]{0,8}".prop_map(Gen::Str),
        any::<bool>().prop_map(Gen::Bool),
        Just(Gen::Null),
        path().prop_map(Gen::Path),
        path().prop_map(Gen::Exists),
    ];
    leaf.prop_recursive(5, 48, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|g| Gen::Not(Box::new(g))),
            inner.clone().prop_map(|g| Gen::Negate(Box::new(g))),
            (proptest::sample::select(BINARY), inner.clone(), inner.clone())
                .prop_map(|(op, l, r)| Gen::Binary(op, Box::new(l), Box::new(r))),
            (proptest::sample::select(FUNCTIONS), vec(inner, 3)).prop_map(|((name, arity), mut args)| {
                args.truncate(arity);
                Gen::Call(name, args)
            }),
        ]
    })
}

/// How to write a [`Gen`]: a stream of choices.
struct Spelling(u64);

impl Spelling {
    fn pick(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn space(&mut self, out: &mut String) {
        for _ in 0..self.pick(3) {
            out.push([' ', '\t', '\n'][self.pick(3) as usize]);
        }
    }

    /// Writes `g` fully parenthesized where precedence could matter, with
    /// random whitespace, redundant parentheses and alternative spellings.
    fn write(&mut self, g: &Gen, out: &mut String) {
        let redundant = self.pick(6) == 0;
        if redundant {
            out.push('(');
            self.space(out);
        }
        match g {
            Gen::Number(mantissa, scale) => out.push_str(&self.number(*mantissa, *scale)),
            Gen::Str(s) => self.string(s, out),
            Gen::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Gen::Null => out.push_str("null"),
            Gen::Path(p) => out.push_str(p),
            Gen::Exists(p) => {
                out.push_str("exists(");
                self.space(out);
                out.push_str(p);
                self.space(out);
                out.push(')');
            }
            Gen::Not(inner) => {
                out.push_str(if self.pick(2) == 0 { "!" } else { "not " });
                self.space(out);
                self.parenthesized(inner, out);
            }
            Gen::Negate(inner) => {
                out.push('-');
                self.space(out);
                self.parenthesized(inner, out);
            }
            Gen::Binary(op, lhs, rhs) => {
                self.parenthesized(lhs, out);
                out.push(' ');
                self.space(out);
                let op = match *op {
                    "&&" if self.pick(2) == 0 => "and",
                    "||" if self.pick(2) == 0 => "or",
                    op => op,
                };
                out.push_str(op);
                out.push(' ');
                self.space(out);
                self.parenthesized(rhs, out);
            }
            Gen::Call(name, args) => {
                out.push_str(name);
                out.push('(');
                for (i, arg) in args.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.space(out);
                    self.write(arg, out);
                    self.space(out);
                }
                out.push(')');
            }
        }
        if redundant {
            self.space(out);
            out.push(')');
        }
    }

    fn parenthesized(&mut self, g: &Gen, out: &mut String) {
        out.push('(');
        self.space(out);
        self.write(g, out);
        self.space(out);
        out.push(')');
    }

    /// `mantissa * 10^-scale` in one of several exact spellings.
    fn number(&mut self, mantissa: u32, scale: u8) -> String {
        let digits = mantissa.to_string();
        match self.pick(3) {
            0 => format!("{digits}e-{scale}"),
            1 => format!("{digits}0e-{}", scale + 1),
            _ if scale == 0 => digits,
            _ => {
                let scale = usize::from(scale);
                let padded = format!("{digits:0>width$}", width = scale + 1);
                let (int, frac) = padded.split_at(padded.len() - scale);
                format!("{int}.{frac}")
            }
        }
    }

    fn string(&mut self, s: &str, out: &mut String) {
        let quote = if self.pick(2) == 0 { '"' } else { '\'' };
        out.push(quote);
        for c in s.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if c == quote => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        out.push(quote);
    }
}

#[test]
fn fuzz_expr_spellings_of_one_expression_share_a_canonical_form() {
    let strategy = (gen_expr(), any::<u64>(), any::<u64>());
    harness::check("expr", "spellings_share_canonical_form", 256, strategy, |(g, a, b)| {
        let (mut first, mut second) = (String::new(), String::new());
        Spelling(a | 1).write(&g, &mut first);
        Spelling(b | 1).write(&g, &mut second);
        let parsed = |src: &str| {
            parse(src).map_err(|e| {
                TestCaseError::fail(format!("{src:?} does not parse: {} at {:?}", e.message, e.span))
            })
        };
        let (x, y) = (parsed(&first)?, parsed(&second)?);
        check_spans(&first)?;
        let canonical = check_canonical(&first, &x)?;
        prop_assert_eq!(&y.to_string(), &canonical, "{:?} vs {:?}", first, second);
        Ok(())
    });
}

#[test]
fn fuzz_expr_mutated_corpus_never_panics() {
    let seeds: Vec<Vec<u8>> = harness::corpus("expr").into_iter().map(|(_, b)| b).collect();
    let insert = proptest::sample::select(TOKENS).prop_map(|t| t.as_bytes().to_vec());
    harness::check("expr", "mutated_corpus", 256, harness::mutated(seeds, insert, 5), |bytes| {
        check_source(&String::from_utf8_lossy(&bytes))
    });
}

#[test]
fn corpus_expr_replays() {
    for (name, bytes) in harness::corpus("expr") {
        let src = String::from_utf8(bytes).unwrap_or_else(|_| panic!("{name} is not UTF-8"));
        let src = src.trim_end_matches('\n');
        check_source(src).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Files named ok-* hold expressions that must parse.
        if name.starts_with("ok-") {
            parse(src).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        }
    }
}
