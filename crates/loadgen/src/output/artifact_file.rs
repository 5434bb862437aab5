//! Reading a stored `benchmark/v1` artifact without holding it whole.
//!
//! An artifact is about 1.5 KB of JSON per request, and as a
//! `serde_json::Value` tree several times that: a 100,000-request cell
//! read the plain way needs over a gigabyte. Almost all of it is the
//! per-request lists, so readers take the document in two parts, each
//! streamed from the file: its [`head`] (every top-level member but the
//! per-request lists) and its records one at a time ([`for_each_record`]),
//! each dropped before the next is read.

use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::marker::PhantomData;
use std::path::Path;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The top-level members that grow with the request count.
pub const PER_REQUEST_MEMBERS: [&str; 2] = ["request_timings", "failures"];

/// The file's read buffer: large enough that reading is not syscall-bound.
const READ_BUFFER: usize = 256 * 1024;

/// Why an artifact file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactFileError {
    #[error("cannot open {path}: {source}")]
    Open { path: String, source: std::io::Error },
    #[error("{path} is not a benchmark/v1 artifact: {source}")]
    Parse { path: String, source: serde_json::Error },
    /// The callback's own error, as it gave it.
    #[error("{0}")]
    Callback(String),
}

/// The whole artifact at `path`, parsed as it is read (the file's bytes are
/// never held beside the tree). For readers that need every record at once.
pub fn whole(path: &Path) -> Result<Value, ArtifactFileError> {
    let shown = path.display().to_string();
    let file = File::open(path).map_err(|source| ArtifactFileError::Open { path: shown.clone(), source })?;
    serde_json::from_reader(BufReader::with_capacity(READ_BUFFER, file))
        .map_err(|source| ArtifactFileError::Parse { path: shown, source })
}

/// Every top-level member of the artifact at `path` except
/// [`PER_REQUEST_MEMBERS`], read without materialising those.
pub fn head(path: &Path) -> Result<Map<String, Value>, ArtifactFileError> {
    let mut head = Map::new();
    walk(path, &mut head, &mut |_: IgnoredAny| Ok(()), false)?;
    Ok(head)
}

/// Calls `each` with every element of `request_timings`, in file order,
/// each read as a `T` (a `Value`, or a struct of the fields the caller
/// needs, which skips the rest while parsing) and dropped after the call.
/// Returns the head as [`head`] would.
pub fn for_each_record<T, F>(path: &Path, mut each: F) -> Result<Map<String, Value>, ArtifactFileError>
where
    T: DeserializeOwned,
    F: FnMut(T) -> Result<(), String>,
{
    let mut head = Map::new();
    walk(path, &mut head, &mut each, true)?;
    Ok(head)
}

fn walk<T, F>(
    path: &Path,
    head: &mut Map<String, Value>,
    each: &mut F,
    records: bool,
) -> Result<(), ArtifactFileError>
where
    T: DeserializeOwned,
    F: FnMut(T) -> Result<(), String>,
{
    let shown = path.display().to_string();
    let file = File::open(path).map_err(|source| ArtifactFileError::Open { path: shown.clone(), source })?;
    let mut reader = serde_json::Deserializer::from_reader(BufReader::with_capacity(READ_BUFFER, file));
    let mut failed = None;
    let document = Document { record: PhantomData, head, each, records, failed: &mut failed };
    let parsed = document.deserialize(&mut reader).and_then(|()| reader.end());
    match (failed, parsed) {
        (Some(message), _) => Err(ArtifactFileError::Callback(message)),
        (None, Err(source)) => Err(ArtifactFileError::Parse { path: shown, source }),
        (None, Ok(())) => Ok(()),
    }
}

/// The top-level object: head members kept, per-request lists streamed or skipped.
struct Document<'a, T, F> {
    record: PhantomData<fn(T)>,
    head: &'a mut Map<String, Value>,
    each: &'a mut F,
    records: bool,
    /// The callback's error, which stops the parse.
    failed: &'a mut Option<String>,
}

impl<'de, T, F> DeserializeSeed<'de> for Document<'_, T, F>
where
    T: DeserializeOwned,
    F: FnMut(T) -> Result<(), String>,
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T, F> Visitor<'de> for Document<'_, T, F>
where
    T: DeserializeOwned,
    F: FnMut(T) -> Result<(), String>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "request_timings" && self.records {
                map.next_value_seed(Records {
                    record: PhantomData,
                    each: &mut *self.each,
                    failed: &mut *self.failed,
                })?;
            } else if PER_REQUEST_MEMBERS.contains(&key.as_str()) {
                map.next_value::<IgnoredAny>()?;
            } else {
                let value: Value = map.next_value()?;
                self.head.insert(key, value);
            }
        }
        Ok(())
    }
}

/// `request_timings`: each element handed to the callback as it is parsed.
struct Records<'a, T, F> {
    record: PhantomData<fn(T)>,
    each: &'a mut F,
    failed: &'a mut Option<String>,
}

impl<'de, T, F> DeserializeSeed<'de> for Records<'_, T, F>
where
    T: DeserializeOwned,
    F: FnMut(T) -> Result<(), String>,
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, T, F> Visitor<'de> for Records<'_, T, F>
where
    T: DeserializeOwned,
    F: FnMut(T) -> Result<(), String>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of request records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(record) = seq.next_element::<T>()? {
            if let Err(message) = (self.each)(record) {
                *self.failed = Some(message);
                return Err(de::Error::custom("stopped by the reader"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn file_of(doc: &Value) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        serde_json::to_writer(file.as_file(), doc).expect("write");
        file
    }

    #[test]
    fn head_leaves_out_the_per_request_lists_and_keeps_the_rest() {
        let doc = json!({"schema": "s", "request_timings": [{"a": 1}], "failures": [{"b": 2}], "metrics": {"x": 1.5}});
        let file = file_of(&doc);
        let head = head(file.path()).expect("head");
        assert_eq!(Value::Object(head), json!({"schema": "s", "metrics": {"x": 1.5}}));
    }

    #[test]
    fn records_arrive_in_order_and_typed() {
        #[derive(serde::Deserialize)]
        struct Slim {
            request_index: u64,
        }
        let doc = json!({"request_timings": [{"request_index": 0, "big": [1, 2, 3]}, {"request_index": 1}], "cell": "c"});
        let file = file_of(&doc);
        let mut seen = Vec::new();
        let head = for_each_record(file.path(), |r: Slim| {
            seen.push(r.request_index);
            Ok(())
        })
        .expect("records");
        assert_eq!(seen, [0, 1]);
        assert_eq!(head.get("cell"), Some(&json!("c")));
    }

    #[test]
    fn a_callback_error_stops_the_read_and_is_returned_as_given() {
        let doc = json!({"request_timings": [{}, {}, {}]});
        let file = file_of(&doc);
        let mut calls = 0;
        let err = for_each_record(file.path(), |_: Value| {
            calls += 1;
            Err("no more".to_string())
        })
        .expect_err("stopped");
        assert_eq!(calls, 1);
        assert_eq!(err.to_string(), "no more");
    }

    #[test]
    fn damage_names_the_file() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), b"{\"schema\": ").expect("write");
        let err = head(file.path()).expect_err("truncated");
        assert!(err.to_string().contains(&file.path().display().to_string()), "{err}");
        let err = head(Path::new("/nonexistent/benchmark.json")).expect_err("missing");
        assert!(err.to_string().starts_with("cannot open /nonexistent/benchmark.json"), "{err}");
    }
}
