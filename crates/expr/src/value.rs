//! Runtime values and how they are shown in detail strings.

use std::fmt;

/// A value an expression computes. Numbers are f64 (JSON integers included).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    /// A list; items read through a wildcard carry the node name they came from.
    List(Vec<ListItem>),
    /// A JSON object read whole (e.g. a distribution); only `len`, `exists`
    /// and `==` accept it.
    Object(serde_json::Map<String, serde_json::Value>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListItem {
    /// The node the item was read from, for `argmax`/`argmin` and details.
    pub name: Option<String>,
    pub value: Value,
}

impl Value {
    pub fn from_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            // Every JSON number converts (large integers lose precision).
            serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(items) => Value::List(
                items.iter().map(|item| ListItem { name: None, value: Value::from_json(item) }).collect(),
            ),
            serde_json::Value::Object(map) => Value::Object(map.clone()),
        }
    }

    /// Back to JSON; names of list items are dropped, non-finite numbers become null.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => {
                serde_json::Number::from_f64(*n).map_or(serde_json::Value::Null, serde_json::Value::Number)
            }
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::List(items) => {
                serde_json::Value::Array(items.iter().map(|item| item.value.to_json()).collect())
            }
            Value::Object(map) => serde_json::Value::Object(map.clone()),
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Object(_) => "object",
        }
    }

    /// "number 3.2", "string \"x\"": for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Value::Null => "null".to_string(),
            _ => format!("{} {}", self.type_name(), self),
        }
    }
}

/// How many list items a detail string shows before eliding the rest.
const LIST_ITEMS_SHOWN: usize = 8;

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Number(n) => f.write_str(&format_number(*n)),
            Value::String(s) => write!(f, "{s:?}"),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().take(LIST_ITEMS_SHOWN).enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if let Some(name) = &item.name {
                        write!(f, "{name}: ")?;
                    }
                    write!(f, "{}", item.value)?;
                }
                if items.len() > LIST_ITEMS_SHOWN {
                    write!(f, ", … {} more", items.len() - LIST_ITEMS_SHOWN)?;
                }
                f.write_str("]")
            }
            Value::Object(map) => write!(f, "{{object with {} fields}}", map.len()),
        }
    }
}

/// Numbers for humans: integers as integers, others with 3 decimals (or 4
/// significant digits below 1), trailing zeros trimmed: 812.4, 2.824, 0.01234.
pub fn format_number(n: f64) -> String {
    if !n.is_finite() {
        return n.to_string();
    }
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return format!("{n:.0}");
    }
    let magnitude = n.abs();
    let text = if magnitude >= 1e15 {
        return format!("{n:e}");
    } else if magnitude >= 1.0 {
        format!("{n:.3}")
    } else if magnitude >= 1e-9 {
        // Leading zeros after the point plus 4 significant digits.
        let leading_zeros = (-magnitude.log10()).floor() as usize;
        format!("{n:.prec$}", prec = leading_zeros + 4)
    } else {
        return format!("{n:e}");
    };
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    if trimmed == "-0" { "0".to_string() } else { trimmed.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_readable() {
        assert_eq!(format_number(5.0), "5");
        assert_eq!(format_number(812.4), "812.4");
        assert_eq!(format_number(2.823_619), "2.824");
        assert_eq!(format_number(-3.5), "-3.5");
        assert_eq!(format_number(0.012_345_6), "0.01235");
        assert_eq!(format_number(1e-12), "1e-12");
        assert_eq!(format_number(1e20), "1e20");
    }

    #[test]
    fn named_lists_show_names_and_elide_long_tails() {
        let items = (0..10)
            .map(|i| ListItem { name: Some(format!("d{i}")), value: Value::Number(f64::from(i)) })
            .collect();
        assert_eq!(
            Value::List(items).to_string(),
            "[d0: 0, d1: 1, d2: 2, d3: 3, d4: 4, d5: 5, d6: 6, d7: 7, … 2 more]"
        );
    }
}
