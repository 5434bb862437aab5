//! Evaluation: gate verdicts, functions, wildcards, missing inputs, errors
//! and the detail strings people read.

use crate::common::{campaign, gate, number, value};
use anvil_expr::{EvalError, Evaluation, JsonResolver, Value, evaluate_value, parse};

#[test]
fn the_brief_example_reads_well() {
    let verdict =
        gate("check.tp2-json.passed && pct_delta(cell.tp2.aggregate_tok_s, cell.tp1.aggregate_tok_s) > 5");
    assert_eq!(verdict.status(), "rejected");
    assert_eq!(
        verdict.detail(),
        "check.tp2-json.passed = true && (pct_delta(cell.tp2.aggregate_tok_s = 812.4, \
         cell.tp1.aggregate_tok_s = 790.1) = 2.822 > 5 → false) → false"
    );
    let single = gate("pct_delta(cell.tp2.aggregate_tok_s, cell.tp1.aggregate_tok_s) > 2");
    assert_eq!(
        single,
        Evaluation::Passed {
            detail: "pct_delta(cell.tp2.aggregate_tok_s = 812.4, cell.tp1.aggregate_tok_s = 790.1) \
                     = 2.822 > 2 → true"
                .into()
        }
    );
}

#[test]
fn arithmetic_operands_show_their_result() {
    let verdict = gate("cell.tp2.ttft.p99 - cell.tp1.ttft.p99 < 0.25");
    assert_eq!(verdict.status(), "rejected");
    assert_eq!(verdict.detail(), "(cell.tp2.ttft.p99 = 1.4 - cell.tp1.ttft.p99 = 0.9 → 0.5) < 0.25 → false");
}

#[test]
fn every_function() {
    assert_eq!(number("pct_delta(110, 100)"), 10.0);
    assert_eq!(number("pct_delta(90, 100)"), -10.0);
    assert_eq!(number("abs(-3.5)"), 3.5);
    assert_eq!(number("min(3, 1, 2)"), 1.0);
    assert_eq!(number("max(3, 1, 2)"), 3.0);
    assert_eq!(number("mean(1, 2, 6)"), 3.0);
    assert_eq!(number("min(cell.sglang-d*.aggregate_tok_s)"), 700.0);
    assert_eq!(number("max(cell.sglang-d*.aggregate_tok_s)"), 910.5);
    assert_eq!(number("mean(cell.tp1.runs)"), 20.0);
    assert_eq!(number("count(cell.sglang-d*.passed)"), 3.0);
    assert_eq!(number("count(cell.sglang-d*.passed, true)"), 2.0);
    assert_eq!(value("all(cell.sglang-d*.passed)"), Value::Bool(false));
    assert_eq!(value("any(cell.sglang-d*.passed)"), Value::Bool(true));
    assert_eq!(value("all(true, 1 < 2)"), Value::Bool(true));
    assert_eq!(value("any(false, false)"), Value::Bool(false));
    assert_eq!(number("len(cell.tp1.runs)"), 3.0);
    assert_eq!(number("len('héllo')"), 5.0);
    assert_eq!(number("len(cell.tp1.ttft)"), 2.0);
    assert_eq!(value("contains(check.tp2-json.engine, 'sglang')"), Value::Bool(true));
    assert_eq!(value("contains(check.tp2-json.labels, 'strict')"), Value::Bool(true));
    assert_eq!(value("contains(check.tp2-json.labels, 3)"), Value::Bool(false));
    // argmax/argmin name the winning node; ties go to the first in sweep order.
    assert_eq!(value("argmax(cell.sglang-d*.aggregate_tok_s)"), Value::String("sglang-d8".into()));
    assert_eq!(value("argmin(cell.sglang-d*.aggregate_tok_s)"), Value::String("sglang-d4".into()));
    // Over a plain list they give the index.
    assert_eq!(value("argmax(cell.tp1.runs)"), Value::Number(2.0));
    assert_eq!(value("exists(cell.tp1.aggregate_tok_s)"), Value::Bool(true));
    assert_eq!(value("exists(cell.nope.aggregate_tok_s)"), Value::Bool(false));
    assert_eq!(value("exists(cell.nope-*.aggregate_tok_s)"), Value::Bool(false));
    assert_eq!(value("exists(cell.tp1.runs[5])"), Value::Bool(false));
}

#[test]
fn a_screen_picks_its_winner_with_evaluate_value() {
    let results = campaign();
    let expr = parse("argmax(cell.sglang-d*.aggregate_tok_s)").expect("parses");
    let winner = evaluate_value(&expr, &JsonResolver::new(&results)).expect("evaluates");
    assert_eq!(winner.to_json(), serde_json::json!("sglang-d8"));
}

#[test]
fn wildcards_give_named_lists_in_details() {
    let verdict = gate("min(cell.sglang-d*.aggregate_tok_s) > 800");
    assert_eq!(
        verdict.detail(),
        "min(cell.sglang-d*.aggregate_tok_s = [sglang-d4: 700, sglang-d8: 910.5, sglang-d12: 910.5]) \
         = 700 > 800 → false"
    );
}

#[test]
fn indexes_read_list_items() {
    assert_eq!(number("cell.tp1.runs[1]"), 20.0);
    assert_eq!(number("cell.tp1.runs[0] + cell.tp1.runs[2]"), 40.0);
}

#[test]
fn missing_inputs_make_the_gate_missing() {
    let verdict = gate("pct_delta(cell.tp3.aggregate_tok_s, cell.tp1.aggregate_tok_s) > 5");
    assert_eq!(
        verdict,
        Evaluation::Missing {
            detail: "missing cell.tp3.aggregate_tok_s (no result for cell tp3): \
                     pct_delta(cell.tp3.aggregate_tok_s = <missing>, cell.tp1.aggregate_tok_s = 790.1) > 5 \
                     → missing"
                .into(),
            missing: vec!["cell.tp3.aggregate_tok_s".into()],
        }
    );
    // Every missing input is listed once, in source order.
    let both = gate("cell.a.x + cell.b.y + cell.a.x > 0");
    let Evaluation::Missing { missing, .. } = both else { panic!("{both:?}") };
    assert_eq!(missing, ["cell.a.x", "cell.b.y"]);
    // A field that is not there is missing too, with the reason.
    let field = gate("cell.tp1.latency > 0");
    assert!(field.detail().contains("cell.tp1 has no field `latency`"), "{}", field.detail());
    let index = gate("cell.tp2.runs[0] > 0");
    assert!(index.detail().contains("cell.tp2.runs has 0 items, no [0]"), "{}", index.detail());
}

#[test]
fn logic_is_three_valued_in_both_orders() {
    // A side that decides alone wins over a missing side, on either side.
    assert_eq!(gate("false && cell.nope.x").status(), "rejected");
    assert_eq!(gate("cell.nope.x && false").status(), "rejected");
    assert_eq!(gate("true || cell.nope.x").status(), "passed");
    assert_eq!(gate("cell.nope.x || true").status(), "passed");
    // Otherwise the result depends on the missing side.
    assert_eq!(gate("true && cell.nope.x").status(), "missing");
    assert_eq!(gate("cell.nope.x && true").status(), "missing");
    assert_eq!(gate("false || cell.nope.x").status(), "missing");
    assert_eq!(gate("cell.nope.x || cell.nada.y").status(), "missing");
    // `!` and comparisons of a missing input stay missing.
    assert_eq!(gate("!cell.nope.x").status(), "missing");
    assert_eq!(gate("cell.nope.x == null").status(), "missing");
    // exists() is never missing.
    assert_eq!(gate("!exists(cell.nope.x) || cell.nope.x > 1").status(), "passed");
}

#[test]
fn short_circuit_is_visible_in_details() {
    let verdict = gate("check.smoke.passed && cell.nope.x > 1");
    assert_eq!(verdict.detail(), "check.smoke.passed = false && (cell.nope.x > 1) → false");
    let missing_left = gate("cell.nope.x > 1 && check.smoke.passed");
    assert_eq!(
        missing_left.detail(),
        "(cell.nope.x = <missing> > 1 → missing) && check.smoke.passed = false → false"
    );
}

#[test]
fn evaluation_errors_are_explained() {
    let cases = [
        ("1 / 0 > 1", "division by zero: 1 / 0"),
        ("5 % 0 == 1", "division by zero: 5 % 0"),
        ("pct_delta(cell.tp1.aggregate_tok_s, cell.zero.aggregate_tok_s) > 5", "pct_delta: division by zero"),
        ("'5' > 3", "cannot compare string \"5\" with number 3 using `>`"),
        ("check.tp2-json.passed == 'true'", "cannot compare bool true with string \"true\""),
        ("cell.sglang-d*.aggregate_tok_s > 5", "reduce the list first"),
        ("1 + true > 0", "`+` needs numbers on both sides, got number 1 and bool true"),
        ("1 && true", "`&&` needs true or false on both sides, got number 1 on the left"),
        ("!3", "`!` needs true or false, got number 3"),
        ("-'x' == 1", "`-` needs a number, got string \"x\""),
        ("mean(cell.nope-*.x) > 0", "missing"),
        ("max(cell.tp2.runs) > 0", "max: the list is empty"),
        ("argmax(1) == 0", "argmax: expects a list, got number 1"),
        ("mean(check.*.passed) > 0", "mean: expects numbers, but tp2-json is bool true"),
        ("all(cell.tp1.runs)", "all: expects true or false, got number 10"),
        ("len(3) > 1", "len: expects a string, list or object, got number 3"),
        ("cell.tp1.ttft > 1", "cannot compare object"),
    ];
    for (src, fragment) in cases {
        let verdict = gate(src);
        assert!(verdict.detail().contains(fragment), "{src}: {verdict:?}");
        if fragment != "missing" {
            assert_eq!(verdict.status(), "error", "{src}");
        }
    }
}

#[test]
fn non_boolean_gates_are_errors() {
    let verdict = gate("cell.tp1.aggregate_tok_s");
    assert_eq!(
        verdict,
        Evaluation::Error {
            detail: "gate expression must be true or false, got number 790.1: \
                     cell.tp1.aggregate_tok_s = 790.1"
                .into()
        }
    );
}

#[test]
fn invalid_errors_carry_the_span_of_the_culprit() {
    let results = campaign();
    let src = "1 + pct_delta(3, cell.zero.aggregate_tok_s)";
    let expr = parse(src).expect("parses");
    match evaluate_value(&expr, &JsonResolver::new(&results)) {
        Err(EvalError::Invalid { span, .. }) => {
            assert_eq!(&src[span.0..span.0 + span.1], "cell.zero.aggregate_tok_s");
        }
        other => panic!("{other:?}"),
    }
    let src = "2 * (1 / 0)";
    let expr = parse(src).expect("parses");
    match evaluate_value(&expr, &JsonResolver::new(&results)) {
        Err(EvalError::Invalid { span, .. }) => {
            assert_eq!(&src[span.0..span.0 + span.1], "(1 / 0)")
        }
        other => panic!("{other:?}"),
    }
    match evaluate_value(&parse("cell.nope.x").expect("parses"), &JsonResolver::new(&results)) {
        Err(EvalError::Missing { references, .. }) => assert_eq!(references, ["cell.nope.x"]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_custom_resolver_sees_each_reference() {
    use anvil_expr::{Reference, Resolved, Resolver};
    use std::cell::RefCell;

    /// Answers every path with its own length, and records what it was asked.
    struct Recording(RefCell<Vec<String>>);
    impl Resolver for Recording {
        fn resolve(&self, reference: &Reference) -> Resolved {
            let path = reference.to_string();
            self.0.borrow_mut().push(path.clone());
            Resolved::Value(serde_json::json!(path.len()))
        }
    }
    let resolver = Recording(RefCell::new(Vec::new()));
    let verdict = parse("server.sglang.gpu_mem_gb > 10 || task.later.kind_of.field > 0")
        .expect("parses")
        .eval(&resolver);
    assert_eq!(verdict.status(), "passed");
    // The right side was not needed, so it was not read.
    assert_eq!(resolver.0.into_inner(), ["server.sglang.gpu_mem_gb"]);
}
