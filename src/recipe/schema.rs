//! The shapes of fields: what a field's value must look like, whether it is
//! required and whether it enters the fingerprint. Each kind's table of
//! fields lives beside its typed declaration in `decls/`.

use super::kind::Kind;

/// The shape a field's value must have.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Int,
    Number,
    Str,
    Bool,
    /// "90s", "5m", "250ms" — normalised to milliseconds.
    Duration,
    /// One or more string-like arguments: `command "python3" "-m" "x"`.
    Strings,
    /// key=value properties: `env CUDA_HOME="/usr/local/cuda"`.
    Props,
    /// key=value properties, one object per line, collected into a list:
    /// `rule label="x" when="…"` written twice gives two rules.
    Records,
    /// A block of children turned into a JSON object: `sim { decode-step-ms 12 }`.
    Block,
    /// One value, then key=value properties and optional child lines:
    /// `trace "t.jsonl" format="mooncake"`, `sessions 8 turns=3 { turn "Hi" }`.
    /// Becomes an object: `value`, each property, and each child name's values as a list.
    Headed,
    /// One of a fixed set of words.
    OneOf(&'static [&'static str]),
    /// The name of another declaration of this kind.
    Ref(Kind),
    /// Names of other steps (any kind).
    StepRefs,
}

impl Shape {
    pub fn describe(self) -> String {
        match self {
            Shape::Int => "an integer".into(),
            Shape::Number => "a number".into(),
            Shape::Str => "a string".into(),
            Shape::Bool => "#true or #false".into(),
            Shape::Duration => "a duration such as \"90s\", \"5m\" or \"250ms\"".into(),
            Shape::Strings => "one or more strings".into(),
            Shape::Props => "key=value properties".into(),
            Shape::Records => "key=value properties".into(),
            Shape::Block => "a { … } block".into(),
            Shape::Headed => "a value followed by key=value properties".into(),
            Shape::OneOf(words) => {
                format!("one of {}", words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(", "))
            }
            Shape::Ref(kind) => format!("the name of a {kind}"),
            Shape::StepRefs => "names of other steps".into(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct FieldSpec {
    pub name: &'static str,
    pub shape: Shape,
    pub required: bool,
    /// Whether the field can change a result (descriptions cannot).
    pub hashed: bool,
    /// Repeated fields (and fields inherited through `extends`) add up instead of replacing.
    pub accumulates: bool,
}

pub(super) const fn field(name: &'static str, shape: Shape) -> FieldSpec {
    FieldSpec { name, shape, required: false, hashed: true, accumulates: false }
}

/// References are not hashed by name: the referenced step's fingerprint
/// (upstream) identifies it, so renaming a server does not invalidate its cells.
pub(super) const fn required(name: &'static str, shape: Shape) -> FieldSpec {
    let hashed = !matches!(shape, Shape::Ref(_));
    FieldSpec { name, shape, required: true, hashed, accumulates: false }
}

pub(super) const fn many(name: &'static str, shape: Shape) -> FieldSpec {
    FieldSpec { name, shape, required: false, hashed: true, accumulates: true }
}

pub(super) const fn note(name: &'static str) -> FieldSpec {
    FieldSpec { name, shape: Shape::Str, required: false, hashed: false, accumulates: false }
}

/// Fields that shape the declaration itself rather than its settings.
pub const STRUCTURAL: &[&str] = &["extends", "abstract", "sweep"];

pub fn fields_of(kind: Kind) -> &'static [FieldSpec] {
    super::decls::fields_of(kind)
}

pub fn field_of(kind: Kind, name: &str) -> Option<FieldSpec> {
    fields_of(kind).iter().find(|f| f.name == name).copied()
}
