//! How the page writes numbers and values: one rounding rule for every
//! table (the Markdown and CSV exports use it too), and inline code.

use serde_json::Value;

use super::page::escape;

/// A number as the page shows it: 1 decimal from 100, 2 from 1, else 3.
pub fn num(value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => {
            if v.abs() >= 100.0 {
                format!("{v:.1}")
            } else if v.abs() >= 1.0 {
                format!("{v:.2}")
            } else {
                format!("{v:.3}")
            }
        }
        _ => "—".into(),
    }
}

/// A load level: an integer as an integer.
pub fn count(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { num(Some(v)) }
}

pub(super) fn code(text: &str) -> String {
    format!("<code>{}</code>", escape(text))
}

pub(super) fn short(fp: &str) -> &str {
    &fp[..fp.len().min(12)]
}

/// A value as plain text: strings without quotes.
pub(super) fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_as_documented() {
        assert_eq!(num(Some(647.1517)), "647.2");
        assert_eq!(num(Some(63.395)), "63.40");
        assert_eq!(num(Some(0.12345)), "0.123");
        assert_eq!(num(None), "—");
        assert_eq!(num(Some(f64::NAN)), "—");
    }
}
