//! Recipe problems: every error a recipe can have, rendered by miette with
//! the file, line, column and a labelled span.

use std::fmt;
use std::sync::Arc;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceSpan};

/// The text of one recipe file, shared by every problem that points into it.
pub type SourceText = Arc<NamedSource<String>>;

/// One thing wrong with a recipe, pointing at where it is.
#[derive(Debug, Clone)]
pub struct Problem {
    pub source: SourceText,
    pub span: SourceSpan,
    pub message: String,
    pub label: String,
    pub help: Option<String>,
}

impl Problem {
    pub fn new(source: &SourceText, span: SourceSpan, message: impl Into<String>) -> Problem {
        Problem {
            source: source.clone(),
            span,
            message: message.into(),
            label: "here".to_string(),
            help: None,
        }
    }

    pub fn label(mut self, label: impl Into<String>) -> Problem {
        self.label = label.into();
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Problem {
        self.help = Some(help.into());
        self
    }

    pub fn maybe_help(mut self, help: Option<String>) -> Problem {
        self.help = help.or(self.help);
        self
    }

    /// "file:line:col" of the problem's start, for one-line summaries and tests.
    pub fn location(&self) -> String {
        let text = self.source.inner();
        let offset = self.span.offset().min(text.len());
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rfind('\n').map_or(offset, |nl| offset - nl - 1) + 1;
        format!("{}:{}:{}", self.source.name(), line, column)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Problem {}

impl Diagnostic for Problem {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new("anvil::recipe"))
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(Some(self.label.clone()), self.span))))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
}

/// All problems found in one pass over a recipe (and its includes).
#[derive(Debug)]
pub struct RecipeError {
    pub recipe: String,
    pub problems: Vec<Problem>,
}

impl fmt::Display for RecipeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        write!(f, "recipe {} has {} problem{}", self.recipe, n, if n == 1 { "" } else { "s" })
    }
}

impl std::error::Error for RecipeError {}

impl Diagnostic for RecipeError {
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        Some(Box::new(self.problems.iter().map(|p| p as &dyn Diagnostic)))
    }
}

/// Collects problems while loading continues, so a user sees all of them at once.
#[derive(Debug, Default)]
pub struct Problems {
    list: Vec<Problem>,
}

impl Problems {
    pub fn push(&mut self, problem: Problem) {
        self.list.push(problem);
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Forget the problems after the first `len`.
    pub fn truncate(&mut self, len: usize) {
        self.list.truncate(len);
    }

    pub fn into_result<T>(self, recipe: &str, value: T) -> Result<T, RecipeError> {
        if self.list.is_empty() {
            Ok(value)
        } else {
            Err(RecipeError { recipe: recipe.to_string(), problems: self.list })
        }
    }
}

pub use crate::did_you_mean::did_you_mean;
