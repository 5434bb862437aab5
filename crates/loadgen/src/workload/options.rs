//! Request options: a cell's settings that the load generator reads as
//! written, most of them sent in every request body (sampling, penalties).
//! Each is declared once, below, and that one line gives its recipe setting
//! (the recipe's field table reads [`REQUEST_OPTIONS`]), its typed field in
//! the resolved cell, and, with `=> "field"`, the body field it is sent as
//! and its entry in the artifact's `sampling` record; one without a body
//! field is read where its behaviour is (`spec.options.NAME`). Unset options
//! are not sent and not written into the resolved cell, so declaring a new
//! one changes no existing cell.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The value a request option holds, as the recipe writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    Int,
    Number,
    Bool,
    Str,
}

/// One declared request option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestOption {
    /// The recipe setting (`top-p`).
    pub setting: &'static str,
    pub kind: OptionKind,
    /// The request body's field it is sent as (`top_p`), if any.
    pub body_field: Option<&'static str>,
}

/// Declares the request options: `field: Type = "setting" as Kind => "body_field"`
/// (without `=> …`: not sent, read by the load generator itself).
macro_rules! request_options {
    ($($(#[$doc:meta])* $field:ident : $ty:ty = $setting:literal as $kind:ident $(=> $body:literal)?,)*) => {
        /// The request options a cell sets (unset: `None`, not sent).
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct RequestOptions {
            $($(#[$doc])* #[serde(skip_serializing_if = "Option::is_none")] pub $field: Option<$ty>,)*
        }

        /// Each option's recipe setting, by its field's name (a misspelled
        /// one does not compile).
        #[allow(non_upper_case_globals)]
        pub mod option_setting {
            $(pub const $field: &str = $setting;)*
        }

        /// Every request option, in the order the docs list them.
        pub const REQUEST_OPTIONS: &[RequestOption] = &[
            $(RequestOption { setting: $setting, kind: OptionKind::$kind, body_field: request_options!(@body $($body)?) },)*
        ];

        impl RequestOptions {
            /// The options as a recipe set them: `setting` gives a setting's
            /// checked value by its name (a value of the wrong type reads
            /// as unset; the recipe's loader has refused it already).
            pub fn from_settings<'a>(setting: impl Fn(&str) -> Option<&'a Value>) -> RequestOptions {
                RequestOptions {
                    $($field: setting($setting).and_then(|v| serde_json::from_value(v.clone()).ok()),)*
                }
            }

            /// Each set option as its body field and value, in declaration order.
            pub fn body_fields(&self) -> Vec<(&'static str, Value)> {
                let mut set = Vec::new();
                $(if let (Some(value), Some(field)) = (&self.$field, request_options!(@body $($body)?)) {
                    set.push((field, serde_json::json!(value)));
                })*
                set
            }
        }
    };
    (@body $body:literal) => { Some($body) };
    (@body) => { None };
}

request_options! {
    /// Sampling temperature.
    temperature: f64 = "temperature" as Number => "temperature",
    /// Nucleus sampling.
    top_p: f64 = "top-p" as Number => "top_p",
    /// The request's sampling seed.
    sampling_seed: u64 = "sampling-seed" as Int => "seed",
    /// OpenAI's presence penalty (vLLM, SGLang and llama.cpp read it).
    presence_penalty: f64 = "presence-penalty" as Number => "presence_penalty",
    /// Stop an open loop that is clearly past capacity (`observe::saturation`).
    stop_when_saturated: bool = "stop-when-saturated" as Bool,
    /// Keep an open loop's load on around its measured requests (`run::Margins`).
    steady_load: bool = "steady-load" as Bool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A value of each kind, for setting every option at once.
    fn example(kind: OptionKind) -> Value {
        match kind {
            OptionKind::Int => json!(7),
            OptionKind::Number => json!(0.25),
            OptionKind::Bool => json!(true),
            OptionKind::Str => json!("x"),
        }
    }

    #[test]
    fn every_declared_option_reads_from_its_setting_and_is_sent_as_its_body_field() {
        let values: std::collections::BTreeMap<&str, Value> =
            REQUEST_OPTIONS.iter().map(|o| (o.setting, example(o.kind))).collect();
        let options = RequestOptions::from_settings(|name| values.get(name));
        let sent = options.body_fields();
        let expected: Vec<(&str, Value)> =
            REQUEST_OPTIONS.iter().filter_map(|o| Some((o.body_field?, example(o.kind)))).collect();
        assert_eq!(sent, expected);
    }

    #[test]
    fn unset_options_are_neither_sent_nor_written() {
        let options = RequestOptions::from_settings(|_| None);
        assert!(options.body_fields().is_empty());
        assert_eq!(serde_json::to_value(&options).unwrap(), json!({}));
    }

    #[test]
    fn a_value_of_the_wrong_type_reads_as_unset() {
        let text = json!("hot");
        let options = RequestOptions::from_settings(|name| (name == "temperature").then_some(&text));
        assert_eq!(options.temperature, None);
    }
}
