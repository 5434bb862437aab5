//! Reads recipe files: KDL syntax, `include`s, `param`s and the `campaign`
//! header; everything else becomes a raw declaration.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kdl::{KdlDocument, KdlNode, KdlValue};
use miette::{NamedSource, SourceSpan};

use super::problem::{Problem, Problems, SourceText, did_you_mean};
use super::raw::{RawDecl, RawField, Spanned};
use crate::step_kind::Kind;

/// `param "name" default`: a value the user may override with `--set`.
#[derive(Debug, Clone)]
pub struct ParamDecl {
    pub name: Spanned<String>,
    pub default: Spanned<KdlValue>,
    pub source: SourceText,
}

#[derive(Debug, Clone, Default)]
pub struct CampaignDecl {
    pub name: Option<String>,
    pub description: Option<String>,
    pub seed: Option<i128>,
}

#[derive(Debug, Default)]
pub struct Loaded {
    pub campaign: CampaignDecl,
    pub params: Vec<ParamDecl>,
    pub decls: Vec<RawDecl>,
    /// `executor "slurm" { … }` blocks, in reading order (the last one counts).
    pub executors: Vec<super::decls::ExecutorDecl>,
    /// Every recipe file read, main file first (their contents enter no
    /// fingerprint: only the resolved settings do).
    pub files: Vec<PathBuf>,
    /// The text of each of `files`, named as it was read (`dir/included.kdl`).
    pub sources: Vec<SourceText>,
}

const TOP_LEVEL: &[&str] = &[
    "campaign", "param", "include", "server", "workload", "cell", "check", "gate", "task", "screen",
    "decision", "finally", "executor", "search",
];

pub fn load_files(main: &Path, problems: &mut Problems) -> Loaded {
    load_files_from(main, None, problems)
}

/// [`load_files`], taking every file's text from `frozen` (what a run read
/// when it started) instead of the file system: `None` reads the files.
pub fn load_files_from(main: &Path, frozen: Option<&FrozenTexts>, problems: &mut Problems) -> Loaded {
    let mut loaded = Loaded::default();
    let mut stack = Vec::new();
    read_file(main, None, &mut stack, &mut loaded, frozen, problems);
    loaded
}

/// The recipe files' texts as a run read them when it started (the main
/// file and its includes): loading from them reads no file, so an edit
/// during the run changes nothing it loads.
#[derive(Debug, Clone, Default)]
pub struct FrozenTexts {
    /// By canonical path and by the name the file was read under.
    texts: std::collections::HashMap<PathBuf, String>,
}

impl FrozenTexts {
    /// `files` (canonical) and `sources` (their texts, named as read), as a
    /// load left them.
    pub fn of(files: &[PathBuf], sources: &[SourceText]) -> FrozenTexts {
        let mut texts = std::collections::HashMap::new();
        for (file, source) in files.iter().zip(sources) {
            texts.insert(file.clone(), source.inner().clone());
            texts.insert(PathBuf::from(source.name()), source.inner().clone());
        }
        FrozenTexts { texts }
    }

    fn read(&self, path: &Path) -> std::io::Result<String> {
        self.texts.get(&canonical_of(path)).or_else(|| self.texts.get(path)).cloned().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "not among the files read when the run started")
        })
    }
}

/// Where an `include` came from, to point at it when the included file is unreadable.
struct IncludeSite<'a> {
    source: &'a SourceText,
    span: SourceSpan,
}

fn read_file(
    path: &Path,
    site: Option<IncludeSite<'_>>,
    stack: &mut Vec<PathBuf>,
    loaded: &mut Loaded,
    frozen: Option<&FrozenTexts>,
    problems: &mut Problems,
) {
    let canonical = canonical_of(path);
    if stack.contains(&canonical) {
        if let Some(site) = site {
            problems.push(
                Problem::new(
                    site.source,
                    site.span,
                    format!("include cycle: {} includes itself", path.display()),
                )
                .label("this include"),
            );
        }
        return;
    }
    if loaded.files.contains(&canonical) {
        return; // included twice through different paths: once is enough
    }
    let read = match frozen {
        Some(frozen) => frozen.read(path),
        None => std::fs::read_to_string(path),
    };
    let text = match read {
        Ok(text) => text,
        Err(err) => {
            match site {
                Some(site) => problems.push(
                    Problem::new(
                        site.source,
                        site.span,
                        format!("cannot read included file {}: {err}", path.display()),
                    )
                    .label("included here"),
                ),
                None => {
                    let source = Arc::new(NamedSource::new(path.display().to_string(), String::new()));
                    problems.push(Problem::new(
                        &source,
                        SourceSpan::from(0..0),
                        format!("cannot read recipe {}: {err}", path.display()),
                    ));
                }
            }
            return;
        }
    };
    loaded.files.push(canonical.clone());
    let source = source_text(path, text.clone());
    loaded.sources.push(source.clone());
    stack.push(canonical);
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let parsed = text.parse::<KdlDocument>();
    if let Ok(document) = &parsed {
        for node in document.nodes() {
            read_top_level(node, &source, &dir, stack, loaded, frozen, problems);
        }
    }
    stack.pop();
    if let Err(err) = parsed {
        for diag in err.diagnostics {
            let mut problem = Problem::new(
                &source,
                diag.span,
                diag.message.clone().unwrap_or_else(|| "invalid KDL".into()),
            )
            .label(diag.label.clone().unwrap_or_else(|| "here".into()))
            .maybe_help(diag.help.clone());
            if let Some(hint) = v1_habit_hint(&text, diag.span) {
                problem = problem.help(hint);
            }
            problems.push(problem);
        }
    }
}

fn read_top_level(
    node: &KdlNode,
    source: &SourceText,
    dir: &Path,
    stack: &mut Vec<PathBuf>,
    loaded: &mut Loaded,
    frozen: Option<&FrozenTexts>,
    problems: &mut Problems,
) {
    let word = node.name().value();
    match word {
        "include" => {
            let Some(target) = single_string(node, source, problems) else { return };
            let site = IncludeSite { source, span: node.span() };
            read_file(&dir.join(target), Some(site), stack, loaded, frozen, problems);
        }
        "param" => read_param(node, source, loaded, problems),
        "campaign" => read_campaign(node, source, loaded, problems),
        "executor" => loaded.executors.extend(super::decls::executor::read(node, source, problems)),
        _ => match Kind::from_word(word) {
            Some(kind) => {
                if let Some(decl) = read_decl(kind, node, source, problems) {
                    loaded.decls.push(decl);
                }
            }
            None => problems.push(
                Problem::new(source, node.name().span(), format!("unknown declaration `{word}`"))
                    .label("not a known kind")
                    .maybe_help(
                        did_you_mean(word, TOP_LEVEL.iter().copied())
                            .or_else(|| Some(format!("a recipe holds: {}", TOP_LEVEL.join(", ")))),
                    ),
            ),
        },
    }
}

fn read_decl(kind: Kind, node: &KdlNode, source: &SourceText, problems: &mut Problems) -> Option<RawDecl> {
    let mut name = None;
    let mut fields = Vec::new();
    for entry in node.entries() {
        let value = Spanned { value: entry.value().clone(), span: entry.span() };
        match entry.name() {
            Some(key) => fields.push(RawField::from_prop(
                Spanned { value: key.value().to_string(), span: key.span() },
                value,
                source,
            )),
            None if name.is_none() => match entry.value() {
                KdlValue::String(s) => name = Some(Spanned { value: s.clone(), span: entry.span() }),
                other => {
                    problems.push(Problem::new(
                        source,
                        entry.span(),
                        format!(
                            "a {kind}'s name must be a string, not {}",
                            super::raw::describe_value(other)
                        ),
                    ));
                    return None;
                }
            },
            None => problems.push(
                Problem::new(source, entry.span(), format!("unexpected extra argument on `{kind}`"))
                    .help(format!("write settings inside the block: {kind} \"name\" {{ … }}")),
            ),
        }
    }
    let Some(name) = name else {
        problems.push(
            Problem::new(source, node.span(), format!("this {kind} has no name"))
                .help(format!("write {kind} \"name\" {{ … }}")),
        );
        return None;
    };
    if let Some(problem) = invalid_name(&name, source) {
        problems.push(problem);
        return None;
    }
    if let Some(children) = node.children() {
        fields.extend(children.nodes().iter().map(|n| RawField::from_node(n, source)));
    }
    Some(RawDecl { kind, name, span: node.span(), source: source.clone(), fields })
}

/// Names are used in references (`cell.tp2.aggregate_tok_s`) and file names.
fn invalid_name(name: &Spanned<String>, source: &SourceText) -> Option<Problem> {
    let n = &name.value;
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '{' | '}');
    let valid = !n.is_empty()
        && n.chars().all(ok_char)
        && n.chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '{');
    (!valid).then(|| {
        Problem::new(source, name.span, format!("invalid name \"{n}\""))
            .label("names use letters, digits, `-` and `_`")
            .help("names appear in gate expressions such as cell.NAME.field, so they must start with a letter or digit")
    })
}

fn read_param(node: &KdlNode, source: &SourceText, loaded: &mut Loaded, problems: &mut Problems) {
    let args: Vec<_> = node.entries().iter().filter(|e| e.name().is_none()).collect();
    let default = node.entries().iter().find(|e| e.name().is_some_and(|k| k.value() == "default"));
    let (Some(name_entry), Some(value_entry)) = (args.first(), args.get(1).copied().or(default)) else {
        problems.push(
            Problem::new(source, node.span(), "a param needs a name and a default value")
                .help("write: param \"depth\" 8"),
        );
        return;
    };
    let Some(name) = name_entry.value().as_string() else {
        problems.push(Problem::new(source, name_entry.span(), "a param's name must be a string"));
        return;
    };
    if let Some(earlier) = loaded.params.iter().find(|p| p.name.value == name) {
        problems.push(
            Problem::new(source, name_entry.span(), format!("param `{name}` is declared twice")).help(
                format!(
                    "first declared at {}",
                    Problem::new(&earlier.source, earlier.name.span, "").location()
                ),
            ),
        );
        return;
    }
    loaded.params.push(ParamDecl {
        name: Spanned { value: name.to_string(), span: name_entry.span() },
        default: Spanned { value: value_entry.value().clone(), span: value_entry.span() },
        source: source.clone(),
    });
}

fn read_campaign(node: &KdlNode, source: &SourceText, loaded: &mut Loaded, problems: &mut Problems) {
    if loaded.campaign.name.is_some() {
        problems.push(Problem::new(source, node.span(), "a recipe has one campaign header"));
        return;
    }
    loaded.campaign.name = node
        .entries()
        .iter()
        .find(|e| e.name().is_none())
        .and_then(|e| e.value().as_string().map(str::to_string));
    if loaded.campaign.name.is_none() {
        problems.push(
            Problem::new(source, node.span(), "the campaign needs a name")
                .help("write: campaign \"my-campaign\" { seed 17 }"),
        );
    }
    for child in node.children().map(|d| d.nodes()).unwrap_or_default() {
        let value = child.entries().first().map(|e| e.value());
        match (child.name().value(), value) {
            ("description", Some(KdlValue::String(s))) => loaded.campaign.description = Some(s.clone()),
            ("seed", Some(KdlValue::Integer(i))) => loaded.campaign.seed = Some(*i),
            ("seed", _) => problems.push(Problem::new(source, child.span(), "seed must be an integer")),
            ("description", _) => {
                problems.push(Problem::new(source, child.span(), "description must be a string"))
            }
            (other, _) => problems.push(
                Problem::new(source, child.name().span(), format!("unknown campaign setting `{other}`"))
                    .maybe_help(
                        did_you_mean(other, ["description", "seed"])
                            .or(Some("the campaign takes: description, seed".into())),
                    ),
            ),
        }
    }
}

fn single_string<'a>(node: &'a KdlNode, source: &SourceText, problems: &mut Problems) -> Option<&'a str> {
    match node.entries() {
        [entry] if entry.name().is_none() => match entry.value().as_string() {
            Some(s) => Some(s),
            None => {
                problems.push(Problem::new(
                    source,
                    entry.span(),
                    format!("`{}` takes a string", node.name().value()),
                ));
                None
            }
        },
        _ => {
            problems.push(Problem::new(
                source,
                node.span(),
                format!("`{}` takes exactly one string", node.name().value()),
            ));
            None
        }
    }
}

/// KDL v2 spells booleans `#true`/`#false`; a bare `true` is a classic v1 habit.
fn v1_habit_hint(text: &str, span: SourceSpan) -> Option<String> {
    let start = span.offset().min(text.len());
    let rest = &text[start..];
    let word: String =
        rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect();
    let word = if word.is_empty() {
        // The span may point just before the bare word; look at the next word on the line.
        rest.split_whitespace()
            .next()
            .unwrap_or("")
            .trim_matches(|c: char| !c.is_ascii_alphanumeric())
            .to_string()
    } else {
        word
    };
    match word.as_str() {
        "true" | "false" | "null" => Some(format!(
            "KDL v2 writes booleans and null as #true, #false and #null (found bare `{word}`, a KDL v1 habit)"
        )),
        _ => None,
    }
}

fn display_path(path: &Path) -> String {
    path.display().to_string()
}

/// The name a file goes by in the loaded recipe: canonical when it can be.
pub(super) fn canonical_of(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// A file's text, named as problems will show it.
pub(super) fn source_text(path: &Path, text: String) -> SourceText {
    Arc::new(NamedSource::new(display_path(path), text).with_language("kdl"))
}
