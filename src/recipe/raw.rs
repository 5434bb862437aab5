//! The recipe as written, before extends, sweeps and placeholders are
//! resolved: KDL values with the spans they came from.

use kdl::{KdlNode, KdlValue};
use miette::SourceSpan;

use super::problem::SourceText;
use crate::step_kind::Kind;

/// A value and where it was written.
#[derive(Debug, Clone)]
pub struct Spanned<T> {
    pub value: T,
    pub span: SourceSpan,
}

/// One setting line inside a declaration (`args "--tp" "2"`), or a property
/// on the declaration line itself (`server="tp2"`).
#[derive(Debug, Clone)]
pub struct RawField {
    pub name: Spanned<String>,
    pub args: Vec<Spanned<KdlValue>>,
    pub props: Vec<(Spanned<String>, Spanned<KdlValue>)>,
    pub children: Vec<RawField>,
    pub span: SourceSpan,
    pub source: SourceText,
}

/// A top-level declaration: `server "sglang" { … }`.
#[derive(Debug, Clone)]
pub struct RawDecl {
    pub kind: Kind,
    pub name: Spanned<String>,
    pub span: SourceSpan,
    pub source: SourceText,
    pub fields: Vec<RawField>,
}

impl RawDecl {
    pub fn field(&self, name: &str) -> Option<&RawField> {
        self.fields.iter().find(|f| f.name.value == name)
    }

    pub fn fields_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a RawField> + 'a {
        self.fields.iter().filter(move |f| f.name.value == name)
    }
}

impl RawField {
    /// A child line of a declaration, with its own children.
    pub fn from_node(node: &KdlNode, source: &SourceText) -> RawField {
        let mut args = Vec::new();
        let mut props = Vec::new();
        for entry in node.entries() {
            let value = Spanned { value: entry.value().clone(), span: entry.span() };
            match entry.name() {
                Some(key) => {
                    props.push((Spanned { value: key.value().to_string(), span: key.span() }, value))
                }
                None => args.push(value),
            }
        }
        let children = node
            .children()
            .map(|doc| doc.nodes().iter().map(|n| RawField::from_node(n, source)).collect())
            .unwrap_or_default();
        RawField {
            name: Spanned { value: node.name().value().to_string(), span: node.name().span() },
            args,
            props,
            children,
            span: node.span(),
            source: source.clone(),
        }
    }

    /// A property on a declaration line, seen as a one-argument field.
    pub fn from_prop(key: Spanned<String>, value: Spanned<KdlValue>, source: &SourceText) -> RawField {
        let span = SourceSpan::new(
            key.span.offset().into(),
            value.span.offset() + value.span.len() - key.span.offset(),
        );
        RawField {
            name: key,
            args: vec![value],
            props: Vec::new(),
            children: Vec::new(),
            span,
            source: source.clone(),
        }
    }

    /// Apply `f` to every value in this field and its children.
    pub fn map_values(&mut self, f: &mut dyn FnMut(&mut Spanned<KdlValue>, &SourceText)) {
        for arg in &mut self.args {
            f(arg, &self.source);
        }
        for (_, value) in &mut self.props {
            f(value, &self.source);
        }
        for child in &mut self.children {
            child.map_values(f);
        }
    }
}

/// Short, human text of a KDL value for messages.
pub fn describe_value(value: &KdlValue) -> String {
    match value {
        KdlValue::String(s) => format!("the string \"{s}\""),
        KdlValue::Integer(i) => format!("the integer {i}"),
        KdlValue::Float(x) => format!("the number {x}"),
        KdlValue::Bool(b) => format!("#{b}"),
        KdlValue::Null => "#null".to_string(),
    }
}
