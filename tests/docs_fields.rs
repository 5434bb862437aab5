//! The docs follow from the types: every field a declaration accepts (its
//! table in `src/recipe/decls/`) is documented, in backticks, in the section
//! of docs/recipes.md about its kind. A new setting without docs fails here.
//! And the docs name only what exists: every test and bench target, script
//! and `anvil` subcommand README.md and docs/*.md tell a reader to run, every
//! link between them, and every module directory and crate in the README's
//! Layout.

use std::collections::BTreeSet;
use std::path::Path;

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
/// exists in some package of the workspace: a `[[test]]` or `[[bench]]` its
/// Cargo.toml declares, or a file cargo finds by itself (each crate has one
/// test binary, `main`; each bench is a file under some crate's `benches/`).
/// `docs_name_only_what_exists` checks the docs' commands package by package.
#[test]
fn every_test_and_bench_target_named_exists() {
    let root = root();
    let packages = packages();
    let tests: BTreeSet<&str> = packages.iter().flat_map(|p| p.tests.iter().map(String::as_str)).collect();
    let benches: BTreeSet<&str> =
        packages.iter().flat_map(|p| p.benches.iter().map(String::as_str)).collect();
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
                files.push(path);
            }
        }
    }
    let mut wrong = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (flag, known) in [("--test ", &tests), ("--bench ", &benches)] {
            for (at, _) in text.match_indices(flag) {
                let name: String = text[at + flag.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                    .collect();
                // `NAME` and the like are placeholders in prose.
                if !placeholder(&name) && !known.contains(name.as_str()) {
                    wrong
                        .push(format!("{}: {flag}{name}", file.strip_prefix(root).unwrap_or(file).display()));
                }
            }
        }
    }
    assert!(tests.contains("main") && !benches.is_empty(), "no targets found: the scan is broken");
    assert!(wrong.is_empty(), "targets named that do not exist: {wrong:#?}");
}

// ---------------------------------------------------------------------------
// The docs name only what exists: what README.md and docs/*.md tell a reader
// to type (cargo test and bench targets, scripts, anvil's subcommands), the
// links between them, and the README's map of the source tree.

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One package of the workspace and the test and bench targets cargo
/// builds for it: those its Cargo.toml declares, and the files cargo finds
/// by itself unless `autotests` / `autobenches` is off.
struct Package {
    name: String,
    tests: BTreeSet<String>,
    benches: BTreeSet<String>,
}

impl Package {
    /// Its targets of the kind `--test` or `--bench` names.
    fn targets(&self, flag: &str) -> &BTreeSet<String> {
        if flag == "--test" { &self.tests } else { &self.benches }
    }
}

/// The root package and every crate under `crates/`.
fn packages() -> Vec<Package> {
    let mut dirs = vec![root().to_path_buf()];
    let mut crates: Vec<_> = std::fs::read_dir(root().join("crates"))
        .expect("crates/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    crates.sort();
    dirs.extend(crates);
    dirs.iter().map(|dir| package(dir)).collect()
}

fn package(dir: &Path) -> Package {
    let toml = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    let (mut section, mut name) = (String::new(), None);
    let (mut tests, mut benches) = (BTreeSet::new(), BTreeSet::new());
    let (mut autotests, mut autobenches) = (true, true);
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let value = value.trim().trim_matches('"').to_string();
        match (section.as_str(), key.trim()) {
            ("[package]", "name") => name = Some(value),
            ("[package]", "autotests") => autotests = value != "false",
            ("[package]", "autobenches") => autobenches = value != "false",
            ("[[test]]", "name") => drop(tests.insert(value)),
            ("[[bench]]", "name") => drop(benches.insert(value)),
            _ => {}
        }
    }
    for (auto, folder, targets) in [(autotests, "tests", &mut tests), (autobenches, "benches", &mut benches)]
    {
        let Ok(entries) = std::fs::read_dir(dir.join(folder)) else { continue };
        for file in entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()) {
            if let (true, Some(stem)) = (auto, file.strip_suffix(".rs")) {
                targets.insert(stem.to_string());
            }
        }
    }
    Package { name: name.unwrap_or_else(|| panic!("{}: no [package] name", dir.display())), tests, benches }
}

/// `NAME`, `<name>`, `'*'`: a placeholder in prose, not a name.
fn placeholder(word: &str) -> bool {
    word.is_empty()
        || word.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c == '.')
        || !word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == ':')
}

/// anvil's subcommands, read from the clap enum in `src/cli.rs`: each
/// variant indented once, in kebab case as clap names it (`ExportData` →
/// `export-data`), or as a `#[command(name = …)]` / `alias` says.
fn subcommands() -> BTreeSet<String> {
    let cli = std::fs::read_to_string(root().join("src/cli.rs")).expect("src/cli.rs");
    let start = cli.find("pub enum Command {").expect("`pub enum Command` in src/cli.rs");
    let body = &cli[start..];
    let body = &body[..body.find("\n}").expect("the end of `enum Command`")];
    let quoted = |attr: &str, key: &str| {
        attr.find(&format!("{key} = \""))
            .map(|i| attr[i + key.len() + 4..].split('"').next().unwrap().to_string())
    };
    let (mut names, mut renamed) = (BTreeSet::new(), None);
    for line in body.lines().skip(1) {
        let Some(rest) = line.strip_prefix("    ") else { continue };
        if let Some(attr) = rest.strip_prefix("#[command(") {
            renamed = quoted(attr, "name").or(renamed);
            names.extend(quoted(attr, "alias"));
            names.extend(quoted(attr, "visible_alias"));
            continue;
        }
        let ident: String = rest.chars().take_while(char::is_ascii_alphanumeric).collect();
        if ident.starts_with(|c: char| c.is_ascii_uppercase()) {
            let kebab = ident.chars().enumerate().fold(String::new(), |mut s, (i, c)| {
                if c.is_ascii_uppercase() && i > 0 {
                    s.push('-');
                }
                s.push(c.to_ascii_lowercase());
                s
            });
            names.insert(renamed.take().unwrap_or(kebab));
        }
    }
    assert!(
        names.contains("run") && names.contains("export-data"),
        "subcommands read from src/cli.rs: {names:?}"
    );
    names
}

/// README.md and every docs/*.md, by path from the repository root.
fn docs() -> Vec<(String, String)> {
    let mut paths = vec!["README.md".to_string()];
    for entry in std::fs::read_dir(root().join("docs")).expect("docs/").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            paths.push(format!("docs/{name}"));
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(root().join(&path)).unwrap();
            (path, text)
        })
        .collect()
}

/// What a doc gives a reader to type, with its line: every inline code span
/// (`…`, within one paragraph, over lines or not) and every line of a fenced
/// code block.
fn snippets(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let (mut fenced, mut paragraph) = (false, Vec::<(usize, &str)>::new());
    let flush = |paragraph: &mut Vec<(usize, &str)>, out: &mut Vec<(usize, String)>| {
        if let Some(&(first, _)) = paragraph.first() {
            let joined = paragraph.iter().map(|(_, l)| *l).collect::<Vec<_>>().join("\n");
            let mut line = first;
            for (i, piece) in joined.split('`').enumerate() {
                if i % 2 == 1 && !piece.is_empty() {
                    out.push((line, piece.replace('\n', " ")));
                }
                line += piece.matches('\n').count();
            }
        }
        paragraph.clear();
    };
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        if fence || (!fenced && line.trim().is_empty()) {
            flush(&mut paragraph, &mut out);
        }
        if fence {
            fenced = !fenced;
        } else if fenced {
            out.push((i + 1, line.to_string()));
        } else if !line.trim().is_empty() {
            paragraph.push((i + 1, line));
        }
    }
    flush(&mut paragraph, &mut out);
    out
}

/// Code spans that begin with `anvil ` but are no command.
const NOT_COMMANDS: &[&str] = &[
    // docs/store.md: the blake3 derive-key context of a run's campaign outputs.
    "anvil campaign outputs v1",
];

/// What one snippet names that does not exist: `cargo test` and `cargo
/// bench` targets and packages, and `anvil` subcommands (also as `cargo run
/// --release -- SUBCOMMAND`). A snippet is cut into commands at `|`, `;`,
/// `&&` and `||`; a command's leading `$` and `NAME=value` words are skipped.
fn wrong_in(snippet: &str, packages: &[Package], subcommands: &BTreeSet<String>) -> Vec<String> {
    let mut wrong = Vec::new();
    if NOT_COMMANDS.contains(&snippet.trim()) {
        return wrong;
    }
    let words: Vec<&str> = snippet.split_whitespace().collect();
    for command in words.split(|w| matches!(*w, "|" | ";" | "&&" | "||")) {
        let mut command = command;
        while let [first, rest @ ..] = command {
            if *first == "$" || (first.contains('=') && !first.starts_with('-')) {
                command = rest;
            } else {
                break;
            }
        }
        let mut subcommand = |word: Option<&&str>| {
            if let Some(word) = word.map(|w| w.trim_end_matches([',', '.', ')']))
                && !word.starts_with('-')
                && !placeholder(word)
                && !subcommands.contains(word)
            {
                wrong.push(format!("`anvil {word}`: no such subcommand in src/cli.rs"));
            }
        };
        match command {
            [anvil, rest @ ..] if *anvil == "anvil" || anvil.ends_with("/anvil") => subcommand(rest.first()),
            ["cargo", "run", rest @ ..] => {
                let own = !rest.iter().any(|w| matches!(*w, "--example" | "--bin" | "-p" | "--package"));
                if let (true, Some(dashes)) = (own, rest.iter().position(|w| *w == "--")) {
                    subcommand(rest.get(dashes + 1));
                }
            }
            ["cargo", kind @ ("test" | "bench"), rest @ ..] => {
                let rest = &rest[..rest.iter().position(|w| *w == "--").unwrap_or(rest.len())];
                let flag = |names: &[&str]| {
                    rest.iter().position(|w| names.contains(w)).and_then(|i| rest.get(i + 1)).copied()
                };
                let named = flag(&["-p", "--package"]);
                let scope: Vec<&Package> = match named {
                    Some(name) => packages.iter().filter(|p| p.name == name).collect(),
                    // Without `-p` cargo takes the root package, unless told the workspace.
                    None if rest.contains(&"--workspace") => packages.iter().collect(),
                    None => packages.iter().take(1).collect(),
                };
                if let Some(name) = named
                    && scope.is_empty()
                {
                    wrong.push(format!("`cargo {kind} -p {name}`: no such package"));
                }
                for target in ["--test", "--bench"] {
                    if let Some(name) = flag(&[target])
                        && !placeholder(name)
                        && !scope.is_empty()
                        && !scope.iter().any(|p| p.targets(target).contains(name))
                    {
                        let of = named.map_or("the root package".to_string(), |p| format!("package {p}"));
                        wrong.push(format!("`cargo {kind} {target} {name}`: {of} has no such target"));
                    }
                }
            }
            _ => {}
        }
    }
    wrong
}

/// Every `scripts/…` path a doc names.
fn scripts_named(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices("scripts/") {
            let before = line[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || "/_-.".contains(c)) {
                continue;
            }
            let path: String =
                line[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || "/_-.".contains(*c)).collect();
            let path = path.trim_end_matches('.');
            if path != "scripts/" {
                out.push((i + 1, path.to_string()));
            }
        }
    }
    out
}

/// Every command, script and subcommand README.md and docs/*.md tell a
/// reader to type exists: `cargo test --test NAME` and `cargo bench --bench
/// NAME` in the package named (`-p`, else the root package), `scripts/…`
/// as a file, and `anvil SUBCOMMAND` in the clap enum of `src/cli.rs`.
#[test]
fn docs_name_only_what_exists() {
    let (packages, subcommands) = (packages(), subcommands());
    let mut wrong = Vec::new();
    for (path, text) in docs() {
        for (line, snippet) in snippets(&text) {
            for problem in wrong_in(&snippet, &packages, &subcommands) {
                wrong.push(format!("{path}:{line}: {problem}"));
            }
        }
        for (line, script) in scripts_named(&text) {
            if !root().join(&script).exists() {
                wrong.push(format!("{path}:{line}: `{script}` does not exist"));
            }
        }
    }
    assert!(wrong.is_empty(), "the docs name what does not exist:\n  {}", wrong.join("\n  "));
}

/// The checks above see through what they should: a wrong name of each kind
/// is caught, and what exists passes.
#[test]
fn the_docs_checks_catch_a_wrong_name_of_each_kind() {
    let (packages, subcommands) = (packages(), subcommands());
    let wrong = |s: &str| wrong_in(s, &packages, &subcommands);
    for good in [
        "cargo test --test main docs_fields",
        "cargo bench -p anvil-loadgen --bench coverage",
        "ANVIL_REQUIRE_SLURM=1 cargo test --test main -- slurm::",
        "cargo run --release -- export-data run-1 --format parquet",
        "$ anvil import-result FILE --from aiperf",
        "anvil run RECIPE",
        "anvil campaign outputs v1",
        "cargo run --example fingerprints -- recipes/quickstart.kdl",
    ] {
        assert!(wrong(good).is_empty(), "{good}: {:?}", wrong(good));
    }
    for bad in [
        // Spelled in two parts, or `every_test_and_bench_target_named_exists`
        // would read this very line as a target named.
        concat!("cargo test --", "test docs_fields"),
        "cargo bench -p anvil-loadgen --bench spine",
        "cargo bench --bench coverage",
        "cargo test -p anvil-nothing",
        "anvil bundle export",
        "cargo run --release -- frobnicate recipes/quickstart.kdl",
        "anvil runs | anvil frobnicate",
    ] {
        assert_eq!(wrong(bad).len(), 1, "{bad}: {:?}", wrong(bad));
    }
    assert_eq!(
        scripts_named("run `scripts/test.sh core`, then scripts/vllm.sh."),
        [(1, "scripts/test.sh".to_string()), (1, "scripts/vllm.sh".to_string())]
    );
}

/// A heading's anchor as GitHub makes it: lower case, punctuation other
/// than `-` and `_` dropped, spaces as `-`; a repeated one gets `-1`, `-2`.
fn anchors(text: &str) -> BTreeSet<String> {
    let (mut seen, mut fenced) = (BTreeSet::new(), false);
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if fenced || hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = line[hashes..]
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = slug.clone();
        for n in 1.. {
            if !seen.contains(&anchor) {
                break;
            }
            anchor = format!("{slug}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// Every relative link in README.md and docs/*.md reaches a file that
/// exists and, with `#anchor`, a heading of that file.
#[test]
fn every_link_between_the_docs_reaches_its_file_and_heading() {
    let mut wrong = Vec::new();
    for (path, text) in docs() {
        let dir = Path::new(&path).parent().unwrap_or(Path::new(""));
        let mut fenced = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if fenced {
                continue;
            }
            for (at, _) in line.match_indices("](") {
                let Some(target) = line[at + 2..].split(')').next() else { continue };
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
                let file = if file.is_empty() {
                    path.clone()
                } else {
                    dir.join(file).to_string_lossy().into_owned()
                };
                if !root().join(&file).is_file() {
                    wrong.push(format!("{path}:{}: ({target}): no file {file}", i + 1));
                    continue;
                }
                let linked = std::fs::read_to_string(root().join(&file)).unwrap_or_default();
                if !anchor.is_empty() && !anchors(&linked).contains(anchor) {
                    wrong.push(format!("{path}:{}: ({target}): no heading `#{anchor}` in {file}", i + 1));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "links that lead nowhere:\n  {}", wrong.join("\n  "));
}

/// The README's Layout section names every module directory of the root
/// crate (`src/NAME/`) and every crate (`crates/NAME`), so a new one is
/// placed on the map when it is made.
#[test]
fn the_readme_layout_names_every_module_directory_and_crate() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("\n## Layout\n").expect("a `## Layout` section in README.md");
    let layout = &readme[start + 1..];
    let layout = &layout[..layout[3..].find("\n## ").map_or(layout.len(), |e| e + 3)];
    let named = |prefix: &str, name: &str| {
        let needle = format!("`{prefix}/{name}");
        layout
            .match_indices(&needle)
            .any(|(at, _)| matches!(layout[at + needle.len()..].chars().next(), Some('/' | '`')))
    };
    let mut missing = Vec::new();
    for folder in ["src", "crates"] {
        for entry in std::fs::read_dir(root().join(folder)).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() && !named(folder, &name) {
                missing.push(format!("{folder}/{name}"));
            }
        }
    }
    assert!(missing.is_empty(), "README.md's Layout section does not name: {missing:?}");
}
