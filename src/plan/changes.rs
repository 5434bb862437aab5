//! Field-by-field differences between two JSON documents (preimages or
//! results), with paths such as `settings.args[7]`.

use anvil_words::words;
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Change {
    pub path: String,
    /// Absent on one side is `null` here, with `presence` saying which.
    pub a: Value,
    pub b: Value,
    pub presence: Presence,
}

words! {
    #[serde]
    /// Which sides hold the field.
    pub enum Presence { Both = "both", OnlyA = "only_a", OnlyB = "only_b" }
}

pub fn diff_values(a: &Value, b: &Value) -> Vec<Change> {
    let mut changes = Vec::new();
    walk("", a, b, &mut changes);
    changes
}

fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<Change>) {
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let sub = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                match (ma.get(key), mb.get(key)) {
                    (Some(x), Some(y)) => walk(&sub, x, y, out),
                    (Some(x), None) => out.push(Change {
                        path: sub,
                        a: x.clone(),
                        b: Value::Null,
                        presence: Presence::OnlyA,
                    }),
                    (None, Some(y)) => out.push(Change {
                        path: sub,
                        a: Value::Null,
                        b: y.clone(),
                        presence: Presence::OnlyB,
                    }),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(xa), Value::Array(xb)) if xa.len() == xb.len() => {
            for (i, (x, y)) in xa.iter().zip(xb).enumerate() {
                walk(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (Value::Array(xa), Value::Array(xb)) => {
            // Lengths differ: show shared positions, then what one side has extra.
            let common = xa.len().min(xb.len());
            for i in 0..common {
                walk(&format!("{path}[{i}]"), &xa[i], &xb[i], out);
            }
            for (i, x) in xa.iter().enumerate().skip(common) {
                out.push(Change {
                    path: format!("{path}[{i}]"),
                    a: x.clone(),
                    b: Value::Null,
                    presence: Presence::OnlyA,
                });
            }
            for (i, y) in xb.iter().enumerate().skip(common) {
                out.push(Change {
                    path: format!("{path}[{i}]"),
                    a: Value::Null,
                    b: y.clone(),
                    presence: Presence::OnlyB,
                });
            }
        }
        _ if a == b => {}
        _ => {
            out.push(Change { path: path.to_string(), a: a.clone(), b: b.clone(), presence: Presence::Both })
        }
    }
}

/// `settings.args[7]: "8" → "12"`
pub fn describe(change: &Change) -> String {
    let side = |v: &Value, present: bool| if present { short(v) } else { "(absent)".to_string() };
    format!(
        "{}: {} → {}",
        change.path,
        side(&change.a, change.presence != Presence::OnlyB),
        side(&change.b, change.presence != Presence::OnlyA)
    )
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 80 { format!("{}…", text.chars().take(77).collect::<String>()) } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_changed_argument() {
        let a = json!({"settings": {"args": ["--depth", "8"], "gpus": 1}});
        let b = json!({"settings": {"args": ["--depth", "12"], "gpus": 1}});
        let changes = diff_values(&a, &b);
        assert_eq!(changes.len(), 1);
        assert_eq!(describe(&changes[0]), r#"settings.args[1]: "8" → "12""#);
    }

    #[test]
    fn reports_added_and_removed_keys() {
        let changes = diff_values(&json!({"x": 1}), &json!({"y": 2}));
        assert_eq!(
            changes.iter().map(describe).collect::<Vec<_>>(),
            vec!["x: 1 → (absent)", "y: (absent) → 2"]
        );
    }

    #[test]
    fn equal_documents_have_no_changes() {
        let v = json!({"a": [1, {"b": null}]});
        assert!(diff_values(&v, &v).is_empty());
    }
}
