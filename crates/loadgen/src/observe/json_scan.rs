//! A small zero-copy JSON scanner for streamed chunks.
//!
//! A chunk is a few hundred bytes of JSON of which we need three or four
//! fields. Deserializing the whole document per chunk costs more than the
//! rest of the client together, so we walk the bytes once, skip the values we
//! do not need (checking their structure, so truncated or broken JSON is
//! still caught), and hand back the raw slices of the fields we asked for.

use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed JSON at byte {at}: {what}")]
pub struct ScanError {
    pub at: usize,
    pub what: &'static str,
}

fn err<T>(at: usize, what: &'static str) -> Result<T, ScanError> {
    Err(ScanError { at, what })
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Returns the index just past the closing quote of the string starting at `i`.
/// A plain byte loop: chunk strings are short, where SIMD search set-up costs
/// more than it saves.
fn skip_string(s: &[u8], i: usize) -> Result<usize, ScanError> {
    debug_assert_eq!(s.get(i), Some(&b'"'));
    let mut j = i + 1;
    while j < s.len() {
        match s[j] {
            b'"' => return Ok(j + 1),
            b'\\' => j += 2, // skip the escaped character
            _ => j += 1,
        }
    }
    err(i, "unterminated string")
}

/// Returns the index just past the value starting at `i` (after whitespace).
fn skip_value(s: &[u8], i: usize) -> Result<usize, ScanError> {
    let i = skip_ws(s, i);
    match s.get(i) {
        None => err(i, "expected a value"),
        Some(b'"') => skip_string(s, i),
        Some(b'{') | Some(b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < s.len() {
                match s[j] {
                    b'"' => {
                        j = skip_string(s, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            err(i, "unterminated object or array")
        }
        Some(c) if c.is_ascii_digit() || *c == b'-' || c.is_ascii_alphabetic() => {
            let mut j = i;
            while j < s.len() && !matches!(s[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                j += 1;
            }
            let word = &s[i..j];
            let valid = matches!(word, b"true" | b"false" | b"null")
                || word.iter().all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'));
            if valid { Ok(j) } else { err(i, "invalid literal") }
        }
        Some(_) => err(i, "unexpected character"),
    }
}

/// Walks the fields of the JSON object at `obj[start..]` (after whitespace)
/// in one pass. `on_field(key, value_start)` may consume the value itself
/// and return where it ends, or return `None` to have it skipped. Returns
/// the index just past the closing `}`. `key` is the decoded key: a key
/// written with escapes (`"cont\u0065nt"`) is the key it spells.
///
/// Consuming values in place is what keeps a chunk to one pass: the
/// `choices` array is read while it is walked, not skipped and re-read.
pub fn walk_object(
    obj: &[u8],
    start: usize,
    mut on_field: impl FnMut(&[u8], usize) -> Result<Option<usize>, ScanError>,
) -> Result<usize, ScanError> {
    let mut i = skip_ws(obj, start);
    if obj.get(i) != Some(&b'{') {
        return err(i, "expected an object");
    }
    i = skip_ws(obj, i + 1);
    if obj.get(i) == Some(&b'}') {
        return Ok(i + 1);
    }
    loop {
        if obj.get(i) != Some(&b'"') {
            return err(i, "expected a key");
        }
        let key_end = skip_string(obj, i)?;
        let raw_key = &obj[i + 1..key_end - 1];
        let decoded;
        let key = if memchr::memchr(b'\\', raw_key).is_some() {
            decoded = decode_escapes(raw_key).map_err(|e| ScanError { at: i + 1 + e.at, what: e.what })?;
            decoded.as_bytes()
        } else {
            raw_key
        };
        i = skip_ws(obj, key_end);
        if obj.get(i) != Some(&b':') {
            return err(i, "expected ':'");
        }
        let value_start = skip_ws(obj, i + 1);
        let value_end = match on_field(key, value_start)? {
            Some(end) => end,
            None => skip_value(obj, value_start)?,
        };
        i = skip_ws(obj, value_end);
        match obj.get(i) {
            Some(b',') => i = skip_ws(obj, i + 1),
            Some(b'}') => return Ok(i + 1),
            _ => return err(i, "expected ',' or '}'"),
        }
    }
}

/// Walks the JSON array at `arr[start..]`: `on_first` may consume the first
/// element (returning its end), the rest are skipped. Returns the index just
/// past the closing `]`.
pub fn walk_array_first(
    arr: &[u8],
    start: usize,
    on_first: impl FnOnce(usize) -> Result<usize, ScanError>,
) -> Result<usize, ScanError> {
    let mut i = skip_ws(arr, start);
    if arr.get(i) != Some(&b'[') {
        return err(i, "expected an array");
    }
    i = skip_ws(arr, i + 1);
    if arr.get(i) == Some(&b']') {
        return Ok(i + 1);
    }
    i = skip_ws(arr, on_first(i)?);
    loop {
        match arr.get(i) {
            Some(b',') => i = skip_ws(arr, skip_value(arr, i + 1)?),
            Some(b']') => return Ok(i + 1),
            _ => return err(i, "expected ',' or ']'"),
        }
    }
}

/// The end of the whole document: only whitespace may follow `end`.
pub fn expect_end(doc: &[u8], end: usize) -> Result<(), ScanError> {
    if skip_ws(doc, end) == doc.len() { Ok(()) } else { err(end, "trailing bytes after object") }
}

/// Skips the value at `s[i..]`, returning its raw slice and where it ends.
pub fn value_at(s: &[u8], i: usize) -> Result<(&[u8], usize), ScanError> {
    let end = skip_value(s, i)?;
    Ok((&s[i..end], end))
}

/// Looks up `keys` in the JSON object `obj` in one pass. Returns the raw
/// value slice of each key (the first occurrence), or `None` if absent.
pub fn object_fields<'a, const N: usize>(
    obj: &'a [u8],
    keys: [&[u8]; N],
) -> Result<[Option<&'a [u8]>; N], ScanError> {
    let mut found = [None; N];
    let end = walk_object(obj, 0, |key, at| {
        let Some(slot) = keys.iter().position(|k| *k == key) else {
            return Ok(None);
        };
        let (raw, end) = value_at(obj, at)?;
        found[slot].get_or_insert(raw);
        Ok(Some(end))
    })?;
    expect_end(obj, end)?;
    Ok(found)
}

pub fn is_null(raw: &[u8]) -> bool {
    raw == b"null"
}

/// Decodes a JSON string value; `None` for `null`.
pub fn string_value(raw: &[u8]) -> Result<Option<Cow<'_, str>>, ScanError> {
    if is_null(raw) {
        return Ok(None);
    }
    if raw.len() < 2 || raw[0] != b'"' || raw[raw.len() - 1] != b'"' {
        return err(0, "expected a string");
    }
    let inner = &raw[1..raw.len() - 1];
    if memchr::memchr(b'\\', inner).is_none() {
        return match std::str::from_utf8(inner) {
            Ok(s) => Ok(Some(Cow::Borrowed(s))),
            Err(_) => err(1, "invalid UTF-8 in string"),
        };
    }
    decode_escapes(inner).map(|s| Some(Cow::Owned(s)))
}

fn decode_escapes(inner: &[u8]) -> Result<String, ScanError> {
    let mut out: Vec<u8> = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let b = inner[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let Some(&esc) = inner.get(i + 1) else {
            return err(i, "dangling backslash");
        };
        i += 2;
        let simple = match esc {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'u' => None,
            _ => return err(i, "unknown escape"),
        };
        if let Some(c) = simple {
            out.push(c);
            continue;
        }
        let hi = hex4(inner, i)?;
        i += 4;
        let code = if (0xD800..0xDC00).contains(&hi) {
            // A high surrogate must be followed by `\uDC00`..`\uDFFF`.
            if inner.get(i) != Some(&b'\\') || inner.get(i + 1) != Some(&b'u') {
                return err(i, "unpaired surrogate");
            }
            let lo = hex4(inner, i + 2)?;
            if !(0xDC00..0xE000).contains(&lo) {
                return err(i, "unpaired surrogate");
            }
            i += 6;
            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
        } else {
            hi
        };
        let Some(ch) = char::from_u32(code) else {
            return err(i, "invalid code point");
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
    }
    String::from_utf8(out).or_else(|_| err(0, "invalid UTF-8 in string"))
}

fn hex4(s: &[u8], i: usize) -> Result<u32, ScanError> {
    let Some(digits) = s.get(i..i + 4) else {
        return err(i, "short \\u escape");
    };
    let mut v = 0u32;
    for d in digits {
        let n = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            b'A'..=b'F' => d - b'A' + 10,
            _ => return err(i, "bad hex digit"),
        };
        v = v * 16 + u32::from(n);
    }
    Ok(v)
}

/// Parses a non-negative integer (`null` → `None`).
pub fn u64_value(raw: &[u8]) -> Result<Option<u64>, ScanError> {
    if is_null(raw) {
        return Ok(None);
    }
    std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(Some)
        .ok_or(ScanError { at: 0, what: "expected a non-negative integer" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fields_and_skips_nested_values() {
        let doc = br#"{"id":"x","nested":{"content":"no","a":[1,{"b":"}"}]},"content":"yes \"q\"","n":-1.5e3,"t":true,"z":null}"#;
        let [content, n, z, missing] = object_fields(doc, [b"content", b"n", b"z", b"missing"]).unwrap();
        assert_eq!(string_value(content.unwrap()).unwrap().unwrap(), "yes \"q\"");
        assert_eq!(n.unwrap(), b"-1.5e3");
        assert!(is_null(z.unwrap()));
        assert!(missing.is_none());
    }

    #[test]
    fn agrees_with_serde_on_escapes() {
        let cases = [r#""plain""#, r#""a\nb\t\"c\\ \/""#, r#""\u00e9\u4e2d\ud83d\ude00""#, r#""""#];
        for case in cases {
            let ours = string_value(case.as_bytes()).unwrap().unwrap();
            let theirs: String = serde_json::from_str(case).unwrap();
            assert_eq!(ours, theirs, "{case}");
        }
    }

    #[test]
    fn rejects_broken_json() {
        let broken: [&[u8]; 8] = [
            b"",
            b"not json",
            br#"{"a":1"#,
            br#"{"a":"unterminated}"#,
            br#"{"a":[1,2}"#,
            br#"{"a" 1}"#,
            br#"{"a":1}x"#,
            br#"{"a":nul}"#,
        ];
        for doc in broken {
            assert!(object_fields(doc, [b"a"]).is_err(), "{}", String::from_utf8_lossy(doc));
        }
        assert!(string_value(br#""\ud83d""#).is_err());
        assert!(string_value(br#""\x""#).is_err());
    }

    #[test]
    fn first_element_of_arrays() {
        let first = |arr: &[u8]| {
            let mut seen = None;
            let end = walk_array_first(arr, 0, |at| {
                let (raw, end) = value_at(arr, at)?;
                seen = Some(raw.to_vec());
                Ok(end)
            })?;
            Ok::<_, ScanError>((seen, end))
        };
        assert_eq!(first(b"[]").unwrap(), (None, 2));
        let arr = b" [ {\"a\":[1]} , 2, \"]\"] ";
        assert_eq!(first(arr).unwrap(), (Some(b"{\"a\":[1]}".to_vec()), arr.len() - 1));
        assert!(first(b"{}").is_err());
        assert!(first(b"[1 2]").is_err());
        assert!(first(b"[1,").is_err());
    }

    #[test]
    fn walking_an_object_lets_the_caller_consume_values() {
        let doc = br#"{"skip":{"x":[1,{"y":"}"}]},"take":[3,4] , "n":null}"#;
        let mut keys = Vec::new();
        let end = walk_object(doc, 0, |key, at| {
            keys.push(String::from_utf8_lossy(key).into_owned());
            if key == b"take" { walk_array_first(doc, at, |at| Ok(at + 1)).map(Some) } else { Ok(None) }
        })
        .unwrap();
        assert_eq!(keys, ["skip", "take", "n"]);
        assert_eq!(end, doc.len());
        assert!(walk_object(br#"{"a":1"#, 0, |_, _| Ok(None)).is_err());
        assert!(walk_object(br#"{"a" 1}"#, 0, |_, _| Ok(None)).is_err());
    }

    /// Found by the `json_scan` property tests: a key written with escapes
    /// is the key it spells, as serde_json reads it.
    #[test]
    fn escaped_keys_are_decoded() {
        let doc = br#"{"cont\u0065nt":"yes","\"q\"":1,"a\/b":2}"#;
        let [content, quoted, slash] = object_fields(doc, [b"content", b"\"q\"", b"a/b"]).unwrap();
        assert_eq!(content, Some(&br#""yes""#[..]));
        assert_eq!(quoted, Some(&b"1"[..]));
        assert_eq!(slash, Some(&b"2"[..]));
        assert!(object_fields(br#"{"bad\x":1}"#, [b"bad"]).is_err(), "a broken escape in a key");
    }

    #[test]
    fn integers() {
        assert_eq!(u64_value(b"42").unwrap(), Some(42));
        assert_eq!(u64_value(b"null").unwrap(), None);
        assert!(u64_value(b"-1").is_err());
    }
}
