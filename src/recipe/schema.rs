//! The shapes of fields: what a field's value must look like, whether it is
//! required and whether it enters the fingerprint. Each kind's table of
//! fields lives beside its typed declaration in `decls/`.

use std::time::Duration;

use crate::step_kind::Kind;

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
    /// One or more strings, then key=value properties:
    /// `until "ttft_p99_ms" "e2e_p50_ms" within="5%"`. Becomes an object:
    /// `values` (the strings) and each property.
    StringsWithProps,
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
            Shape::StringsWithProps => "one or more strings followed by key=value properties".into(),
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

impl FieldSpec {
    /// An optional field, set once, that enters the fingerprint.
    pub const fn new(name: &'static str, shape: Shape) -> FieldSpec {
        FieldSpec { name, shape, required: false, hashed: true, accumulates: false }
    }

    /// The declaration needs it. References are not hashed by name: the
    /// referenced step's fingerprint (upstream) identifies it, so renaming a
    /// server does not invalidate its cells.
    pub const fn required(self) -> FieldSpec {
        let hashed = self.hashed && !matches!(self.shape, Shape::Ref(_));
        FieldSpec { required: true, hashed, ..self }
    }

    /// Written twice (or inherited through `extends`), its values add up.
    pub const fn many(self) -> FieldSpec {
        FieldSpec { accumulates: true, ..self }
    }

    /// It cannot change a result (a description, how a server is reached).
    pub const fn unhashed(self) -> FieldSpec {
        FieldSpec { hashed: false, ..self }
    }
}

/// Fields that shape the declaration itself rather than its settings.
pub const STRUCTURAL: &[&str] = &["extends", "abstract", "sweep"];

/// A duration written in a way [`parse_duration`] does not read.
#[derive(Debug, Clone, thiserror::Error)]
#[error("bad duration \"{text}\": {source} (write e.g. \"90s\", \"5m\", \"250ms\")")]
pub struct DurationError {
    /// The text as written.
    pub text: String,
    #[source]
    pub source: humantime::DurationError,
}

/// "90s", "5m", "1h30m", "250ms" → a duration; plain numbers are refused so
/// that units are never guessed.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    humantime::parse_duration(text.trim()).map_err(|source| DurationError { text: text.to_string(), source })
}
