//! Writing JSON text by hand for the hot streaming path, where building a
//! `serde_json::Value` per chunk would cost more than the rest of the step.

/// Append `text` as a JSON string literal (with quotes).
pub fn push_json_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut clean_from = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&bytes[clean_from..i]);
                out.extend_from_slice(format!("\\u{byte:04x}").as_bytes());
                clean_from = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[clean_from..i]);
        out.extend_from_slice(escape);
        clean_from = i + 1;
    }
    out.extend_from_slice(&bytes[clean_from..]);
    out.push(b'"');
}

/// `text` as a JSON string literal.
pub fn json_string(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len() + 2);
    push_json_string(&mut out, text);
    // Only ASCII escapes were added to valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_serde_json() {
        for text in ["plain", "quote \" and \\ slash", "line\nbreak\ttab\u{1}", "ünï</think>{}", ""] {
            let ours = json_string(text);
            assert_eq!(ours, serde_json::to_string(text).unwrap());
            assert_eq!(serde_json::from_str::<String>(&ours).unwrap(), text);
        }
    }
}
