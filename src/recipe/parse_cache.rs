//! A cache of what the loader read from recipe files, so a rerun does not
//! parse KDL it has parsed before: kdl-rs spends about 3,700 instructions a
//! byte, over half of a fully cached quickstart rerun.
//!
//! An entry holds the loader's output (declarations as written, with their
//! spans) and, for every file it read, the path it read, that path made
//! canonical, and the blake3 of the text. It is used only when every one of
//! those files still has that text at that path and the running anvil is the
//! binary that wrote it; anything else is a miss and a fresh parse. Only a
//! load without problems is written, so every error comes from a parse.
//!
//! One file per recipe path (`<dir>/<blake3 of the path>.json`), rewritten
//! when the recipe changes: the cache stays as small as the set of recipes
//! run against the store, and deleting it loses nothing.

use std::fs;
use std::path::{Path, PathBuf};

use kdl::KdlValue;
use miette::SourceSpan;
use serde::{Deserialize, Serialize};

use super::decls::ExecutorDecl;
use super::kind::Kind;
use super::loader::{self, CampaignDecl, Loaded, ParamDecl};
use super::problem::{Problems, SourceText};
use super::raw::{RawDecl, RawField, Spanned};

const FORMAT: &str = "anvil.recipe-parse-cache/v1";

/// Where loaded recipes are kept, for the binary now running.
#[derive(Debug, Clone)]
pub struct ParseCache {
    dir: PathBuf,
    /// Which anvil wrote an entry: a rebuilt binary may read recipes differently.
    binary: String,
}

impl ParseCache {
    /// A cache in `dir` (created when first written); `None` when this
    /// process cannot name its own binary, so could not tell entries apart.
    pub fn in_dir(dir: PathBuf) -> Option<ParseCache> {
        Some(ParseCache { dir, binary: binary_identity()? })
    }

    /// What [`loader::load_files`] returns for `main`, from the cache when
    /// every file it read is unchanged; a fresh load is written back when it
    /// found no problems.
    pub(super) fn load(&self, main: &Path, problems: &mut Problems) -> Loaded {
        if let Some(loaded) = self.lookup(main) {
            return loaded;
        }
        let before = problems.len();
        let loaded = loader::load_files(main, problems);
        if problems.len() == before {
            // A cache that cannot be written only costs the next run a parse.
            let _ = self.save(main, &loaded);
        }
        loaded
    }

    fn slot(&self, main: &Path) -> Option<PathBuf> {
        let named = main.to_str()?;
        let canonical = loader::canonical_of(main);
        let mut hasher = blake3::Hasher::new();
        hasher.update(named.as_bytes());
        hasher.update(b"\0");
        hasher.update(canonical.as_os_str().as_encoded_bytes());
        Some(self.dir.join(format!("{}.json", hasher.finalize().to_hex())))
    }

    fn lookup(&self, main: &Path) -> Option<Loaded> {
        let bytes = fs::read(self.slot(main)?).ok()?;
        // The header is checked before the declarations are decoded: an
        // edited recipe costs a line, not the whole entry.
        let (header, body) = bytes.split_at(bytes.iter().position(|&b| b == b'\n')?);
        let header: Header = serde_json::from_slice(header).ok()?;
        let main_named = main.to_str()?;
        if header.format != FORMAT || header.binary != self.binary || header.files.first()?.path != main_named
        {
            return None;
        }
        let mut files = Vec::with_capacity(header.files.len());
        let mut sources = Vec::with_capacity(header.files.len());
        for stamp in &header.files {
            let path = Path::new(&stamp.path);
            let text = fs::read_to_string(path).ok()?;
            let canonical = loader::canonical_of(path);
            if blake3::hash(text.as_bytes()).to_hex().as_str() != stamp.blake3 || canonical != stamp.canonical
            {
                return None;
            }
            files.push(canonical);
            sources.push(loader::source_text(path, text));
        }
        let body: Body = serde_json::from_slice(body).ok()?;
        body.into_loaded(files, sources)
    }

    fn save(&self, main: &Path, loaded: &Loaded) -> Option<()> {
        let slot = self.slot(main)?;
        let (header, body) = entry_of(&self.binary, loaded)?;
        // Two lines: compact JSON has no raw newline.
        let mut bytes = serde_json::to_vec(&header).ok()?;
        bytes.push(b'\n');
        serde_json::to_writer(&mut bytes, &body).ok()?;
        anvil_store::cache::write_whole(&slot, &bytes).ok()
    }
}

/// Names the running executable: its path, inode and size and when it was
/// last written. Rebuilding anvil changes it, so no entry outlives the code
/// that read it.
fn binary_identity() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    Some(format!("{} {}", exe.display(), anvil_store::cache::file_identity(&exe)?))
}

/// A cache file's first line: who wrote it, and the files it was read from.
#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    binary: String,
    /// Main file first, in reading order (`Loaded::files`).
    files: Vec<FileStamp>,
}

/// Its second line: what the loader made of those files.
#[derive(Serialize, Deserialize)]
struct Body {
    campaign: CampaignDecl,
    params: Vec<CachedParam>,
    decls: Vec<CachedDecl>,
    executors: Vec<ExecutorDecl>,
}

#[derive(Serialize, Deserialize)]
struct FileStamp {
    /// As it was read, and as problems name it.
    path: String,
    canonical: PathBuf,
    blake3: String,
}

/// `(offset, length)` of a span.
type Span = (usize, usize);

#[derive(Serialize, Deserialize)]
struct CachedParam {
    file: usize,
    name: (String, Span),
    default: (CachedValue, Span),
}

#[derive(Serialize, Deserialize)]
struct CachedDecl {
    kind: Kind,
    file: usize,
    name: (String, Span),
    span: Span,
    fields: Vec<CachedField>,
}

/// A [`RawField`]; its file is its declaration's.
#[derive(Serialize, Deserialize)]
struct CachedField {
    name: (String, Span),
    args: Vec<(CachedValue, Span)>,
    props: Vec<((String, Span), (CachedValue, Span))>,
    children: Vec<CachedField>,
    span: Span,
}

/// A KDL value, exactly: a float by its bits (JSON has no NaN, and a decimal
/// round trip need not give the same bits back).
#[derive(Serialize, Deserialize)]
enum CachedValue {
    #[serde(rename = "s")]
    String(String),
    #[serde(rename = "i")]
    Integer(i128),
    #[serde(rename = "f")]
    Float(u64),
    #[serde(rename = "b")]
    Bool(bool),
    #[serde(rename = "n")]
    Null,
}

/// `None` when a declaration does not come from one of the files read (the
/// loader never does that; an entry could not say so).
fn entry_of(binary: &str, loaded: &Loaded) -> Option<(Header, Body)> {
    let Loaded { campaign, params, decls, executors, files, sources } = loaded;
    let files = files
        .iter()
        .zip(sources)
        .map(|(canonical, source)| FileStamp {
            path: source.name().to_string(),
            canonical: canonical.clone(),
            blake3: blake3::hash(source.inner().as_bytes()).to_hex().to_string(),
        })
        .collect();
    let file_of = |source: &SourceText| sources.iter().position(|s| std::sync::Arc::ptr_eq(s, source));
    let params = params
        .iter()
        .map(|p| {
            Some(CachedParam { file: file_of(&p.source)?, name: text(&p.name), default: value(&p.default) })
        })
        .collect::<Option<_>>()?;
    let decls = decls
        .iter()
        .map(|d| {
            Some(CachedDecl {
                kind: d.kind,
                file: file_of(&d.source)?,
                name: text(&d.name),
                span: span(d.span),
                fields: d.fields.iter().map(|f| CachedField::of(f, &d.source)).collect::<Option<_>>()?,
            })
        })
        .collect::<Option<_>>()?;
    let header = Header { format: FORMAT.to_string(), binary: binary.to_string(), files };
    Some((header, Body { campaign: campaign.clone(), params, decls, executors: executors.clone() }))
}

impl Body {
    /// `None` when the entry points at a file it does not list.
    fn into_loaded(self, files: Vec<PathBuf>, sources: Vec<SourceText>) -> Option<Loaded> {
        let source = |file: usize| sources.get(file).cloned();
        let params = self
            .params
            .into_iter()
            .map(|p| {
                Some(ParamDecl {
                    source: source(p.file)?,
                    name: spanned_text(p.name),
                    default: spanned_value(p.default),
                })
            })
            .collect::<Option<_>>()?;
        let decls = self
            .decls
            .into_iter()
            .map(|d| {
                let source = source(d.file)?;
                Some(RawDecl {
                    kind: d.kind,
                    name: spanned_text(d.name),
                    span: source_span(d.span),
                    fields: d.fields.into_iter().map(|f| f.into_field(&source)).collect(),
                    source,
                })
            })
            .collect::<Option<_>>()?;
        Some(Loaded { campaign: self.campaign, params, decls, executors: self.executors, files, sources })
    }
}

impl CachedField {
    /// `None` when the field came from another file than its declaration
    /// (the loader never does that; a cache entry could not say so).
    fn of(field: &RawField, file: &SourceText) -> Option<CachedField> {
        // Every field named, so a field added to RawField must be added here.
        let RawField { name, args, props, children, span: field_span, source } = field;
        if !std::sync::Arc::ptr_eq(source, file) {
            return None;
        }
        Some(CachedField {
            name: text(name),
            args: args.iter().map(value).collect(),
            props: props.iter().map(|(key, v)| (text(key), value(v))).collect(),
            children: children.iter().map(|c| CachedField::of(c, file)).collect::<Option<_>>()?,
            span: span(*field_span),
        })
    }

    fn into_field(self, source: &SourceText) -> RawField {
        RawField {
            name: spanned_text(self.name),
            args: self.args.into_iter().map(spanned_value).collect(),
            props: self.props.into_iter().map(|(key, v)| (spanned_text(key), spanned_value(v))).collect(),
            children: self.children.into_iter().map(|c| c.into_field(source)).collect(),
            span: source_span(self.span),
            source: source.clone(),
        }
    }
}

fn span(span: SourceSpan) -> Span {
    (span.offset(), span.len())
}

fn source_span((offset, len): Span) -> SourceSpan {
    SourceSpan::new(offset.into(), len)
}

fn text(spanned: &Spanned<String>) -> (String, Span) {
    (spanned.value.clone(), span(spanned.span))
}

fn spanned_text((value, at): (String, Span)) -> Spanned<String> {
    Spanned { value, span: source_span(at) }
}

fn value(spanned: &Spanned<KdlValue>) -> (CachedValue, Span) {
    let cached = match &spanned.value {
        KdlValue::String(s) => CachedValue::String(s.clone()),
        KdlValue::Integer(i) => CachedValue::Integer(*i),
        KdlValue::Float(x) => CachedValue::Float(x.to_bits()),
        KdlValue::Bool(b) => CachedValue::Bool(*b),
        KdlValue::Null => CachedValue::Null,
    };
    (cached, span(spanned.span))
}

fn spanned_value((cached, at): (CachedValue, Span)) -> Spanned<KdlValue> {
    let value = match cached {
        CachedValue::String(s) => KdlValue::String(s),
        CachedValue::Integer(i) => KdlValue::Integer(i),
        CachedValue::Float(bits) => KdlValue::Float(f64::from_bits(bits)),
        CachedValue::Bool(b) => KdlValue::Bool(b),
        CachedValue::Null => KdlValue::Null,
    };
    Spanned { value, span: source_span(at) }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::ParseCache;
    use crate::recipe::loader::{Loaded, load_files};
    use crate::recipe::problem::Problems;

    fn cache_in(dir: &Path) -> ParseCache {
        ParseCache::in_dir(dir.join("cache")).expect("a test binary has a name")
    }

    fn fresh(main: &Path) -> Loaded {
        let mut problems = Problems::default();
        let loaded = load_files(main, &mut problems);
        assert_eq!(problems.len(), 0, "{} loads without problems", main.display());
        loaded
    }

    /// Everything the loader produced, sources and spans included.
    fn shown(loaded: &Loaded) -> String {
        format!("{loaded:#?}")
    }

    fn recipe_files() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in ["recipes", "recipes/engines", "tests/fixtures/recipes", "examples"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
            files.extend(
                entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "kdl")),
            );
        }
        files.sort();
        files
    }

    #[test]
    fn a_kept_load_is_the_fresh_load_for_every_recipe_in_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path());
        let files = recipe_files();
        assert!(files.len() >= 5, "found the project's recipes: {files:?}");
        let mut compared = 0;
        for main in files {
            let mut problems = Problems::default();
            let loaded = load_files(&main, &mut problems);
            if !problems.is_empty() {
                continue; // fixtures of errors: never kept
            }
            cache.save(&main, &loaded).expect("kept");
            let kept = cache.lookup(&main).unwrap_or_else(|| panic!("{} is found again", main.display()));
            assert_eq!(shown(&kept), shown(&loaded), "{}", main.display());
            compared += 1;
        }
        assert!(compared >= 5, "compared {compared} recipes");
    }

    #[test]
    fn values_spans_and_includes_come_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main.kdl");
        std::fs::write(
            dir.path().join("site.kdl"),
            "param \"depth\" 170141183460469231731687303715884105727\n",
        )
        .unwrap();
        std::fs::write(
            &main,
            "campaign \"c\" { seed -3; }\ninclude \"site.kdl\"\n\
             task \"t\" x=1.5e300 y=#nan z=#-inf n=#null b=#false {\n    run \"sh\" \"-c\" #\"echo \"{depth}\"\"#\n    env { A \"1\"; B 0.1; }\n}\n\
             executor \"slurm\" { partition \"gpu\"; }\n",
        )
        .unwrap();
        let loaded = fresh(&main);
        assert_eq!(loaded.files.len(), 2);
        let cache = cache_in(dir.path());
        cache.save(&main, &loaded).unwrap();
        let kept = cache.lookup(&main).expect("found again");
        assert_eq!(shown(&kept), shown(&loaded));
        assert_eq!(kept.sources[1].name(), dir.path().join("site.kdl").display().to_string());
        let float =
            |l: &Loaded| l.decls[0].fields.iter().find(|f| f.name.value == "y").unwrap().args[0].clone();
        assert!(matches!(float(&kept).value, kdl::KdlValue::Float(x) if x.is_nan()));
        assert_eq!(float(&kept).span, float(&loaded).span);
    }

    #[test]
    fn any_changed_file_or_another_binary_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main.kdl");
        let site = dir.path().join("site.kdl");
        std::fs::write(&site, "param \"who\" \"world\"\n").unwrap();
        std::fs::write(&main, "include \"site.kdl\"\ntask \"t\" { run \"echo\" \"{who}\"; }\n").unwrap();
        let cache = cache_in(dir.path());
        cache.save(&main, &fresh(&main)).unwrap();
        assert!(cache.lookup(&main).is_some());

        let other_binary = ParseCache { dir: dir.path().join("cache"), binary: "another anvil".into() };
        assert!(other_binary.lookup(&main).is_none(), "another build of anvil parses afresh");

        std::fs::write(&site, "param \"who\" \"anvil\"\n").unwrap();
        assert!(cache.lookup(&main).is_none(), "an included file changed");
        let mut problems = Problems::default();
        let reloaded = cache.load(&main, &mut problems);
        assert!(format!("{:?}", reloaded.params[0].default.value).contains("anvil"), "the new text is read");
        assert!(cache.lookup(&main).is_some(), "and kept in place of the old");

        std::fs::remove_file(&site).unwrap();
        assert!(cache.lookup(&main).is_none(), "an included file is gone");
        let mut problems = Problems::default();
        cache.load(&main, &mut problems);
        assert_eq!(problems.len(), 1, "the fresh load reports the missing file");
    }

    #[test]
    fn a_load_with_problems_is_never_kept_and_a_damaged_entry_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main.kdl");
        std::fs::write(&main, "task \"t\" { run \"echo\"; \n").unwrap();
        let cache = cache_in(dir.path());
        let mut problems = Problems::default();
        cache.load(&main, &mut problems);
        assert!(!problems.is_empty());
        assert!(!dir.path().join("cache").exists(), "nothing kept for a broken recipe");

        std::fs::write(&main, "task \"t\" { run \"echo\"; }\n").unwrap();
        cache.load(&main, &mut Problems::default());
        let slot = cache.slot(&main).unwrap();
        assert!(slot.is_file());
        std::fs::write(&slot, "{\"format\": \"not this\"").unwrap();
        assert!(cache.lookup(&main).is_none(), "a damaged entry is ignored");
        let mut problems = Problems::default();
        let loaded = cache.load(&main, &mut problems);
        assert_eq!((problems.len(), loaded.decls.len()), (0, 1));
        assert!(cache.lookup(&main).is_some(), "and replaced");
    }
}
