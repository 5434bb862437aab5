//! An expression a step evaluates (a gate's `require`, a screen's
//! `over`.`metric`, a decision's `when=`), parsed once at load and kept with
//! the place it was written so later errors can point at it.

use miette::SourceSpan;

use super::problem::{Problem, SourceText};
use super::settings::Setting;

#[derive(Debug, Clone)]
pub struct Expression {
    /// As written (after placeholders).
    pub text: String,
    pub parsed: anvil_expr::Expr,
    pub source: SourceText,
    pub span: SourceSpan,
}

impl Expression {
    /// Parse `text`, written inside `setting` (whose span may cover more than
    /// the text: a whole `rule` line). Parse errors point into the recipe.
    pub(super) fn parse(
        text: &str,
        setting: &Setting,
        decl: (&SourceText, SourceSpan),
        what: &str,
    ) -> Result<Expression, Problem> {
        let (source, within) = (setting.source.clone(), setting.span);
        // A rule line's span covers only the first `rule`: look in the whole
        // declaration too, when it is in the same file.
        let decl_span = std::sync::Arc::ptr_eq(&source, decl.0).then_some(decl.1);
        let located = locate(&source, within, decl_span, text);
        match anvil_expr::parse(text) {
            Ok(parsed) => {
                Ok(Expression { text: text.to_string(), parsed, source, span: located.unwrap_or(within) })
            }
            Err(err) => {
                let (offset, len) = err.span;
                let at = match located {
                    Some(found) => SourceSpan::from((found.offset() + offset, len.max(1))),
                    None => within,
                };
                Err(Problem::new(&source, at, format!("in {what}: {}", err.message))
                    .label("here")
                    .maybe_help(err.help.clone()))
            }
        }
    }

    /// A problem about this expression, pointing at it.
    pub fn problem(&self, message: impl Into<String>) -> Problem {
        Problem::new(&self.source, self.span, message)
    }

    /// Params (`param.x`) the expression reads.
    pub fn params(&self) -> impl Iterator<Item = String> + '_ {
        self.parsed.references().into_iter().filter(|r| r.kind == "param").map(|r| r.name)
    }
}

/// Find the expression's text inside the setting's span, else inside the
/// whole declaration (escapes aside, it is written verbatim).
fn locate(
    source: &SourceText,
    within: SourceSpan,
    decl: Option<SourceSpan>,
    text: &str,
) -> Option<SourceSpan> {
    let whole = source.inner();
    for span in std::iter::once(within).chain(decl) {
        let start = span.offset();
        let end = (start + span.len()).min(whole.len());
        if let Some(found) = whole.get(start..end).and_then(|written| written.find(text)) {
            return Some(SourceSpan::from((start + found, text.len())));
        }
    }
    None
}
