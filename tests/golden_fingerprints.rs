//! Fingerprints are promises: a stored result is found again only if the
//! same configuration hashes to the same fingerprint. This pins the
//! fingerprint of every step of every recipe in `recipes/` and the test
//! fixtures, so a refactor that changes what goes into a preimage fails here.
//! Changing them on purpose means bumping `FINGERPRINT_CONTEXT` and
//! regenerating with `ANVIL_BLESS=1 cargo test --test main golden_fingerprints::`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anvil::plan::{EngineMode, Plan};
use anvil::recipe::Kind;

const GOLDEN: &str = "tests/fixtures/golden-fingerprints.txt";
/// Each cell's fingerprint beside a digest of its resolved cell (every
/// default applied, as the load generator runs it).
const GOLDEN_RESOLVED: &str = "tests/fixtures/golden-resolved-cells.txt";

fn recipes() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for dir in ["recipes", "tests/fixtures/recipes"] {
        for entry in std::fs::read_dir(dir).expect("recipe folder") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "kdl") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths
}

/// Steps whose fingerprint does not depend on this machine: a launched
/// command's fingerprint hashes the engine binary found here, so it and
/// everything downstream of it differ between machines (by design).
fn portable(plan: &Plan) -> Vec<bool> {
    let mut ok = vec![true; plan.nodes.len()];
    for &i in &plan.order {
        let node = &plan.nodes[i];
        let machine_bound = node.kind == Kind::Server
            && node.preimage.value().pointer("/environment/engine/program").is_some();
        ok[i] = !machine_bound && node.deps.iter().all(|&d| ok[d]);
    }
    ok
}

/// The complete recipes of docs/recipes.md (```kdl blocks), each written as
/// `doc-HASH.kdl` (named by content, so moving an example does not rename it) beside the files they include (blocks starting `// file: NAME`).
fn doc_recipes(dir: &Path) -> Vec<PathBuf> {
    let doc = std::fs::read_to_string("docs/recipes.md").expect("docs/recipes.md");
    let mut blocks = Vec::new();
    let mut lines = doc.lines().enumerate();
    while let Some((_, line)) = lines.next() {
        if line.trim() != "```kdl" {
            continue;
        }
        let body: Vec<&str> =
            lines.by_ref().map(|(_, l)| l).take_while(|l| !l.trim_start().starts_with("```")).collect();
        blocks.push(body.join("\n"));
    }
    let mut paths = Vec::new();
    for body in blocks {
        match body.lines().next().and_then(|first| first.strip_prefix("// file: ")) {
            Some(name) => std::fs::write(dir.join(name.trim()), &body).expect("write included file"),
            None => {
                let id = blake3::hash(body.as_bytes()).to_hex();
                let path = dir.join(format!("doc-{}.kdl", &id[..12]));
                std::fs::write(&path, &body).expect("write doc recipe");
                paths.push(path);
            }
        }
    }
    paths
}

/// The golden lines of every recipe: fingerprints, and each cell's
/// fingerprint with the digest of its resolved cell.
fn current() -> (String, String) {
    let mut out = String::new();
    let mut resolved = String::new();
    let docs = tempfile::tempdir().expect("temp dir");
    let doc_paths = doc_recipes(docs.path());
    for path in recipes().into_iter().chain(doc_paths) {
        let recipe = match anvil::recipe::load(&path, &[]) {
            Ok(recipe) => recipe,
            // Fixtures that exist to be rejected have no fingerprints.
            Err(_) => continue,
        };
        for (mode, label) in [(EngineMode::SimulatedTwins, "sim"), (EngineMode::AsDeclared, "declared")] {
            let plan = Plan::build(recipe.clone(), None, mode).expect("a loadable recipe plans");
            let keep = portable(&plan);
            let mut seen = BTreeSet::new();
            for (i, node) in plan.nodes.iter().enumerate() {
                if keep[i] && seen.insert(&node.name) {
                    let shown = match path.strip_prefix(docs.path()) {
                        Ok(inside) => Path::new("docs/recipes.md").join(inside),
                        Err(_) => path.clone(),
                    };
                    let _ = writeln!(
                        out,
                        "{} {label} {}.{} {}",
                        shown.display(),
                        node.kind,
                        node.name,
                        node.fingerprint
                    );
                    if let Some(mut spec) =
                        anvil::plan::resolved_cell::resolve_in_recipe(&plan.recipe, &node.name)
                    {
                        // A cell's name labels it and changes nothing it does:
                        // two cells alike but for their names share a fingerprint.
                        spec.name.clear();
                        let json = serde_json::to_vec(&spec).expect("a resolved cell serialises");
                        let digest = blake3::hash(&json).to_hex();
                        let _ = writeln!(
                            resolved,
                            "{} {label} cell.{} {} {}",
                            shown.display(),
                            node.name,
                            node.fingerprint,
                            &digest[..16]
                        );
                    }
                }
            }
        }
    }
    (out, resolved)
}

/// A golden file's lines in sorted order: the files are compared as sets,
/// and a bless that sorts shows only the lines that moved.
fn sorted_lines(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn fingerprints_of_every_recipe_are_unchanged() {
    let (now, _) = current();
    if std::env::var_os("ANVIL_BLESS").is_some() {
        std::fs::write(GOLDEN, sorted_lines(&now)).expect("write golden file");
        return;
    }
    let golden = std::fs::read_to_string(Path::new(GOLDEN)).expect("golden file (ANVIL_BLESS=1 writes it)");
    let old: BTreeSet<&str> = golden.lines().collect();
    let new: BTreeSet<&str> = now.lines().collect();
    let lost: Vec<&&str> = old.difference(&new).collect();
    let gained: Vec<&&str> = new.difference(&old).collect();
    assert!(
        lost.is_empty() && gained.is_empty(),
        "fingerprints changed.\nno longer produced:\n{}\nnewly produced:\n{}",
        lost.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n"),
        gained.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n"),
    );
    assert!(golden.lines().count() > 50, "the golden file covers the recipes");
}

/// A default that changes what a cell does must change its fingerprint:
/// a cell whose fingerprint is pinned but whose resolved cell (what the
/// load generator runs) differs from the pinned one fails here. Name the
/// new default in `plan::resolved_cell::fingerprinted_defaults` (or bump
/// `FINGERPRINT_CONTEXT`), then bless both files.
#[test]
fn a_resolved_cell_changes_only_with_its_fingerprint() {
    let (_, now) = current();
    if std::env::var_os("ANVIL_BLESS").is_some() {
        std::fs::write(GOLDEN_RESOLVED, sorted_lines(&now)).expect("write golden file");
        return;
    }
    let golden = std::fs::read_to_string(GOLDEN_RESOLVED).expect("golden file (ANVIL_BLESS=1 writes it)");
    // fingerprint -> resolved digest, as pinned.
    let pinned: std::collections::BTreeMap<&str, &str> = golden
        .lines()
        .filter_map(|l| {
            let mut words = l.rsplitn(3, ' ');
            let digest = words.next()?;
            let fingerprint = words.next()?;
            Some((fingerprint, digest))
        })
        .collect();
    let mut moved = Vec::new();
    for line in now.lines() {
        let mut words = line.rsplitn(3, ' ');
        let (digest, fingerprint, cell) =
            (words.next().unwrap(), words.next().unwrap(), words.next().unwrap());
        if pinned.get(fingerprint).is_some_and(|pinned| *pinned != digest) {
            moved.push(format!("  {cell} (fingerprint {fingerprint})"));
        }
    }
    assert!(
        moved.is_empty(),
        "these cells now run differently under an unchanged fingerprint (a stored result would be reused for a different measurement):\n{}",
        moved.join("\n")
    );
    assert!(pinned.len() > 20, "the golden file covers the cells");
}
