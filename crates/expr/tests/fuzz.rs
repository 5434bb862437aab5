//! Fuzz-ish robustness: thousands of random byte strings and random token
//! soups must never panic, spans must stay inside the source, and the
//! canonical form must parse back to an expression that evaluates the same.

use anvil_expr::{EvalError, Reference, Resolved, Resolver, evaluate_value, parse};

/// xorshift64*: a tiny deterministic generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Answers each path with a value of a type chosen by the path's text, so
/// every type (and absence) reaches every operator and function.
struct Chaotic;

impl Resolver for Chaotic {
    fn resolve(&self, reference: &Reference) -> Resolved {
        let path = reference.to_string();
        let pick = path.bytes().fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))) % 11;
        let json = match pick {
            0 => serde_json::json!(3.5),
            1 => serde_json::json!(0),
            2 => serde_json::json!(-2),
            3 => serde_json::json!(true),
            4 => serde_json::json!("text"),
            5 => serde_json::Value::Null,
            6 => serde_json::json!([1, 2, 3]),
            7 => serde_json::json!({"p50": 1}),
            8 => return Resolved::Missing(format!("{path} was not run")),
            9 => return Resolved::Many(vec![]),
            _ => {
                return Resolved::Many(vec![
                    ("a".into(), serde_json::json!(1.5)),
                    ("b".into(), serde_json::json!(false)),
                ]);
            }
        };
        Resolved::Value(json)
    }
}

const VOCABULARY: &[&str] = &[
    "cell.tp1.aggregate_tok_s",
    "check.tp2-json.passed",
    "cell.sglang-d*.tok_s",
    "param.depth",
    "cell.x.runs[2]",
    "server.a.b.c",
    "a.b",
    "1",
    "0",
    "2.5",
    "1e3",
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
    "false",
    "null",
    "'s'",
    "\"t\"",
    "pct_delta(",
    "abs(",
    "min(",
    "max(",
    "mean(",
    "count(",
    "all(",
    "any(",
    "len(",
    "contains(",
    "argmax(",
    "argmin(",
    "exists(",
    "=",
    "&",
    "|",
    ".",
    "[",
    "]",
    "*.",
    "\\",
    "é",
    "foo",
];

fn check_source(src: &str) {
    let expr = match parse(src) {
        Ok(expr) => expr,
        Err(error) => {
            assert!(error.span.0 + error.span.1 <= src.len(), "{src:?}: {error:?}");
            assert!(src.is_char_boundary(error.span.0), "{src:?}: {error:?}");
            return;
        }
    };
    for reference in expr.references() {
        assert!(reference.span.0 + reference.span.1 <= src.len(), "{src:?}");
    }
    let verdict = expr.eval(&Chaotic);
    assert!(!verdict.detail().is_empty());
    let value = evaluate_value(&expr, &Chaotic);
    if let Err(EvalError::Invalid { span, .. }) = &value {
        assert!(span.0 + span.1 <= src.len(), "{src:?}: {value:?}");
    }
    // The canonical form is stable and means the same thing.
    let canonical = expr.to_string();
    let reparsed = parse(&canonical).unwrap_or_else(|e| panic!("{src:?} → {canonical:?}: {e:?}"));
    assert_eq!(reparsed.to_string(), canonical, "{src:?}");
    assert_eq!(reparsed.eval(&Chaotic).status(), verdict.status(), "{src:?} vs {canonical:?}");
    let revalue = evaluate_value(&reparsed, &Chaotic);
    match (&value, &revalue) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{src:?} vs {canonical:?}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{src:?} vs {canonical:?}: {value:?} / {revalue:?}"),
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..5_000 {
        let len = rng.below(48);
        let bytes: Vec<u8> = (0..len).map(|_| (rng.next() & 0xff) as u8).collect();
        check_source(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn random_printable_ascii_never_panics() {
    let mut rng = Rng(42);
    for _ in 0..5_000 {
        let len = rng.below(40);
        let text: String = (0..len).map(|_| (b' ' + rng.below(95) as u8) as char).collect();
        check_source(&text);
    }
}

#[test]
fn random_token_soups_never_panic_and_round_trip() {
    let mut rng = Rng(7);
    let mut parsed = 0;
    for _ in 0..20_000 {
        let mut src = String::new();
        for _ in 0..1 + rng.below(14) {
            src.push_str(VOCABULARY[rng.below(VOCABULARY.len())]);
            if rng.below(3) != 0 {
                src.push(' ');
            }
        }
        if parse(&src).is_ok() {
            parsed += 1;
        }
        check_source(&src);
    }
    // The soup is meant to reach the evaluator, not only the error paths.
    assert!(parsed > 200, "only {parsed} soups parsed");
}

/// A random well-formed expression (types may still clash at evaluation).
fn random_expression(rng: &mut Rng, depth: usize) -> String {
    const ATOMS: &[&str] = &[
        "cell.tp1.aggregate_tok_s",
        "cell.sglang-d*.tok_s",
        "check.tp2-json.passed",
        "param.depth",
        "cell.x.runs[1]",
        "1",
        "0",
        "2.5",
        "1e3",
        "true",
        "false",
        "null",
        "'s'",
        "\"t\\\"q\"",
    ];
    const BINARY: &[&str] =
        &["&&", "||", "and", "or", "==", "!=", "<", "<=", ">", ">=", "+", " - ", "*", "/", "%"];
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
    if depth == 0 {
        return ATOMS[rng.below(ATOMS.len())].to_string();
    }
    match rng.below(6) {
        0 => ATOMS[rng.below(ATOMS.len())].to_string(),
        1 => format!("({})", random_expression(rng, depth - 1)),
        2 => {
            let op = ["!", "not ", "-"][rng.below(3)];
            format!("{op}{}", random_expression(rng, depth - 1))
        }
        3 => {
            let (name, arity) = FUNCTIONS[rng.below(FUNCTIONS.len())];
            let args: Vec<String> = (0..arity).map(|_| random_expression(rng, depth - 1)).collect();
            format!("{name}({})", args.join(", "))
        }
        4 => "exists(cell.tp1.runs[0])".to_string(),
        _ => {
            // Parenthesize the sides so random comparisons never chain.
            let op = BINARY[rng.below(BINARY.len())];
            let lhs = random_expression(rng, depth - 1);
            let rhs = random_expression(rng, depth - 1);
            format!("({lhs}) {op} ({rhs})")
        }
    }
}

#[test]
fn random_well_formed_expressions_parse_evaluate_and_round_trip() {
    let mut rng = Rng(2024);
    for _ in 0..5_000 {
        let src = random_expression(&mut rng, 5);
        parse(&src).unwrap_or_else(|e| panic!("{src:?}: {e:?}"));
        check_source(&src);
    }
}
