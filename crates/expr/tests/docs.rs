//! Keeps docs/expressions.md honest: every example in its operator and
//! function tables must parse.

use anvil_expr::parse;

/// The inline-code examples in the last column of the tables under `heading`.
fn table_examples(doc: &str, heading: &str) -> Vec<String> {
    let section = doc.split("\n## ").find(|s| s.starts_with(heading)).unwrap_or_default();
    let mut examples = Vec::new();
    for line in section.lines().filter(|l| l.starts_with('|')) {
        // Split on `|` that is not escaped as `\|`.
        let cells: Vec<String> =
            line.replace("\\|", "\u{0}").split('|').map(|c| c.replace('\u{0}', "|")).collect();
        let Some(last) = cells.iter().rev().find(|c| !c.trim().is_empty()) else {
            continue;
        };
        for (i, code) in last.split('`').enumerate() {
            if i % 2 == 1 {
                examples.push(code.to_string());
            }
        }
    }
    examples
}

#[test]
fn operator_and_function_examples_parse() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/expressions.md"))
        .expect("docs/expressions.md is readable");
    let mut examples = table_examples(&doc, "Operators");
    examples.extend(table_examples(&doc, "Functions"));
    assert!(examples.len() >= 20, "found only {} examples", examples.len());
    for example in examples {
        parse(&example).unwrap_or_else(|e| panic!("docs example `{example}` does not parse: {e:?}"));
    }
}
