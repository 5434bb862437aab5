//! Whether two cells measured the same thing at all, read from their
//! artifacts (what the load generator did, not the recipes): the engine,
//! model and serve flags, and the workload (context, output length, load,
//! request count, prompt-cache mode, sampling, replayed traffic, API,
//! streaming) and the tokens the server counted per request. A metric
//! verdict between cells that differ here compares two measurements, not
//! one measurement twice; `compare` says so before any verdict.

use serde::Serialize;
use serde_json::Value;

use crate::plan::changes::{describe, diff_values};

/// The settings compared, by their benchmark/v1 key, with the word a user reads.
const SETTINGS: &[(&str, &str)] = &[
    ("engine", "engine"),
    ("model", "model"),
    ("gpu", "GPU"),
    ("serve_flags", "serve flags"),
    ("context_tokens", "context tokens"),
    ("max_tokens", "max output tokens"),
    ("response_words", "requested reply words"),
    ("prompt_cache_mode", "prompt-cache mode"),
    ("shared_prefix_tokens", "shared prefix tokens"),
    ("concurrency", "concurrency"),
    ("arrival", "arrival"),
    ("requests", "request count"),
    ("sampling", "sampling"),
    ("traffic", "replayed traffic"),
    ("api", "API"),
    ("stream", "streaming"),
];

/// Measured facts of the workload, compared where both sides have them: a
/// setting can be unrecorded (a peer's file) or count in other tokens (a
/// client's tokenizer), but what the server counted per request is the
/// same kind of number on both sides. They differ beyond
/// [`MEASURED_TOLERANCE`] of the larger, not at all.
const MEASURED: &[(&str, &str)] = &[
    ("prompt_tokens_mean", "prompt tokens per request (measured mean)"),
    ("completion_tokens_mean", "output tokens per request (measured mean)"),
];
const MEASURED_TOLERANCE: f64 = 0.10;

/// One setting whose value differs between the two sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SettingDifference {
    /// The artifact's key.
    pub setting: String,
    pub a: Value,
    pub b: Value,
}

/// What the two artifacts say about what they measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WorkloadCheck {
    /// No recorded setting differs.
    pub alike: bool,
    pub differences: Vec<SettingDifference>,
    /// Settings one side does not record (an older or a foreign artifact):
    /// neither the same nor different, and named so.
    pub unrecorded: Vec<String>,
}

impl WorkloadCheck {
    /// "context tokens 24576 vs 4096; concurrency 1 vs 8".
    pub fn differences_words(&self) -> String {
        self.differences
            .iter()
            .map(|d| match (&d.a, &d.b) {
                // Objects (serve flags, sampling): only the members that differ.
                (Value::Object(_), Value::Object(_)) => {
                    let members: Vec<String> = diff_values(&d.a, &d.b).iter().map(describe).collect();
                    format!("{} ({})", word_of(&d.setting), members.join("; "))
                }
                _ => format!("{} {} vs {}", word_of(&d.setting), show(&d.a), show(&d.b)),
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Compares the settings of two benchmark/v1 artifacts.
pub fn check(a: &Value, b: &Value) -> WorkloadCheck {
    let mut result = WorkloadCheck::default();
    for &(key, _) in SETTINGS {
        match (recorded(a, key), recorded(b, key)) {
            (Some(left), Some(right)) if left != right => result.differences.push(SettingDifference {
                setting: key.to_string(),
                a: left.clone(),
                b: right.clone(),
            }),
            (Some(_), Some(_)) | (None, None) => {}
            _ => result.unrecorded.push(key.to_string()),
        }
    }
    for &(key, _) in MEASURED {
        let mean = |side: &Value| side.get("metrics")?.get(key)?.as_f64();
        if let (Some(left), Some(right)) = (mean(a), mean(b))
            && (left - right).abs() > MEASURED_TOLERANCE * left.abs().max(right.abs())
        {
            let rounded = |v: f64| Value::from((v * 10.0).round() / 10.0);
            result.differences.push(SettingDifference {
                setting: key.to_string(),
                a: rounded(left),
                b: rounded(right),
            });
        }
    }
    result.alike = result.differences.is_empty();
    result
}

/// A setting as the artifact recorded it (`None`: not recorded). An anvil
/// artifact (one with `arrival`, not imported) leaves `traffic` out for
/// synthetic prompts, so there its absence reads as `null`, not as
/// unrecorded; and it always streams.
fn recorded<'a>(artifact: &'a Value, key: &str) -> Option<&'a Value> {
    let measured_by_anvil = artifact.get("arrival").is_some() && artifact.get("imported_from").is_none();
    match artifact.get(key) {
        None if key == "traffic" && measured_by_anvil => Some(&Value::Null),
        None if key == "stream" && measured_by_anvil => Some(&Value::Bool(true)),
        other => other,
    }
}

/// The settings compared, in words: "engine, model, GPU, …".
pub fn compared_settings() -> String {
    SETTINGS.iter().chain(MEASURED).map(|(_, word)| *word).collect::<Vec<_>>().join(", ")
}

fn word_of(key: &str) -> &'static str {
    SETTINGS.iter().chain(MEASURED).find(|(k, _)| *k == key).map_or("setting", |(_, w)| w)
}

fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_each_setting_that_differs_and_each_one_side_lacks() {
        let a =
            json!({"engine": "e", "model": "m", "context_tokens": 24576, "concurrency": 1, "requests": 12});
        let b = json!({"engine": "e", "model": "m", "context_tokens": 4096, "concurrency": 8, "requests": 100,
                       "arrival": {"kind": "closed_loop"}});
        let check = check(&a, &b);
        assert!(!check.alike);
        let keys: Vec<&str> = check.differences.iter().map(|d| d.setting.as_str()).collect();
        assert_eq!(keys, ["context_tokens", "concurrency", "requests"]);
        assert_eq!(
            check.unrecorded,
            ["arrival", "traffic", "stream"],
            "absent on one side is named, not called a difference"
        );
        assert_eq!(
            check.differences_words(),
            "context tokens 24576 vs 4096; concurrency 1 vs 8; request count 12 vs 100"
        );
        assert!(super::check(&a, &a).alike);
        let measured =
            |prompt: f64| json!({"metrics": {"prompt_tokens_mean": prompt, "completion_tokens_mean": 32.0}});
        assert!(super::check(&measured(150.0), &measured(160.0)).alike, "within 10%: the same workload");
        assert_eq!(
            super::check(&measured(215.26), &measured(150.0)).differences_words(),
            "prompt tokens per request (measured mean) 215.3 vs 150.0"
        );
        let flags =
            |thinking: &str| json!({"serve_flags": {"thinking_mode": thinking, "no_thinking": false}});
        let mut b = flags("off");
        b["serve_flags"]["engine"] = json!("sim");
        assert_eq!(
            super::check(&flags("default"), &b).differences_words(),
            "serve flags (engine: (absent) → \"sim\"; thinking_mode: \"default\" → \"off\")"
        );
    }
}
