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

/// Every `cargo test --test NAME` and `cargo bench --bench NAME` that the
/// docs, scripts and comments tell a developer to run names a target that
/// exists: each crate has one test binary (`main`), and each bench is a
/// file under some crate's `benches/`.
#[test]
fn every_test_and_bench_target_named_exists() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut benches = std::collections::BTreeSet::new();
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "fuzz" | "node_modules") {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") || name.ends_with(".md") || name.ends_with(".sh") {
                if dir.ends_with("benches") {
                    benches.insert(name.trim_end_matches(".rs").to_string());
                }
                files.push(path);
            }
        }
    }
    let mut wrong = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (flag, known) in [("--test ", None), ("--bench ", Some(&benches))] {
            for (at, _) in text.match_indices(flag) {
                let name: String = text[at + flag.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                    .collect();
                // `NAME` and the like are placeholders in prose.
                let placeholder = name.is_empty() || name.chars().all(|c| c.is_ascii_uppercase());
                let exists = placeholder
                    || match known {
                        None => name == "main",
                        Some(benches) => benches.contains(&name),
                    };
                if !exists {
                    wrong
                        .push(format!("{}: {flag}{name}", file.strip_prefix(root).unwrap_or(file).display()));
                }
            }
        }
    }
    assert!(!benches.is_empty(), "no benches found: the scan is broken");
    assert!(wrong.is_empty(), "targets named that do not exist: {wrong:#?}");
}
