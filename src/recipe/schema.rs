//! What each kind of declaration may contain: field names, value shapes,
//! whether a field is required and whether it enters the fingerprint.

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

const fn field(name: &'static str, shape: Shape) -> FieldSpec {
    FieldSpec { name, shape, required: false, hashed: true, accumulates: false }
}

/// References are not hashed by name: the referenced step's fingerprint
/// (upstream) identifies it, so renaming a server does not invalidate its cells.
const fn required(name: &'static str, shape: Shape) -> FieldSpec {
    let hashed = !matches!(shape, Shape::Ref(_));
    FieldSpec { name, shape, required: true, hashed, accumulates: false }
}

const fn many(name: &'static str, shape: Shape) -> FieldSpec {
    FieldSpec { name, shape, required: false, hashed: true, accumulates: true }
}

const fn note(name: &'static str) -> FieldSpec {
    FieldSpec { name, shape: Shape::Str, required: false, hashed: false, accumulates: false }
}

/// Fields every step may carry.
const COMMON: &[FieldSpec] = &[note("description"), many("after", Shape::StepRefs)];

const ENGINES: &[&str] = &["command", "sim", "external"];
const THINKING: &[&str] = &["default", "on", "off"];

const SERVER: &[FieldSpec] = &[
    field("engine", Shape::OneOf(ENGINES)),
    field("command", Shape::Strings),
    many("args", Shape::Strings),
    many("env", Shape::Props),
    field("cwd", Shape::Str),
    field("model", Shape::Str),
    many("identity", Shape::Props),
    field("gpus", Shape::Int),
    note("gpu-label"),
    field("replicas", Shape::Int),
    field("port", Shape::Int),
    field("ready", Shape::Props),
    field("grace", Shape::Duration),
    many("sim", Shape::Block),
    field("url", Shape::Str),
    note("api-key-env"),
    many("reads", Shape::Strings),
    field("version-args", Shape::Strings),
    many("warmup", Shape::Props),
];

/// Workload settings; a cell may override any of them.
const WORKLOAD: &[FieldSpec] = &[
    field("api", Shape::OneOf(&["chat", "completions", "responses"])),
    field("context-tokens", Shape::Int),
    field("concurrency", Shape::Int),
    field("requests", Shape::Int),
    field("warmup-requests", Shape::Int),
    field("response-words", Shape::Int),
    field("max-tokens", Shape::Int),
    field("prompt-cache", Shape::OneOf(&["unique", "shared-prefix"])),
    field("prefix-tokens", Shape::Int),
    field("canaries", Shape::Bool),
    field("thinking", Shape::OneOf(THINKING)),
    field("temperature", Shape::Number),
    field("top-p", Shape::Number),
    field("sampling-seed", Shape::Int),
    field("output-policy", Shape::OneOf(&["observe", "strict"])),
    field("timeout", Shape::Duration),
    field("arrival", Shape::OneOf(&["closed", "poisson", "constant"])),
    field("rate", Shape::Number),
    field("repeat", Shape::Int),
    field("slo", Shape::Props),
    many("extra-body", Shape::Block),
    field("balance", Shape::OneOf(&["round-robin", "least-outstanding"])),
];

const CELL: &[FieldSpec] =
    &[required("server", Shape::Ref(Kind::Server)), field("workload", Shape::Ref(Kind::Workload))];

const CHECK: &[FieldSpec] = &[
    required("server", Shape::Ref(Kind::Server)),
    required("type", Shape::OneOf(&["smoke", "json-schema", "tool-call", "responses", "canary-isolation"])),
    field("prompt", Shape::Str),
    field("schema", Shape::Block),
    field("tool", Shape::Block),
    field("requests", Shape::Int),
    field("concurrency", Shape::Int),
    field("max-tokens", Shape::Int),
    field("thinking", Shape::OneOf(THINKING)),
    field("timeout", Shape::Duration),
    field("shared-prefix-tokens", Shape::Int),
    FieldSpec { name: "blocking", shape: Shape::Bool, required: false, hashed: false, accumulates: false },
];

const GATE: &[FieldSpec] = &[
    FieldSpec { name: "require", shape: Shape::Strings, required: true, hashed: true, accumulates: true },
    // A non-blocking verdict is recorded (and read by decisions) without failing the run.
    FieldSpec { name: "blocking", shape: Shape::Bool, required: false, hashed: false, accumulates: false },
];

const TASK: &[FieldSpec] = &[
    required("run", Shape::Strings),
    field("cwd", Shape::Str),
    many("env", Shape::Props),
    many("reads", Shape::Strings),
    many("outputs", Shape::Strings),
    field("timeout", Shape::Duration),
];

const SCREEN: &[FieldSpec] = &[
    required("over", Shape::Str),
    required("metric", Shape::Str),
    field("goal", Shape::OneOf(&["maximize", "minimize"])),
    field("min-delta-pct", Shape::Number),
];

const DECISION: &[FieldSpec] = &[
    many("rule", Shape::Records),
    field("promote-when", Shape::Str),
    many("headline", Shape::Strings),
    many("limitation", Shape::Strings),
    many("control", Shape::Strings),
    many("identity", Shape::Props),
];

/// Fields that shape the declaration itself rather than its settings.
pub const STRUCTURAL: &[&str] = &["extends", "abstract", "sweep"];

pub fn fields_of(kind: Kind) -> Vec<FieldSpec> {
    let own: &[&[FieldSpec]] = match kind {
        Kind::Server => &[SERVER],
        Kind::Workload => &[WORKLOAD, &[note("description")]],
        Kind::Cell => &[CELL, WORKLOAD],
        Kind::Check => &[CHECK],
        Kind::Gate => &[GATE],
        Kind::Task => &[TASK],
        Kind::Finally => &[TASK, &[field("always", Shape::Bool)]],
        Kind::Screen => &[SCREEN],
        Kind::Decision => &[DECISION],
    };
    let mut all: Vec<FieldSpec> = own.iter().flat_map(|f| f.iter().copied()).collect();
    if kind.is_step() {
        all.extend(COMMON.iter().copied());
    }
    all
}

pub fn field_of(kind: Kind, name: &str) -> Option<FieldSpec> {
    fields_of(kind).into_iter().find(|f| f.name == name)
}
