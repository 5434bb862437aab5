//! A declaration's settings by name, as the loader checked them, and the
//! draft a typed declaration is built from. A leaf: the typed declarations
//! (`decls/`) and the finished [`Decl`](super::decl::Decl) both read it,
//! and it reads neither.

use std::collections::BTreeMap;

use miette::SourceSpan;
use serde_json::Value;

use super::problem::{Problem, SourceText};
use crate::step_kind::Kind;

/// One resolved setting and where it was written.
#[derive(Debug, Clone)]
pub struct Setting {
    pub value: Value,
    pub span: SourceSpan,
    pub source: SourceText,
    /// Whether it enters the fingerprint (descriptions don't).
    pub hashed: bool,
}

/// The settings of one declaration by name, as the loader checked them.
/// Only the recipe layer reads them by name: everything downstream reads
/// the typed [`Spec`](super::decls::Spec).
#[derive(Debug, Clone, Default)]
pub struct Settings(pub(super) SettingMap);

/// Settings by name, in name order: a sorted list rather than a `BTreeMap`,
/// whose every node has room for eleven entries when most declarations set
/// two or three (a plan of 100,000 steps spent 100 MB on empty slots).
#[derive(Debug, Clone, Default)]
pub struct SettingMap(Vec<(String, Setting)>);

impl SettingMap {
    fn position(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&Setting> {
        self.position(key).ok().map(|i| &self.0[i].1)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Setting> {
        self.position(key).ok().map(|i| &mut self.0[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Sets `key`, replacing a setting of that name.
    pub fn insert(&mut self, key: String, setting: Setting) {
        match self.position(&key) {
            Ok(i) => self.0[i].1 = setting,
            Err(i) => self.0.insert(i, (key, setting)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Setting)> {
        self.0.iter().map(|(k, s)| (k, s))
    }
}

impl<'a> IntoIterator for &'a SettingMap {
    type Item = (&'a String, &'a Setting);
    type IntoIter =
        std::iter::Map<std::slice::Iter<'a, (String, Setting)>, fn(&'a (String, Setting)) -> Self::Item>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, s)| (k, s))
    }
}

impl Settings {
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).map(|s| &s.value)
    }

    pub(super) fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    pub(super) fn string(&self, key: &str) -> Option<String> {
        self.str(key).map(str::to_string)
    }

    pub(super) fn u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    pub(super) fn f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    pub(super) fn bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }

    /// Durations are stored in milliseconds by the loader.
    pub(super) fn duration(&self, key: &str) -> Option<std::time::Duration> {
        self.u64(key).map(std::time::Duration::from_millis)
    }

    pub(super) fn strings(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(Value::Array(items)) => {
                items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
            }
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    }

    /// key=value settings (`identity`, `ready`, …).
    pub(super) fn props(&self, key: &str) -> BTreeMap<String, Value> {
        match self.get(key) {
            Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            _ => BTreeMap::new(),
        }
    }

    /// key=value settings whose values are text (`env`): numbers are written out.
    pub(super) fn text_props(&self, key: &str) -> BTreeMap<String, String> {
        self.props(key).into_iter().map(|(k, v)| (k, text_of(&v))).collect()
    }

    pub(super) fn setting(&self, key: &str) -> Option<&Setting> {
        self.0.get(key)
    }

    pub(super) fn contains(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }
}

/// A JSON scalar as the text a command line or environment would carry.
pub(super) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A declaration before its typed form is built (workloads taken in,
/// engines defaulted).
#[derive(Debug, Clone)]
pub(super) struct Draft {
    pub kind: Kind,
    pub name: String,
    pub source: SourceText,
    pub span: SourceSpan,
    pub name_span: SourceSpan,
    pub settings: Settings,
    /// Settings a cell took in from its workload (the workload reports their problems).
    pub from_workload: Vec<String>,
}

impl Draft {
    /// `kind `name``, the way messages name a declaration.
    pub fn what(&self) -> String {
        format!("{} `{}`", self.kind, self.name)
    }

    /// A problem pointing at a setting (or at the declaration when unset).
    pub fn problem_at(&self, key: &str, message: impl Into<String>) -> Problem {
        match self.settings.setting(key) {
            Some(setting) => Problem::new(&setting.source, setting.span, message),
            None => Problem::new(&self.source, self.name_span, message),
        }
    }
}

/// A setting that is unset reads as `default`.
pub(super) fn or<T>(value: Option<T>, default: T) -> T {
    value.unwrap_or(default)
}

/// Declares a typed declaration and its settings, each setting once: its
/// entry in the kind's field table (`FIELDS`, which the loader checks and
/// the docs test lists), its name (`key::NAME`), its struct field and its
/// parse (`from_settings`). A misspelled key is an unknown identifier, and
/// a field whose type does not fit its shape does not compile.
///
/// ```text
/// settings! {
///     /// Docs of the struct.
///     #[derive(Debug, Clone)]
///     pub struct LoadDecl {
///         /// A setting read into its field (`Option<u64>`: unset is `None`).
///         pub context_tokens: Option<u64> = "context-tokens" as Int,
///         /// `or`: the value when unset.
///         pub prefix_tokens: u64 = "prefix-tokens" as Int or 0,
///         /// `Word(T)`: one of `T::WORDS`, read with `T::from_word`.
///         pub api: Api = "api" as Word(Api) or Api::Chat,
///         /// A setting parsed by hand: a field-table entry and `key::rate`, no field.
///         key rate = "rate" as Number,
///         /// A field built by hand (in the `LoadRest` below).
///         pub arrival: Arrival,
///     }
///     /// The fields `build` makes by hand.
///     struct LoadRest;
/// }
/// ```
///
/// Flags before the name set the entry's kind: `required`, `many` (repeats
/// add up), `unhashed` (it cannot change a result). The shape is a
/// [`Shape`](super::schema::Shape) variant, `Word(T)`, or `TextProps`
/// (props whose values are text). Entries are written in the order the
/// loader lists the kind's settings.
macro_rules! settings {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $($body:tt)* }
        $($(#[$rmeta:meta])* struct $rest:ident;)?
    ) => {
        $crate::recipe::settings::settings! {
            @entry [$(#[$meta])* $name] [$($(#[$rmeta])* $rest)?] [] [] [] [] [] $($body)*
        }
    };

    // A setting parsed by hand: its table entry and its name.
    (
        @entry $head:tt $rest:tt [$($fields:tt)*] [$($specs:tt)*] [$($keys:tt)*] [$($reads:tt)*] [$($hand:tt)*]
        $(#[$m:meta])* key $key:ident = $($flag:ident)* $name:literal as $shape:ident $(($($arg:tt)*))? ,
        $($body:tt)*
    ) => {
        $crate::recipe::settings::settings! {
            @entry $head $rest [$($fields)*]
            [$($specs)* $crate::recipe::settings::settings!(@spec $name $shape $(($($arg)*))? $($flag)*),]
            [$($keys)* $(#[$m])* pub const $key: &str = $name;]
            [$($reads)*] [$($hand)*] $($body)*
        }
    };

    // A setting read into its field.
    (
        @entry $head:tt $rest:tt [$($fields:tt)*] [$($specs:tt)*] [$($keys:tt)*] [$($reads:tt)*] [$($hand:tt)*]
        $(#[$m:meta])* $vis:vis $field:ident : $ty:ty =
            $($flag:ident)* $name:literal as $shape:ident $(($($arg:tt)*))? $(or $default:expr)? ,
        $($body:tt)*
    ) => {
        $crate::recipe::settings::settings! {
            @entry $head $rest [$($fields)* $(#[$m])* $vis $field: $ty,]
            [$($specs)* $crate::recipe::settings::settings!(@spec $name $shape $(($($arg)*))? $($flag)*),]
            [$($keys)* $(#[$m])* pub const $field: &str = $name;]
            [$($reads)* $field ($name $shape $(($($arg)*))? $(or $default)?)]
            [$($hand)*] $($body)*
        }
    };

    // A field built by hand.
    (
        @entry $head:tt $rest:tt [$($fields:tt)*] [$($specs:tt)*] [$($keys:tt)*] [$($reads:tt)*] [$($hand:tt)*]
        $(#[$m:meta])* $vis:vis $field:ident : $ty:ty ,
        $($body:tt)*
    ) => {
        $crate::recipe::settings::settings! {
            @entry $head $rest [$($fields)* $(#[$m])* $vis $field: $ty,] [$($specs)*] [$($keys)*]
            [$($reads)*] [$($hand)* $field: $ty,] $($body)*
        }
    };

    // Every entry read, with fields built by hand: they come in `$rest`.
    (
        @entry [$(#[$meta:meta])* $name:ident] [$(#[$rmeta:meta])* $rest:ident]
        $fields:tt $specs:tt $keys:tt [$($field:ident $read:tt)*] [$($hand:ident : $hty:ty,)*]
    ) => {
        $crate::recipe::settings::settings!(@items [$(#[$meta])* $name] $fields $specs $keys);

        $(#[$rmeta])*
        struct $rest { $($hand: $hty,)* }

        impl $name {
            /// The typed declaration: each setting read into its field, the
            /// rest as built by hand.
            fn from_settings(s: &$crate::recipe::settings::Settings, rest: $rest) -> $name {
                let $rest { $($hand),* } = rest;
                $name { $($field: $crate::recipe::settings::settings!(@read s $read),)* $($hand,)* }
            }
        }
    };

    // Every entry read, each a setting.
    (
        @entry [$(#[$meta:meta])* $name:ident] [] $fields:tt $specs:tt $keys:tt [$($field:ident $read:tt)*] []
    ) => {
        $crate::recipe::settings::settings!(@items [$(#[$meta])* $name] $fields $specs $keys);

        impl $name {
            /// The typed declaration: each setting read into its field.
            fn from_settings(s: &$crate::recipe::settings::Settings) -> $name {
                $name { $($field: $crate::recipe::settings::settings!(@read s $read),)* }
            }
        }
    };

    // The struct, the table and the names.
    (@items [$(#[$meta:meta])* $name:ident] [$($fields:tt)*] [$($specs:tt)*] [$($keys:tt)*]) => {
        $(#[$meta])*
        pub struct $name { $($fields)* }

        /// The settings this kind accepts, in the order messages list them.
        pub const FIELDS: &[$crate::recipe::schema::FieldSpec] = &[$($specs)*];

        /// Each setting's name, for the parts of the build written by hand.
        #[allow(non_upper_case_globals, dead_code)]
        pub mod key { $($keys)* }
    };

    (@spec $name:literal $shape:ident $(($($arg:tt)*))? $($flag:ident)*) => {
        $crate::recipe::schema::FieldSpec::new($name, $crate::recipe::settings::settings!(@shape $shape $(($($arg)*))?))
            $(.$flag())*
    };

    (@shape TextProps) => { $crate::recipe::schema::Shape::Props };
    (@shape Word($word:ty)) => { $crate::recipe::schema::Shape::OneOf(<$word>::WORDS) };
    (@shape $shape:ident) => { $crate::recipe::schema::Shape::$shape };
    (@shape $shape:ident ($($arg:tt)*)) => { $crate::recipe::schema::Shape::$shape($($arg)*) };

    (@read $s:ident ($name:literal $shape:ident $(($($arg:tt)*))? or $default:expr)) => {
        $crate::recipe::settings::or($crate::recipe::settings::settings!(@read $s ($name $shape $(($($arg)*))?)), $default)
    };
    (@read $s:ident ($name:literal Int)) => { $s.u64($name) };
    (@read $s:ident ($name:literal Number)) => { $s.f64($name) };
    (@read $s:ident ($name:literal Bool)) => { $s.bool($name) };
    (@read $s:ident ($name:literal Str)) => { $s.string($name) };
    (@read $s:ident ($name:literal Duration)) => { $s.duration($name) };
    (@read $s:ident ($name:literal Strings)) => { $s.strings($name) };
    (@read $s:ident ($name:literal StepRefs)) => { $s.strings($name) };
    (@read $s:ident ($name:literal Props)) => { $s.props($name) };
    (@read $s:ident ($name:literal TextProps)) => { $s.text_props($name) };
    (@read $s:ident ($name:literal Block)) => { $s.get($name).cloned() };
    (@read $s:ident ($name:literal Ref($($kind:tt)*))) => { $s.string($name) };
    (@read $s:ident ($name:literal Word($word:ty))) => { $s.str($name).and_then(<$word>::from_word) };
}
pub(super) use settings;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use miette::NamedSource;
    use serde_json::{Value, json};

    use super::{Setting, SettingMap, Settings};
    use crate::recipe::schema::Shape;
    use crate::step_kind::Kind;
    use crate::words::Api;

    settings! {
        /// One of each kind of entry.
        #[derive(Debug)]
        pub struct Example {
            pub count: Option<u64> = "count" as Int,
            pub floor: u64 = "floor" as Int or 7,
            pub api: Api = "api" as Word(Api) or Api::Chat,
            pub server: String = required "server" as Ref(Kind::Server) or String::new(),
            pub env: BTreeMap<String, String> = many "env" as TextProps,
            pub label: Option<String> = unhashed "label" as Str,
            /// Parsed by hand.
            key rate = required many "rate" as Number,
            pub doubled: Option<f64>,
        }
        struct ExampleRest;
    }

    fn settings_of(value: Value) -> Settings {
        let source = Arc::new(NamedSource::new("t.kdl", String::new()));
        let mut map = SettingMap::default();
        for (key, value) in value.as_object().expect("an object") {
            let setting =
                Setting { value: value.clone(), span: (0, 0).into(), source: source.clone(), hashed: true };
            map.insert(key.clone(), setting);
        }
        Settings(map)
    }

    fn example(value: Value) -> Example {
        let s = settings_of(value);
        let doubled = s.f64(key::rate).map(|r| r * 2.0);
        Example::from_settings(&s, ExampleRest { doubled })
    }

    #[test]
    fn one_declaration_gives_the_table_in_order_with_its_flags() {
        let table: Vec<(&str, Shape, bool, bool, bool)> =
            FIELDS.iter().map(|f| (f.name, f.shape, f.required, f.hashed, f.accumulates)).collect();
        assert_eq!(
            table,
            [
                ("count", Shape::Int, false, true, false),
                ("floor", Shape::Int, false, true, false),
                ("api", Shape::OneOf(Api::WORDS), false, true, false),
                // A reference is not hashed by name.
                ("server", Shape::Ref(Kind::Server), true, false, false),
                ("env", Shape::Props, false, true, true),
                ("label", Shape::Str, false, false, false),
                ("rate", Shape::Number, true, true, true),
            ]
        );
        assert_eq!((key::count, key::api, key::rate), ("count", "api", "rate"));
    }

    #[test]
    fn unset_settings_read_as_none_or_their_default() {
        let e = example(json!({}));
        assert_eq!((e.count, e.floor, e.api, e.server.as_str()), (None, 7, Api::Chat, ""));
        assert!(e.env.is_empty() && e.label.is_none() && e.doubled.is_none());
    }

    #[test]
    fn set_settings_read_into_their_fields_and_the_rest_comes_by_hand() {
        let e = example(json!({
            "count": 3, "floor": 1, "api": "responses", "server": "sim",
            "env": {"A": "x", "N": 2}, "label": "l", "rate": 1.5
        }));
        assert_eq!((e.count, e.floor, e.api, e.server.as_str()), (Some(3), 1, Api::Responses, "sim"));
        assert_eq!(e.env, BTreeMap::from([("A".to_string(), "x".to_string()), ("N".into(), "2".into())]));
        assert_eq!((e.label.as_deref(), e.doubled), (Some("l"), Some(3.0)));
    }
}
