//! Reading an artifact file without holding it: its head (every top-level
//! member but `request_timings`) in one pass, then its records one at a
//! time in a second, each dropped before the next is parsed. Two passes
//! because JSON does not order members: the head (`slo`, `context_seed`,
//! `failures`) must be known before the first record is checked.

use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::rederive::RederiveError;

const RECORDS: &str = "request_timings";

/// The file's read buffer: large enough that reading is not syscall-bound.
const READ_BUFFER: usize = 256 * 1024;

fn damaged(path: &Path, message: impl fmt::Display) -> RederiveError {
    RederiveError::File { path: path.display().to_string(), message: message.to_string() }
}

/// Parses the file at `path` with `seed` (a document visitor).
fn parse<S: for<'de> DeserializeSeed<'de, Value = ()>>(path: &Path, seed: S) -> Result<(), RederiveError> {
    let file = File::open(path).map_err(|e| damaged(path, format!("cannot open: {e}")))?;
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(READ_BUFFER, file));
    seed.deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| damaged(path, format!("not a benchmark/v1 artifact: {e}")))
}

/// Every top-level member of the artifact at `path` but `request_timings`.
pub fn head(path: &Path) -> Result<Map<String, Value>, RederiveError> {
    head_with(path, &|_| true)
}

/// [`head`], with the values of the members `keep` refuses left null
/// (present, not read into memory).
pub fn head_with(path: &Path, keep: &dyn Fn(&str) -> bool) -> Result<Map<String, Value>, RederiveError> {
    let mut head = Map::new();
    let mut records = |_: usize, _: Value| -> Result<(), RederiveError> { Ok(()) };
    let mut doc = Document {
        head: Some(&mut head),
        keep,
        records: None,
        each: &mut records,
        found: None,
        stopped: None,
    };
    let read = parse_doc(path, &mut doc);
    read.map(|()| head)
}

/// Calls `each` with every element of `request_timings` (and its position),
/// in file order. `Ok(false)` when the document has no array `request_timings`.
pub fn records(
    path: &Path,
    mut each: impl FnMut(usize, Value) -> Result<(), RederiveError>,
) -> Result<bool, RederiveError> {
    let mut found = false;
    let mut doc = Document {
        head: None,
        keep: &|_| false,
        records: Some(()),
        each: &mut each,
        found: Some(&mut found),
        stopped: None,
    };
    parse_doc(path, &mut doc)?;
    Ok(found)
}

fn parse_doc<F: FnMut(usize, Value) -> Result<(), RederiveError>>(
    path: &Path,
    doc: &mut Document<'_, F>,
) -> Result<(), RederiveError> {
    let read = parse(path, &mut *doc);
    // The callback's own error, as it gave it, before the parser's account of it.
    match doc.stopped.take() {
        Some(e) => Err(e),
        None => read,
    }
}

/// The top-level object: keeps the head, or hands the records on.
struct Document<'a, F> {
    head: Option<&'a mut Map<String, Value>>,
    keep: &'a dyn Fn(&str) -> bool,
    records: Option<()>,
    each: &'a mut F,
    found: Option<&'a mut bool>,
    stopped: Option<RederiveError>,
}

impl<'de, F: FnMut(usize, Value) -> Result<(), RederiveError>> DeserializeSeed<'de> for &mut Document<'_, F> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, F: FnMut(usize, Value) -> Result<(), RederiveError>> Visitor<'de> for &mut Document<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == RECORDS && self.records.is_some() {
                let mut array = false;
                map.next_value_seed(Records {
                    each: &mut *self.each,
                    array: &mut array,
                    stopped: &mut self.stopped,
                })?;
                if let Some(found) = self.found.as_deref_mut() {
                    *found = array;
                }
            } else if key == RECORDS || self.head.is_none() {
                map.next_value::<IgnoredAny>()?;
            } else if let Some(head) = self.head.as_deref_mut() {
                let value = if (self.keep)(&key) {
                    map.next_value()?
                } else {
                    map.next_value::<IgnoredAny>()?;
                    Value::Null
                };
                head.insert(key, value);
            }
        }
        Ok(())
    }
}

/// `request_timings`: each element handed to the callback as it is parsed.
struct Records<'a, F> {
    each: &'a mut F,
    array: &'a mut bool,
    stopped: &'a mut Option<RederiveError>,
}

impl<'de, F: FnMut(usize, Value) -> Result<(), RederiveError>> DeserializeSeed<'de> for Records<'_, F> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, F: FnMut(usize, Value) -> Result<(), RederiveError>> Visitor<'de> for Records<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of request records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        *self.array = true;
        let mut pos = 0;
        while let Some(record) = seq.next_element::<Value>()? {
            if let Err(e) = (self.each)(pos, record) {
                *self.stopped = Some(e);
                return Err(de::Error::custom("stopped by the reader"));
            }
            pos += 1;
        }
        Ok(())
    }

    // Anything but an array is no records (as in memory), not a damaged file.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}
