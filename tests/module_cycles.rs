//! Checks that no crate of the workspace (`src/`, `crates/*/src/`) has an import cycle between its files.
//!
//! Each crate's module tree is read from `lib.rs` (and `main.rs`) by following
//! `mod` declarations (`foo.rs`, `foo/mod.rs`, `#[path]`); an inline
//! `mod x { }` block is part of the file it is written in. Every path in a
//! file that names a module of the same crate is an edge from that file to
//! the file defining the longest module prefix of the path:
//! `use crate::…`/`super::…`/`self::…`, a path through a child module
//! (`socket::connect`, `use spec::Stage`), paths written inline in code
//! (`crate::slurm::Head::for_run(…)`), in macro arguments and in attribute
//! strings (`#[serde(with = "super::word")]`). A child's `mod` declaration
//! in its parent is not an edge; a child naming an item its parent defines or
//! re-exports (`use super::Thing`, `use crate::Thing`) is an edge child →
//! parent. Items under `#[cfg(test)]` are left out (test modules import
//! their parent by design); visibility paths (`pub(crate)`, `pub(super)`)
//! are not references.
//!
//! It runs with `cargo test --workspace` (CI has no step of its own for it);
//! `cargo test --test main module_cycles -- --nocapture` shows what was checked.

use crate::common::test_code::{impl_item_attrs, is_test_only, item_attrs};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use petgraph::graph::{DiGraph, NodeIndex};
use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// One crate's file graph.
#[derive(Debug)]
struct FileGraph {
    /// Files, relative to the crate's `src/` (or the module root's folder).
    files: Vec<String>,
    /// `from → to` indices into `files`, `from != to`.
    edges: BTreeSet<(usize, usize)>,
    /// For each edge, the first path that made it (`crate::spec::Stage`).
    why: BTreeMap<(usize, usize), String>,
}

impl FileGraph {
    /// Strongly connected components with more than one file: each is a set
    /// of files that import one another in a cycle. Files sorted by name.
    fn cycles(&self) -> Vec<Vec<usize>> {
        let mut g = DiGraph::<usize, ()>::new();
        let nodes: Vec<NodeIndex> = (0..self.files.len()).map(|i| g.add_node(i)).collect();
        for &(a, b) in &self.edges {
            g.add_edge(nodes[a], nodes[b], ());
        }
        let mut out: Vec<Vec<usize>> = petgraph::algo::tarjan_scc(&g)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut files: Vec<usize> = c.into_iter().map(|n| g[n]).collect();
                files.sort_by(|a, b| self.files[*a].cmp(&self.files[*b]));
                files
            })
            .collect();
        out.sort_by(|a, b| self.files[a[0]].cmp(&self.files[b[0]]));
        out
    }

    /// A shortest cycle through `start` within `component`, as file indices
    /// in order (the first file is not repeated at the end).
    fn cycle_through(&self, start: usize, component: &[usize]) -> Vec<usize> {
        let inside: BTreeSet<usize> = component.iter().copied().collect();
        let mut parent: HashMap<usize, usize> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(at) = queue.pop_front() {
            for &(a, b) in self.edges.range((at, 0)..(at + 1, 0)) {
                debug_assert_eq!(a, at);
                if !inside.contains(&b) {
                    continue;
                }
                if b == start {
                    let mut path = vec![at];
                    let mut cur = at;
                    while cur != start {
                        cur = parent[&cur];
                        path.push(cur);
                    }
                    path.reverse();
                    return path;
                }
                if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(b) {
                    e.insert(at);
                    queue.push_back(b);
                }
            }
        }
        vec![start]
    }

    /// A readable account of one component: its files, one cycle through
    /// its first file, and every edge inside it.
    fn describe(&self, component: &[usize]) -> String {
        let inside: BTreeSet<usize> = component.iter().copied().collect();
        let names = |ids: &[usize]| ids.iter().map(|&i| self.files[i].as_str()).collect::<Vec<_>>();
        let mut cycle = names(&self.cycle_through(component[0], component));
        cycle.push(cycle[0]);
        let mut s = format!(
            "  {} files: {}\n    e.g. {}\n    edges inside:",
            component.len(),
            names(component).join(", "),
            cycle.join(" → ")
        );
        for &(a, b) in &self.edges {
            if inside.contains(&a) && inside.contains(&b) {
                s.push_str(&format!("\n      {} → {} ({})", self.files[a], self.files[b], self.why[&(a, b)]));
            }
        }
        s
    }
}

/// A module of the crate: where it is defined.
#[derive(Debug, Clone, Copy)]
struct Module {
    file: usize,
}

/// Reads the module tree rooted at `entry` (a `lib.rs` or `main.rs`) and
/// builds its file graph.
fn file_graph(entry: &Path) -> FileGraph {
    let root_dir = entry.parent().expect("an entry file has a folder").to_path_buf();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut asts: Vec<syn::File> = Vec::new();
    // Module path → module; the crate root is `[]`.
    let mut modules: HashMap<Vec<String>, Module> = HashMap::new();
    // Module path of each file's top level.
    let mut file_module: Vec<Vec<String>> = Vec::new();

    // Pass 1: the module tree, breadth first from the entry.
    let mut queue: VecDeque<(PathBuf, Vec<String>, bool)> =
        VecDeque::from([(entry.to_path_buf(), vec![], true)]);
    while let Some((path, module, mod_rs)) = queue.pop_front() {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
        let id = files.len();
        files.push(path.clone());
        modules.insert(module.clone(), Module { file: id });
        file_module.push(module.clone());
        let file_dir = path.parent().unwrap().to_path_buf();
        // Where `mod x;` looks for `x.rs`: beside a mod-rs file, else in a folder named after the file.
        let child_dir = if mod_rs { file_dir.clone() } else { file_dir.join(path.file_stem().unwrap()) };
        let mut found = Vec::new();
        declared_modules(&ast.items, &module, &file_dir, &child_dir, true, id, &mut modules, &mut found);
        for (child_path, child_module, child_mod_rs) in found {
            queue.push_back((child_path, child_module, child_mod_rs));
        }
        asts.push(ast);
    }

    // Pass 2: every path naming a module of this crate, resolved to a file.
    let mut edges = BTreeSet::new();
    let mut why = BTreeMap::new();
    for (id, ast) in asts.iter().enumerate() {
        let mut v = PathCollector { scope: file_module[id].clone(), paths: Vec::new(), aliases: Vec::new() };
        v.visit_file(ast);
        // `use crate::send::http;` (or `… as name`) lets `http::execute` name that module.
        let mut aliases = Aliases::new();
        for (scope, name, path) in v.aliases {
            if let Some(module) = absolute(&modules, &aliases, &scope, &path, true)
                && modules.contains_key(&module)
            {
                aliases.insert((scope, name), module);
            }
        }
        for (scope, path, relative_ok) in v.paths {
            if let Some(target) = resolve(&modules, &aliases, &scope, &path, relative_ok)
                && target != id
            {
                edges.insert((id, target));
                why.entry((id, target)).or_insert_with(|| path.join("::"));
            }
        }
    }
    let files = files
        .iter()
        .map(|p| {
            p.strip_prefix(&root_dir)
                .map(|r| r.display().to_string())
                .unwrap_or_else(|_| p.display().to_string())
        })
        .collect();
    FileGraph { files, edges, why }
}

/// Records the modules declared in `items` (of module `module`, in file
/// `file`): inline ones as part of `file`, `mod x;` ones pushed to `found`
/// as (file, module path, is a mod-rs file).
#[allow(clippy::too_many_arguments)]
fn declared_modules(
    items: &[syn::Item],
    module: &[String],
    file_dir: &Path,
    child_dir: &Path,
    top_level: bool,
    file: usize,
    modules: &mut HashMap<Vec<String>, Module>,
    found: &mut Vec<(PathBuf, Vec<String>, bool)>,
) {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        if is_test_only(&m.attrs) {
            continue;
        }
        let name = m.ident.to_string();
        let mut child = module.to_vec();
        child.push(name.clone());
        let path_attr = m.attrs.iter().find(|a| a.path().is_ident("path")).map(|a| match &a.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }),
                ..
            }) => s.value(),
            _ => panic!("unexpected #[path] form on mod {name}"),
        });
        match &m.content {
            Some((_, inner)) => {
                modules.insert(child.clone(), Module { file });
                let dir = child_dir.join(path_attr.as_deref().unwrap_or(&name));
                declared_modules(inner, &child, file_dir, &dir, false, file, modules, found);
            }
            None => {
                let (path, mod_rs) = match path_attr {
                    // A `#[path]` file nests its own modules as a mod-rs file does.
                    Some(p) if top_level => (file_dir.join(p), true),
                    Some(p) => (child_dir.join(p), true),
                    None => {
                        let flat = child_dir.join(format!("{name}.rs"));
                        let nested = child_dir.join(&name).join("mod.rs");
                        match (flat.is_file(), nested.is_file()) {
                            (true, false) => (flat, false),
                            (false, true) => (nested, true),
                            (true, true) => panic!("both {} and {} exist", flat.display(), nested.display()),
                            (false, false) => panic!("no file for mod {name} in {}", child_dir.display()),
                        }
                    }
                };
                found.push((path, child, mod_rs));
            }
        }
    }
}

/// The file defining the longest module prefix of `path` (written in module
/// `scope`), if the path names a module of this crate. `relative_ok`: a
/// path whose first segment is not `crate`/`super`/`self` may still start
/// at a child module of `scope` (always true of `use` paths; true of other
/// paths of two or more segments).
fn resolve(
    modules: &HashMap<Vec<String>, Module>,
    aliases: &Aliases,
    scope: &[String],
    path: &[String],
    relative_ok: bool,
) -> Option<usize> {
    let absolute = absolute(modules, aliases, scope, path, relative_ok)?;
    (0..=absolute.len()).rev().find_map(|n| modules.get(&absolute[..n])).map(|m| m.file)
}

/// Modules imported under a name: (scope, name) → the module's path.
type Aliases = HashMap<(Vec<String>, String), Vec<String>>;

/// `path` (written in module `scope`) from the crate root, if it starts at
/// a module of this crate: `crate`, `super`, `self`, a child module of
/// `scope`, or a module imported into `scope` by name.
fn absolute(
    modules: &HashMap<Vec<String>, Module>,
    aliases: &Aliases,
    scope: &[String],
    path: &[String],
    relative_ok: bool,
) -> Option<Vec<String>> {
    let first = path.first()?;
    let absolute: Vec<String> = match first.as_str() {
        "crate" | "$crate" => path[1..].to_vec(),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = scope.len().checked_sub(ups).expect("`super` above the crate root");
            scope[..base].iter().chain(&path[ups..]).cloned().collect()
        }
        "self" => scope.iter().chain(&path[1..]).cloned().collect(),
        _ => {
            if !relative_ok {
                return None;
            }
            let mut child = scope.to_vec();
            child.push(first.clone());
            if modules.contains_key(&child) {
                scope.iter().chain(path).cloned().collect()
            } else {
                let module = aliases.get(&(scope.to_vec(), first.clone()))?;
                module.iter().chain(&path[1..]).cloned().collect()
            }
        }
    };
    Some(absolute)
}

/// Collects every path of a file with the module it is written in.
struct PathCollector {
    scope: Vec<String>,
    /// (scope, segments, may start at a child module)
    paths: Vec<(Vec<String>, Vec<String>, bool)>,
    /// (scope, name, segments) of each name a `use` brings in.
    aliases: Vec<(Vec<String>, String, Vec<String>)>,
}

impl PathCollector {
    fn record(&mut self, segments: Vec<String>, relative_ok: bool) {
        if !segments.is_empty() {
            self.paths.push((self.scope.clone(), segments, relative_ok));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                if n.ident != "self" || path.is_empty() {
                    path.push(n.ident.to_string());
                }
                if let Some(name) = path.last() {
                    self.aliases.push((self.scope.clone(), name.clone(), path.clone()));
                }
                self.record(path, true);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                if r.ident != "self" || path.is_empty() {
                    path.push(r.ident.to_string());
                }
                if r.rename != "_" {
                    self.aliases.push((self.scope.clone(), r.rename.to_string(), path.clone()));
                }
                self.record(path, true);
            }
            syn::UseTree::Glob(_) => self.record(prefix.clone(), true),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// Paths written as tokens (macro arguments, attributes): `a::b::c`
    /// sequences, and string literals that parse as a path starting at
    /// `crate`/`super`/`self` (serde's `with = "super::word"`).
    fn tokens(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tts.len() {
            match &tts[i] {
                TokenTree::Group(g) => {
                    self.tokens(g.stream());
                    i += 1;
                }
                TokenTree::Literal(lit) => {
                    if let Ok(syn::Lit::Str(s)) = syn::parse_str::<syn::Lit>(&lit.to_string())
                        && let Ok(p) = syn::parse_str::<syn::Path>(&s.value())
                        && let Some(first) = p.segments.first()
                        && ["crate", "super", "self"].contains(&first.ident.to_string().as_str())
                    {
                        self.record(p.segments.iter().map(|s| s.ident.to_string()).collect(), false);
                    }
                    i += 1;
                }
                TokenTree::Ident(id) => {
                    // `$crate` arrives as `$` then `crate`; either way the ident starts the path.
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (tts.get(j), tts.get(j + 1), tts.get(j + 2))
                        && a.as_char() == ':'
                        && b.as_char() == ':'
                    {
                        segments.push(next.to_string());
                        j += 3;
                    }
                    if segments.len() > 1 {
                        self.record(segments, true);
                    }
                    i = j;
                }
                TokenTree::Punct(_) => i += 1,
            }
        }
    }
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = item_attrs(item);
        if is_test_only(attrs) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        for a in &m.attrs {
            self.visit_attribute(a);
        }
        // A `mod x;` declaration is not an edge; an inline module's body is read in its own scope.
        if let Some((_, items)) = &m.content {
            self.scope.push(m.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.scope.pop();
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = impl_item_attrs(item);
        if !is_test_only(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        for a in &u.attrs {
            self.visit_attribute(a);
        }
        let mut prefix = Vec::new();
        self.use_tree(&mut prefix, &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let relative_ok = segments.len() > 1;
        self.record(segments, relative_ok);
        syn::visit::visit_path(self, p);
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        self.tokens(m.tokens.clone());
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        if let syn::Meta::List(l) = &a.meta {
            self.tokens(l.tokens.clone());
        } else if let syn::Meta::NameValue(nv) = &a.meta {
            self.visit_expr(&nv.value);
        }
    }
}

/// The module roots of a crate's `src/`: `lib.rs` and `main.rs`, where present.
fn entries(src: &Path) -> Vec<PathBuf> {
    ["lib.rs", "main.rs"].iter().map(|f| src.join(f)).filter(|p| p.is_file()).collect()
}

#[test]
fn no_import_cycles_between_files() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut srcs = vec![PathBuf::from("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(workspace.join("crates"))
        .expect("reading crates/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| p.strip_prefix(workspace).unwrap().join("src"))
        .collect();
    crates.sort();
    srcs.extend(crates);

    let mut failures = Vec::new();
    let (mut total_files, mut total_edges) = (0, 0);
    for src in &srcs {
        for entry in entries(&workspace.join(src)) {
            let graph = file_graph(&entry);
            let cycles = graph.cycles();
            total_files += graph.files.len();
            total_edges += graph.edges.len();
            let label = format!("{}/{}", src.display(), entry.file_name().unwrap().to_string_lossy());
            println!(
                "{label}: {} files, {} edges, {} cycle(s)",
                graph.files.len(),
                graph.edges.len(),
                cycles.len()
            );
            for c in &cycles {
                println!("{}", graph.describe(c));
                failures.push(format!("{label}:\n{}", graph.describe(c)));
            }
        }
    }
    println!("checked {} crates: {total_files} files, {total_edges} edges", srcs.len());
    assert!(total_files > srcs.len(), "read no module tree beyond the crate roots");
    assert!(failures.is_empty(), "import cycles between files:\n{}", failures.join("\n"));
}

/// A crate written to a temporary folder: (path, contents) pairs under `src/`.
fn synthetic(files: &[(&str, &str)]) -> (tempfile::TempDir, FileGraph) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join("src").join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let graph = file_graph(&dir.path().join("src/lib.rs"));
    (dir, graph)
}

fn edge_names(g: &FileGraph) -> BTreeSet<(String, String)> {
    g.edges.iter().map(|&(a, b)| (g.files[a].clone(), g.files[b].clone())).collect()
}

fn cycle_names(g: &FileGraph) -> Vec<Vec<String>> {
    g.cycles().iter().map(|c| c.iter().map(|&i| g.files[i].clone()).collect()).collect()
}

#[test]
fn the_check_finds_cycles_it_is_shown() {
    let (_dir, g) = synthetic(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\npub use c::Zed;\n"),
        // a → b through a path in code, b → a through `use super::`.
        ("a.rs", "pub struct A;\npub fn f() { let _ = crate::b::B::new(); }\n"),
        ("b.rs", "use super::a::A;\npub struct B;\nimpl B { pub fn new() -> Self { B } }\n"),
        // c/mod.rs re-exports from its child d; d imports what c defines.
        ("c/mod.rs", "mod d;\npub use d::Zed;\npub struct Wye;\n"),
        ("c/d.rs", "use super::Wye;\npub struct Zed(Wye);\n"),
    ]);
    assert_eq!(g.files.len(), 5, "{:?}", g.files);
    assert_eq!(
        cycle_names(&g),
        vec![
            vec!["a.rs".to_string(), "b.rs".to_string()],
            vec!["c/d.rs".to_string(), "c/mod.rs".to_string()]
        ]
    );
    assert!(edge_names(&g).contains(&("lib.rs".into(), "c/mod.rs".into())));
}

#[test]
fn the_check_passes_a_crate_without_cycles() {
    let (_dir, g) = synthetic(&[
        ("lib.rs", "mod kinds;\nmod user;\nmod nested;\npub use user::run;\n"),
        (
            "kinds.rs",
            "pub struct Kind;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::user::run;\n}\n",
        ),
        (
            "user.rs",
            "use crate::kinds::Kind;\nuse crate::nested;\npub fn leaf() -> &'static str { nested::leaf::NAME }\npub(crate) fn run() -> String { format!(\"{}\", crate::nested::inner::name()) }\n#[cfg(test)]\nfn helper() { crate::run(); }\n",
        ),
        (
            "nested.rs",
            "pub mod inner {\n    pub fn name() -> &'static str { super::leaf::NAME }\n}\nmod leaf;\n",
        ),
        ("nested/leaf.rs", "pub const NAME: &str = \"n\";\n"),
    ]);
    assert_eq!(g.files, ["lib.rs", "kinds.rs", "user.rs", "nested.rs", "nested/leaf.rs"]);
    assert!(cycle_names(&g).is_empty(), "{:?}", edge_names(&g));
    // Paths in code, in macro arguments, through inline modules and through a module
    // imported by name count; test items do not.
    let expected: BTreeSet<(String, String)> = [
        ("lib.rs", "user.rs"),
        ("user.rs", "kinds.rs"),
        ("user.rs", "nested.rs"),
        ("user.rs", "nested/leaf.rs"),
        ("nested.rs", "nested/leaf.rs"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(edge_names(&g), expected);
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

/// Where a file names the recipe: a path with a `recipe` segment (in code,
/// in an import, in macro arguments) or a `recipe` field (`plan.recipe`).
#[derive(Default)]
struct RecipeMentions {
    found: Vec<String>,
}

impl RecipeMentions {
    fn tokens(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, tt) in tts.iter().enumerate() {
            match tt {
                TokenTree::Group(g) => self.tokens(g.stream()),
                // `recipe::x` or `.recipe` written in a macro's arguments.
                TokenTree::Ident(id) if id == "recipe" => {
                    let before = i.checked_sub(1).and_then(|j| tts.get(j));
                    let after = tts.get(i + 1);
                    let is_path = matches!(after, Some(TokenTree::Punct(p)) if p.as_char() == ':');
                    let is_field = matches!(before, Some(TokenTree::Punct(p)) if p.as_char() == '.');
                    if is_path || is_field {
                        self.found.push(format!("`recipe` in a macro's arguments (tokens {i})"));
                    }
                }
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for RecipeMentions {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.segments.len() > 1 && p.segments.iter().any(|s| s.ident == "recipe") {
            let words: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            self.found.push(words.join("::"));
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        fn names_recipe(tree: &syn::UseTree) -> bool {
            match tree {
                syn::UseTree::Path(p) => p.ident == "recipe" || names_recipe(&p.tree),
                syn::UseTree::Name(n) => n.ident == "recipe",
                syn::UseTree::Rename(r) => r.ident == "recipe",
                syn::UseTree::Glob(_) => false,
                syn::UseTree::Group(g) => g.items.iter().any(names_recipe),
            }
        }
        fn text(tree: &syn::UseTree) -> String {
            match tree {
                syn::UseTree::Path(p) => format!("{}::{}", p.ident, text(&p.tree)),
                syn::UseTree::Name(n) => n.ident.to_string(),
                syn::UseTree::Rename(r) => format!("{} as {}", r.ident, r.rename),
                syn::UseTree::Glob(_) => "*".to_string(),
                syn::UseTree::Group(g) => {
                    format!("{{{}}}", g.items.iter().map(text).collect::<Vec<_>>().join(","))
                }
            }
        }
        if names_recipe(&u.tree) {
            self.found.push(format!("use {}", text(&u.tree)));
        }
        syn::visit::visit_item_use(self, u);
    }

    fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
        if matches!(&f.member, syn::Member::Named(id) if id == "recipe") {
            self.found.push(".recipe (a plan's recipe)".to_string());
        }
        syn::visit::visit_expr_field(self, f);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        self.tokens(m.tokens.clone());
    }
}

/// The report renders from the run's plan (its typed view,
/// `plan::campaign_view`), its record and its typed results, never from the
/// recipe's declarations (issue 42): no file under `src/report`, tests
/// included, names a module of `src/recipe`, directly or through a name it
/// imported, nor reads a plan's `recipe`.
#[test]
fn the_report_never_reads_the_recipe() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let graph = file_graph(&workspace.join("src/lib.rs"));
    let in_report = |f: &str| f.starts_with("report/") || f == "report.rs";
    let in_recipe = |f: &str| f.starts_with("recipe/") || f == "recipe.rs";
    assert!(graph.files.iter().any(|f| in_report(f)), "found no file of src/report in {:?}", graph.files);
    let mut problems: Vec<String> = graph
        .edges
        .iter()
        .filter(|&&(a, b)| in_report(&graph.files[a]) && in_recipe(&graph.files[b]))
        .map(|e| format!("src/{} → src/{} ({})", graph.files[e.0], graph.files[e.1], graph.why[e]))
        .collect();
    let files = rust_files(&workspace.join("src/report"));
    assert!(files.len() > 5, "read too few files of src/report: {files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", file.display()));
        let mut mentions = RecipeMentions::default();
        mentions.visit_file(&ast);
        let shown = file.strip_prefix(workspace).unwrap_or(&file).display().to_string();
        problems.extend(mentions.found.into_iter().map(|m| format!("{shown}: {m}")));
    }
    assert!(problems.is_empty(), "src/report reads the recipe:\n  {}", problems.join("\n  "));
}

#[test]
fn the_recipe_check_sees_paths_imports_and_fields() {
    let text = r#"
        use crate::recipe::{Decl, Kind};
        use crate::{plan::Plan, recipe};
        fn f(plan: &Plan) -> usize {
            let _ = crate::recipe::Kind::Cell;
            println!("{}", plan.recipe.campaign.name);
            plan.recipe.steps.len()
        }
        fn g(run: &Run) -> &str { &run.recipe_path }
    "#;
    let mut mentions = RecipeMentions::default();
    mentions.visit_file(&syn::parse_file(text).unwrap());
    let found = mentions.found.join("\n");
    assert!(found.contains("use crate::recipe::{Decl,Kind}"), "{found}");
    assert!(found.contains("use crate::{plan::Plan,recipe}"), "{found}");
    assert!(found.contains("crate::recipe::Kind::Cell"), "{found}");
    assert!(found.contains("in a macro's arguments"), "{found}");
    assert_eq!(mentions.found.iter().filter(|m| m.starts_with(".recipe")).count(), 1, "{found}");
    assert!(!found.contains("recipe_path"), "{found}");
}
