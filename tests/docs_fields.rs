//! The docs follow from the types: every field a declaration accepts (its
//! table in `src/recipe/decls/`) is documented, in backticks, in the section
//! of docs/recipes.md about its kind. A new setting without docs fails here.

use anvil::recipe::Kind;
use anvil::recipe::decls::fields_of;

const DOC: &str = include_str!("../docs/recipes.md");

/// The text of the `## heading` section (up to the next `## `).
fn section(heading: &str) -> &'static str {
    let start = DOC.find(&format!("\n## {heading}\n")).unwrap_or_else(|| panic!("no section `## {heading}`"));
    let body = &DOC[start + 1..];
    let end = body[3..].find("\n## ").map_or(body.len(), |e| e + 3);
    &body[..end]
}

#[test]
fn every_field_of_every_kind_is_documented_in_its_section() {
    let sections = [
        (Kind::Server, &["server"][..]),
        (Kind::Workload, &["workload and cell"]),
        (Kind::Cell, &["workload and cell"]),
        (Kind::Task, &["task"]),
        (Kind::Gate, &["gate"]),
        // A finally step takes a task's settings, documented with tasks.
        (Kind::Finally, &["finally", "task"]),
        (Kind::Check, &["check, screen, decision"]),
        (Kind::Screen, &["check, screen, decision"]),
        (Kind::Decision, &["check, screen, decision"]),
        (Kind::Search, &["search"]),
    ];
    let mut missing = Vec::new();
    for (kind, headings) in sections {
        for field in fields_of(kind) {
            // `after` and `description` are documented once, for every step.
            let common = matches!(field.name, "after" | "description");
            let in_section = headings.iter().any(|h| {
                let text = section(h);
                text.contains(&format!("`{}`", field.name)) || text.contains(&format!("`{} ", field.name))
            });
            let documented_once = common && DOC.contains(&format!("`{}`", field.name));
            if !(in_section || documented_once) {
                missing.push(format!("{kind} `{}` (section `## {}`)", field.name, headings.join("` / `## ")));
            }
        }
    }
    assert!(missing.is_empty(), "undocumented settings:\n  {}", missing.join("\n  "));
}

/// Every column of the Parquet tables is named, in backticks, in the
/// section of docs/metrics.md that documents them.
#[test]
#[cfg(feature = "parquet")]
fn every_parquet_column_is_documented() {
    let metrics = include_str!("../docs/metrics.md");
    let start =
        metrics.find("\n## Parquet tables").expect("a `## Parquet tables` section in docs/metrics.md");
    let body = &metrics[start + 1..];
    let text = &body[..body[3..].find("\n## ").map_or(body.len(), |e| e + 3)];
    let mut missing = Vec::new();
    for schema in [anvil_tables::request_schema(), anvil_tables::series_schema()] {
        for field in schema.fields() {
            if !text.contains(&format!("`{}`", field.name())) {
                missing.push(field.name().clone());
            }
        }
    }
    assert!(missing.is_empty(), "columns docs/metrics.md's Parquet section does not name: {missing:?}");
}
