//! Checks that no function of the workspace's crates (`src/`, `crates/*/src/`)
//! is longer than a reader can hold: [`MAX_LINES`] lines, counted from the
//! line of its `fn` keyword to the line of its closing brace (attributes and
//! doc comments before it are not counted).
//!
//! Every `fn` counts: free functions, methods of `impl` blocks and default
//! methods of traits, functions nested in other functions and in inline
//! modules. Test code does not: `#[cfg(test)]` items and modules (inline, or
//! `#[cfg(test)] mod x;` files and the modules under them), files named
//! `*tests.rs` (`tests.rs`, `*_tests.rs`, `proptests.rs`), and anything
//! under a `tests/`, `benches/` or `fuzz/` folder.
//!
//! A function is named `path::fn` (`crates/loadgen/src/run.rs::measure`),
//! a method `path::Type::fn` (`src/report/html/cells.rs::Cells::section`),
//! the path relative to the workspace.
//!
//! It runs with `cargo test --workspace`; `cargo test --test main
//! function_length -- --nocapture` lists the longest functions it saw.

use crate::common::test_code::{impl_item_attrs, is_test_only, item_attrs};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The most lines a function may take, `fn` line and closing brace included.
const MAX_LINES: usize = 100;

/// Functions over [`MAX_LINES`] left as they are for now, by name: none.
/// An entry no longer too long (or gone) fails the test, so the list only
/// shrinks; a new long function is split, never added here.
const NOT_YET: &[&str] = &[];

/// One function seen in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Function {
    /// `Type::fn` for a method, `fn` for a free function.
    name: String,
    /// From the `fn` line to the closing brace's, both included.
    lines: usize,
}

/// Collects every function not under `#[cfg(test)]`, with the type (or
/// trait) whose block it is written in.
#[derive(Default)]
struct Functions {
    /// The `impl`/`trait` blocks the visitor is inside, innermost last.
    owners: Vec<String>,
    found: Vec<Function>,
}

impl Functions {
    fn record(&mut self, name: &syn::Ident, sig: &syn::Signature, body: &syn::Block) {
        let first = sig.fn_token.span.start().line;
        let last = body.brace_token.span.close().end().line;
        let name = match self.owners.last() {
            Some(owner) => format!("{owner}::{name}"),
            None => name.to_string(),
        };
        self.found.push(Function { name, lines: last + 1 - first });
    }
}

/// The last segment of a type's path (`Cells` for `crate::html::Cells<'a>`);
/// `_` for an `impl` on a type that is no path (`[u8]`, a tuple).
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => "_".to_string(),
    }
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = item_attrs(item);
        if !is_test_only(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.record(&f.sig.ident, &f.sig, &f.block);
        // A function nested in a free function is its own: outside any impl.
        let owners = std::mem::take(&mut self.owners);
        syn::visit::visit_item_fn(self, f);
        self.owners = owners;
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        self.owners.push(type_name(&i.self_ty));
        syn::visit::visit_item_impl(self, i);
        self.owners.pop();
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        self.owners.push(t.ident.to_string());
        syn::visit::visit_item_trait(self, t);
        self.owners.pop();
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = impl_item_attrs(item);
        if !is_test_only(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.record(&f.sig.ident, &f.sig, &f.block);
        let owners = std::mem::take(&mut self.owners);
        syn::visit::visit_impl_item_fn(self, f);
        self.owners = owners;
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        let attrs = match item {
            syn::TraitItem::Fn(x) => &x.attrs,
            syn::TraitItem::Const(x) => &x.attrs,
            syn::TraitItem::Macro(x) => &x.attrs,
            _ => return syn::visit::visit_trait_item(self, item),
        };
        if !is_test_only(attrs) {
            syn::visit::visit_trait_item(self, item);
        }
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(body) = &f.default {
            self.record(&f.sig.ident, &f.sig, body);
        }
        let owners = std::mem::take(&mut self.owners);
        syn::visit::visit_trait_item_fn(self, f);
        self.owners = owners;
    }

    // Statements inside a function body may carry `#[cfg(test)]` too.
    fn visit_stmt(&mut self, s: &'ast syn::Stmt) {
        if let syn::Stmt::Item(item) = s {
            self.visit_item(item);
        } else {
            syn::visit::visit_stmt(self, s);
        }
    }
}

/// The functions of one source file's text, test code left out.
fn functions_in(text: &str) -> syn::Result<Vec<Function>> {
    let ast = syn::parse_file(text)?;
    let mut v = Functions::default();
    v.visit_file(&ast);
    Ok(v.found)
}

/// Files (or folders, for `x/mod.rs`) that `#[cfg(test)] mod x;` lines of
/// `file` declare: test modules that are not named like tests.
fn test_module_files(file: &Path, ast: &syn::File) -> Vec<PathBuf> {
    let dir = file.parent().expect("a source file has a folder");
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    // Where `mod x;` looks for `x.rs`: beside a mod-rs file, else in a folder named after the file.
    let child_dir = if matches!(stem, "mod" | "lib" | "main") { dir.to_path_buf() } else { dir.join(stem) };
    let mut out = Vec::new();
    for item in &ast.items {
        let syn::Item::Mod(m) = item else { continue };
        if m.content.is_some() || !is_test_only(&m.attrs) {
            continue;
        }
        let path_attr = m.attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }),
                ..
            }) => Some(s.value()),
            _ => None,
        });
        match path_attr {
            Some(p) => out.push(dir.join(p)),
            None => {
                let name = m.ident.to_string();
                out.push(child_dir.join(format!("{name}.rs")));
                // `x/mod.rs`, and any module declared under `x.rs` or `x/mod.rs`.
                out.push(child_dir.join(&name));
            }
        }
    }
    out
}

/// Whether a file is test code by its name or a folder on its path.
fn is_test_file(relative: &Path) -> bool {
    let name = relative.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let in_test_folder = relative.parent().is_some_and(|p| {
        p.components().any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "benches" | "fuzz")))
    });
    name.ends_with("tests.rs") || in_test_folder
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())).flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The source folders checked: `src/` and each `crates/*/src/`, relative to the workspace.
fn source_folders(workspace: &Path) -> Vec<PathBuf> {
    let mut crates: Vec<PathBuf> = std::fs::read_dir(workspace.join("crates"))
        .expect("reading crates/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| p.strip_prefix(workspace).unwrap().join("src"))
        .collect();
    crates.sort();
    let mut out = vec![PathBuf::from("src")];
    out.extend(crates);
    out
}

/// Every non-test function of the workspace's sources, named `path::fn`
/// (path relative to the workspace), with its length.
fn workspace_functions(workspace: &Path) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for src in source_folders(workspace) {
        let files = rust_files(&workspace.join(&src));
        let mut parsed = Vec::new();
        let mut test_modules: Vec<PathBuf> = Vec::new();
        for file in files {
            let text =
                std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
            let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", file.display()));
            test_modules.extend(test_module_files(&file, &ast));
            parsed.push((file, text));
        }
        for (file, text) in parsed {
            let relative = file.strip_prefix(workspace).unwrap_or(&file).to_path_buf();
            if is_test_file(&relative) || test_modules.iter().any(|t| file.starts_with(t)) {
                continue;
            }
            let functions = functions_in(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", file.display()));
            for f in functions {
                out.push((format!("{}::{}", relative.display(), f.name), f.lines));
            }
        }
    }
    out
}

#[test]
fn no_function_is_longer_than_a_reader_can_hold() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let functions = workspace_functions(workspace);
    assert!(functions.len() > 500, "read too few functions: {}", functions.len());

    let mut longest = functions.clone();
    longest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    println!("{} functions; the longest:", functions.len());
    for (name, lines) in longest.iter().take(15) {
        println!("  {name} ({lines} lines)");
    }

    let allowed: BTreeSet<&str> = NOT_YET.iter().copied().collect();
    let too_long: Vec<&(String, usize)> = longest.iter().filter(|(_, lines)| *lines > MAX_LINES).collect();
    let offenders: Vec<String> = too_long
        .iter()
        .filter(|(name, _)| !allowed.contains(name.as_str()))
        .map(|(name, lines)| format!("{name} ({lines} lines)"))
        .collect();
    let still_long: BTreeSet<&str> = too_long.iter().map(|(name, _)| name.as_str()).collect();
    let stale: Vec<&str> = allowed.iter().copied().filter(|name| !still_long.contains(name)).collect();
    assert!(
        offenders.is_empty(),
        "functions over {MAX_LINES} lines (split them by meaning, one named step each):\n  {}",
        offenders.join("\n  ")
    );
    assert!(
        stale.is_empty(),
        "NOT_YET names functions no longer over {MAX_LINES} lines (or gone): remove them from the list:\n  {}",
        stale.join("\n  ")
    );
}

#[test]
fn the_counter_sees_long_functions_and_skips_test_code() {
    let body = |n: usize| "    let _ = 1;\n".repeat(n);
    let text = format!(
        "pub fn long() {{\n{}}}\n\
         fn short() {{\n{}}}\n\
         struct Cells;\n\
         impl Cells {{\n    pub fn section(&self) {{\n{}    }}\n}}\n\
         trait Render {{\n    fn all(&self) {{\n{}    }}\n    fn bare(&self);\n}}\n\
         #[cfg(test)]\nfn test_helper() {{\n{}}}\n\
         #[cfg(test)]\nmod tests {{\n    fn in_tests() {{\n{}    }}\n}}\n",
        body(120),
        body(10),
        body(99),
        body(3),
        body(200),
        body(200),
    );
    let found = functions_in(&text).unwrap();
    assert_eq!(
        found,
        vec![
            Function { name: "long".into(), lines: 122 },
            Function { name: "short".into(), lines: 12 },
            Function { name: "Cells::section".into(), lines: 101 },
            Function { name: "Render::all".into(), lines: 5 },
        ]
    );
    assert!(found.iter().any(|f| f.lines > MAX_LINES), "the counter must see a long function");
}

#[test]
fn test_files_and_test_modules_are_left_out() {
    assert!(is_test_file(Path::new("src/plan/tests.rs")));
    assert!(is_test_file(Path::new("src/run/gate_oc_tests.rs")));
    assert!(is_test_file(Path::new("crates/loadgen/src/observe/proptests.rs")));
    assert!(is_test_file(Path::new("crates/x/src/benches/spine.rs")));
    assert!(!is_test_file(Path::new("crates/loadgen/src/run.rs")));

    let file = Path::new("/w/src/run/mod.rs");
    let ast = syn::parse_file("#[cfg(test)]\nmod statistics_testing;\nmod real;\n").unwrap();
    assert_eq!(
        test_module_files(file, &ast),
        vec![
            PathBuf::from("/w/src/run/statistics_testing.rs"),
            PathBuf::from("/w/src/run/statistics_testing")
        ]
    );
    let file = Path::new("/w/src/report/campaign.rs");
    let ast = syn::parse_file("#[cfg(test)]\nmod checks;\n").unwrap();
    assert_eq!(
        test_module_files(file, &ast),
        vec![
            PathBuf::from("/w/src/report/campaign/checks.rs"),
            PathBuf::from("/w/src/report/campaign/checks")
        ]
    );
}
