//! Property tests (fuzz target `recipe`) of the recipe loader: KDL text
//! mutated from real recipes (bytes and lines deleted, duplicated, swapped;
//! tokens inserted) never makes `anvil::recipe::load` panic, and every
//! problem it reports points inside its own source text, on character
//! boundaries, and renders. Driver and seed corpus: `fuzz/harness.rs`,
//! `fuzz/corpus/recipe/` (plus `recipes/` and `tests/fixtures/recipes/`).

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};

use anvil::recipe::{RecipeError, load};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;

/// Every seed: (file name, text). The corpus first, then the repository's
/// recipes and test fixtures.
fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut seeds = harness::corpus("recipe");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["recipes", "tests/fixtures/recipes"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("reading {dir}: {e}"))
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "kdl"))
            .collect();
        files.sort();
        for path in files {
            let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
            seeds.push((name, std::fs::read(&path).expect("reading a seed recipe")));
        }
    }
    seeds
}

/// A folder holding every seed under its own name, so that `include`s of
/// one seed by another resolve, and the file under test beside them.
struct Workdir {
    _dir: tempfile::TempDir,
    recipe: PathBuf,
}

impl Workdir {
    fn new(seeds: &[(String, Vec<u8>)]) -> Workdir {
        let dir = tempfile::tempdir().expect("a temporary folder");
        for (name, bytes) in seeds {
            std::fs::write(dir.path().join(name), bytes).expect("writing a seed");
        }
        let recipe = dir.path().join("recipe.kdl");
        Workdir { _dir: dir, recipe }
    }

    fn load(&self, bytes: &[u8]) -> Result<(), RecipeError> {
        std::fs::write(&self.recipe, bytes).expect("writing the recipe");
        load(&self.recipe, &[]).map(|_| ())
    }
}

/// What must hold of any error: each problem's span lies within its own
/// source text on character boundaries, its location and the whole report
/// render.
fn check_error(error: &RecipeError) -> TestCaseResult {
    prop_assert!(!error.problems.is_empty(), "an error without problems: {}", error);
    prop_assert!(!error.to_string().is_empty());
    for problem in &error.problems {
        let text = problem.source.inner();
        let (start, len) = (problem.span.offset(), problem.span.len());
        prop_assert!(
            start + len <= text.len(),
            "span {}+{} past the end ({} bytes) of {}: {}",
            start,
            len,
            text.len(),
            problem.source.name(),
            problem.message
        );
        prop_assert!(
            text.is_char_boundary(start) && text.is_char_boundary(start + len),
            "span {}+{} splits a character in {}: {}",
            start,
            len,
            problem.source.name(),
            problem.message
        );
        prop_assert!(!problem.message.is_empty());
        prop_assert!(!problem.location().is_empty());
    }
    let mut rendered = String::new();
    let handler = miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor());
    handler
        .render_report(&mut rendered, error)
        .map_err(|e| TestCaseError::fail(format!("rendering the report: {e}")))?;
    prop_assert!(!rendered.is_empty());
    Ok(())
}

fn check_recipe(workdir: &Workdir, bytes: &[u8]) -> TestCaseResult {
    match workdir.load(bytes) {
        Ok(()) => Ok(()),
        Err(error) => check_error(&error),
    }
}

/// Tokens of the recipe language and of KDL, good and bad.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "\"",
    ";",
    "=",
    " ",
    "\n",
    "/-",
    "//",
    "/*",
    "*/",
    "#true",
    "#null",
    "#inf",
    "-1",
    "1.5e308",
    "99999999999999999999999",
    "0x1F",
    "r#\"raw\"#",
    "\"\"\"\nmulti\n\"\"\"",
    "\"{size}\"",
    "\"{missing}\"",
    "\"{runtime.port}\"",
    "\"é\"",
    "\"🦀\"",
    "é",
    "\u{0}",
    "\u{feff}",
    "\r\n",
    "campaign",
    "param",
    "server",
    "workload",
    "cell",
    "task",
    "gate",
    "check",
    "screen",
    "include \"recipe.kdl\"\n",
    "include \"minimal.kdl\"\n",
    "include \"nowhere.kdl\"\n",
    " extends=\"base\"",
    " extends=\"leaf\"",
    " after=\"hello\"",
    " abstract=#true",
    " server=\"sim\"",
    " workload=\"tiny\"",
    "sweep \"depth\" 1 2\n",
    "require \"cell.tiny.failed ==\"\n",
    "require \"1 < 2\"\n",
    "\ntask \"t\" after=\"t\" { run \"x\"; }\n",
    "\ngate \"x\" { require \"max(task.*.exit_code) == 0\"; }\n",
    "run \"sh\" \"-c\" \"echo\"\n",
    "timeout \"5s\"\n",
    "timeout \"forever\"\n",
];

/// Edits a recipe line by line.
#[derive(Debug, Clone)]
enum LineEdit {
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
    /// Moves a line elsewhere.
    Move(usize, usize),
    Insert(usize, &'static str),
}

impl LineEdit {
    fn apply(&self, bytes: &mut Vec<u8>) {
        let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        let n = lines.len();
        match *self {
            LineEdit::Delete(i) => {
                lines.remove(i % n);
            }
            LineEdit::Duplicate(i) => {
                let line = lines[i % n].clone();
                lines.insert(i % n, line);
            }
            LineEdit::Swap(a, b) => lines.swap(a % n, b % n),
            LineEdit::Move(from, to) => {
                let line = lines.remove(from % n);
                lines.insert(to % n, line);
            }
            LineEdit::Insert(i, token) => lines.insert(i % (n + 1), token.as_bytes().to_vec()),
        }
        *bytes = lines.join(&b'\n');
    }
}

fn line_edit() -> impl Strategy<Value = LineEdit> {
    prop_oneof![
        any::<usize>().prop_map(LineEdit::Delete),
        any::<usize>().prop_map(LineEdit::Duplicate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| LineEdit::Swap(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| LineEdit::Move(a, b)),
        (any::<usize>(), proptest::sample::select(TOKENS)).prop_map(|(i, t)| LineEdit::Insert(i, t)),
    ]
}

#[derive(Debug, Clone)]
enum Edit {
    Bytes(harness::Mutation),
    Line(LineEdit),
}

fn edit() -> impl Strategy<Value = Edit> {
    let token = proptest::sample::select(TOKENS).prop_map(|t| t.as_bytes().to_vec());
    prop_oneof![harness::mutation(token).prop_map(Edit::Bytes), line_edit().prop_map(Edit::Line),]
}

/// A seed (by index) and the edits made to it.
fn mutated_recipe(seeds: usize, max_edits: usize) -> impl Strategy<Value = (usize, Vec<Edit>)> {
    (0..seeds, vec(edit(), 1..=max_edits))
}

fn apply(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for edit in edits {
        match edit {
            Edit::Bytes(m) => m.apply(&mut bytes),
            Edit::Line(l) => l.apply(&mut bytes),
        }
    }
    bytes
}

#[test]
fn fuzz_recipe_mutated_recipes_never_panic_and_point_inside_their_source() {
    let seeds = seeds();
    let workdir = Workdir::new(&seeds);
    harness::check("recipe", "mutated_recipes", 96, mutated_recipe(seeds.len(), 6), |(seed, edits)| {
        check_recipe(&workdir, &apply(&seeds[seed].1, &edits))
    });
}

#[test]
fn fuzz_recipe_token_soups_never_panic() {
    let seeds = seeds();
    let workdir = Workdir::new(&seeds);
    let soup = vec(proptest::sample::select(TOKENS), 0..40).prop_map(|t| t.concat().into_bytes());
    let text = prop_oneof![soup, vec(any::<u8>(), 0..200), "[ -~\n]{0,200}".prop_map(String::into_bytes)];
    harness::check("recipe", "token_soups", 96, text, |bytes| check_recipe(&workdir, &bytes));
}

#[test]
fn corpus_recipe_replays() {
    let seeds = seeds();
    let workdir = Workdir::new(&seeds);
    let mut loaded = 0;
    for (name, bytes) in &seeds {
        match workdir.load(bytes) {
            Ok(()) => loaded += 1,
            Err(error) => check_error(&error).unwrap_or_else(|e| panic!("{name}: {e}")),
        }
    }
    // The seeds are mostly good recipes, so mutations start from valid text.
    assert!(loaded * 2 > seeds.len(), "only {loaded} of {} seeds load", seeds.len());
    let corpus_problems = harness::corpus("recipe").into_iter().find(|(n, _)| n == "problems.kdl").unwrap().1;
    let error = workdir.load(&corpus_problems).expect_err("problems.kdl has problems");
    assert!(error.problems.len() >= 2, "{error}: {:?}", error.problems);
}
