//! Parsing: precedence, associativity, paths, canonical form and error spans.

use crate::common::{number, value};
use anvil_expr::{PathSegment, Reference, Value, parse};

#[test]
fn arithmetic_precedence_and_left_associativity() {
    assert_eq!(number("1 + 2 * 3"), 7.0);
    assert_eq!(number("(1 + 2) * 3"), 9.0);
    assert_eq!(number("10 - 4 - 3"), 3.0);
    assert_eq!(number("64 / 4 / 2"), 8.0);
    assert_eq!(number("2 * 7 % 4"), 2.0);
    assert_eq!(number("-2 * 3"), -6.0);
    assert_eq!(number("- -2"), 2.0);
    assert_eq!(number("1e3 + 1.5e-1"), 1000.15);
}

#[test]
fn logical_precedence_and_keywords() {
    assert_eq!(value("true || false && false"), Value::Bool(true));
    assert_eq!(value("(true || false) && false"), Value::Bool(false));
    assert_eq!(value("!true || true"), Value::Bool(true));
    assert_eq!(value("not false and false"), Value::Bool(false));
    assert_eq!(value("false or not false"), Value::Bool(true));
    assert_eq!(value("1 + 1 == 2 && 3 > 2"), Value::Bool(true));
    assert_eq!(value("!(1 > 2)"), Value::Bool(true));
}

#[test]
fn comparisons_of_numbers_and_strings() {
    for (src, expected) in [
        ("1 < 2", true),
        ("2 <= 2", true),
        ("3 > 2", true),
        ("2 >= 3", false),
        ("2 == 2.0", true),
        ("2 != 2", false),
        ("'abc' < 'abd'", true),
        ("\"x\" == 'x'", true),
        ("null == null", true),
        ("cell.tp1.aggregate_tok_s == null", false),
        ("check.smoke.note == null", true),
    ] {
        assert_eq!(value(src), Value::Bool(expected), "{src}");
    }
}

#[test]
fn paths_with_hyphens_wildcards_and_indexes() {
    let expr = parse("check.tp2-json.passed && cell.sglang-d*.x[2].y > param.depth").expect("parses");
    let references = expr.references();
    assert_eq!(
        references[0],
        Reference {
            kind: "check".into(),
            name: "tp2-json".into(),
            field: vec![PathSegment::Key("passed".into())],
            span: (0, 21),
        }
    );
    assert_eq!(references[1].name, "sglang-d*");
    assert_eq!(
        references[1].field,
        vec![PathSegment::Key("x".into()), PathSegment::Index(2), PathSegment::Key("y".into())]
    );
    assert!(references[1].is_wildcard());
    assert_eq!(references[2].to_string(), "param.depth");
    assert!(references[2].field.is_empty());
}

#[test]
fn subtraction_next_to_a_path_needs_spaces() {
    // With spaces: param.depth minus 1.
    assert_eq!(number("param.depth - 1"), 7.0);
    assert_eq!(number("param.depth -1"), 7.0);
    // Without: `depth-1` is one name, which the resolver does not know.
    let expr = parse("param.depth-1").expect("parses as one path");
    assert_eq!(expr.references()[0].name, "depth-1");
    // `*` right after a name without a field is multiplication.
    assert_eq!(number("param.depth*2"), 16.0);
}

#[test]
fn references_lists_every_occurrence_in_source_order() {
    let expr = parse("exists(cell.a.x) || cell.b.y > cell.a.x").expect("parses");
    let paths: Vec<String> = expr.references().iter().map(ToString::to_string).collect();
    assert_eq!(paths, ["cell.a.x", "cell.b.y", "cell.a.x"]);
    let spans: Vec<_> = expr.references().iter().map(|r| r.span).collect();
    assert_eq!(spans, [(7, 8), (20, 8), (31, 8)]);
}

#[test]
fn canonical_form_ignores_spelling_but_keeps_meaning() {
    let cases = [
        ("a.b.c  +  1*2", "a.b.c + 1 * 2"),
        ("(a.b.c + 1) * 2", "(a.b.c + 1) * 2"),
        ("((a.b.c))", "a.b.c"),
        ("x.y.z and not (p.q.r or 1e3 > 5)", "x.y.z && !(p.q.r || 1000 > 5)"),
        ("'it\\'s'", "\"it's\""),
        ("10 - (4 - 3)", "10 - (4 - 3)"),
        ("(10 - 4) - 3", "10 - 4 - 3"),
        ("(a.b.c < 1) == true", "(a.b.c < 1) == true"),
        ("max( cell.*.x ,1)", "max(cell.*.x, 1)"),
        ("-(1 + 2)", "-(1 + 2)"),
    ];
    for (src, canonical) in cases {
        let expr = parse(src).unwrap_or_else(|e| panic!("{src}: {e:?}"));
        assert_eq!(expr.to_string(), canonical, "{src}");
        let again = parse(canonical).expect("canonical form parses");
        assert_eq!(again.to_string(), canonical, "canonical form is stable: {src}");
    }
}

/// (source, message fragment, span, help fragment)
#[test]
fn parse_errors_point_into_the_source() {
    let cases: [(&str, &str, (usize, usize), &str); 17] = [
        ("", "empty expression", (0, 0), "condition"),
        ("1 +", "expected a value, found end of expression", (3, 0), ""),
        ("(1 + 2", "expected `)`", (6, 0), "not closed"),
        ("1 2", "unexpected `2` after a complete expression", (2, 1), "&&"),
        ("a.b.c = 1", "unexpected `=`", (6, 1), "=="),
        ("a.b.c & d.e.f", "unexpected `&`", (6, 1), "&&"),
        ("pct_delt(1, 2)", "unknown function `pct_delt`", (0, 8), "pct_delta"),
        ("frobnicate(1)", "unknown function", (0, 10), "functions: pct_delta"),
        ("pct_delta(1)", "pct_delta takes 2 arguments, got 1", (0, 12), "pct_delta(new, baseline)"),
        ("abs()", "abs takes 1 argument, got 0", (0, 5), ""),
        ("exists(1 + 1)", "exists() takes a path", (7, 5), ""),
        ("passed", "`passed` is not a value", (0, 6), "kind and a name"),
        ("1 < 2 < 3", "comparisons cannot be chained", (6, 1), "&&"),
        ("cell.", "expected a name after `.`", (4, 1), ""),
        ("cell.*", "wildcard name needs a field", (5, 1), ""),
        ("count(cell.sglang-*)", "wildcard name needs a field", (11, 8), "sglang-*.aggregate"),
        ("cell.x.y[a]", "expected a list index", (8, 2), ""),
    ];
    for (src, message, span, help) in cases {
        let error = parse(src).err().unwrap_or_else(|| panic!("{src} should not parse"));
        assert!(error.message.contains(message), "{src}: message {:?}", error.message);
        assert_eq!(error.span, span, "{src}: span for {:?}", error.message);
        let actual_help = error.help.clone().unwrap_or_default();
        assert!(actual_help.contains(help), "{src}: help {actual_help:?}");
        // Every span lies inside the source, so it can be underlined.
        assert!(span.0 + span.1 <= src.len());
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep_parens = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let error = parse(&deep_parens).expect_err("too deep");
    assert!(error.message.contains("levels deep"), "{error:?}");
    let long_chain = vec!["1"; 100_000].join(" + ");
    assert!(parse(&long_chain).is_err());
    let many_nots = format!("{}true", "!".repeat(100_000));
    assert!(parse(&many_nots).is_err());
    // A realistic long gate is fine.
    let fifty_clauses = vec!["cell.a.x > 1"; 50].join(" && ");
    assert!(parse(&fifty_clauses).is_ok());
}
