//! Reading a stored `benchmark/v1` artifact without holding it whole.
//!
//! An artifact is about 1.5 KB of JSON per request, and as a
//! `serde_json::Value` tree several times that: a 100,000-request cell
//! read the plain way needs over a gigabyte. Almost all of it is the
//! per-request lists, so readers take the document in two passes, each
//! streamed from the file: its head ([`head`], [`head_with`]: top-level
//! members) and its records one at a time ([`for_each_record`]), each
//! dropped before the next is parsed. Two passes because JSON does not
//! order members: a reader may need the head (`slo`, `failures`) before
//! the first record.
//!
//! This is the one reader of artifact files: the checker's re-derivation,
//! the report, `show`, `compare`, bundles and the Parquet tables all use it.

use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::marker::PhantomData;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The member that holds the per-request records.
pub const RECORDS: &str = "request_timings";

/// The top-level members that grow with the request count.
pub const PER_REQUEST_MEMBERS: [&str; 2] = [RECORDS, "failures"];

/// The file's read buffer: large enough that reading is not syscall-bound.
const READ_BUFFER: usize = 256 * 1024;

/// Why an artifact file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactFileError {
    #[error("cannot open {path}: {source}")]
    Open { path: String, source: std::io::Error },
    #[error("{path} is not a benchmark/v1 artifact: {source}")]
    Parse { path: String, source: serde_json::Error },
}

impl ArtifactFileError {
    /// The file, as shown in the message.
    pub fn path(&self) -> &str {
        match self {
            Self::Open { path, .. } | Self::Parse { path, .. } => path,
        }
    }
}

/// Why [`for_each_record`] stopped: the file, or the caller's own error.
#[derive(Debug)]
pub enum Stopped<E> {
    File(ArtifactFileError),
    By(E),
}

impl<E: fmt::Display> fmt::Display for Stopped<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(e) => e.fmt(f),
            Self::By(e) => e.fmt(f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for Stopped<E> {}

/// What a head does with a top-level member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    /// Read into the head.
    Kept,
    /// In the head as null: present, its value not read into memory.
    Null,
    /// Left out of the head.
    Absent,
}

/// The whole artifact at `path`, parsed as it is read (the file's bytes are
/// never held beside the tree). For readers that need every record at once.
pub fn whole(path: &Path) -> Result<Value, ArtifactFileError> {
    let mut reader = open(path)?;
    let value = Value::deserialize(&mut reader).and_then(|value| reader.end().map(|()| value));
    value.map_err(|source| parse_error(path, source))
}

/// Every top-level member of the artifact at `path` except
/// [`PER_REQUEST_MEMBERS`], read without materialising those.
pub fn head(path: &Path) -> Result<Map<String, Value>, ArtifactFileError> {
    head_with(path, &|key| if PER_REQUEST_MEMBERS.contains(&key) { Member::Absent } else { Member::Kept })
}

/// Every top-level member of the artifact at `path` but its records (its
/// `failures` decide eligibility in the reference format): what a
/// comparison of two cells, and the run-to-run spread of a bundle, read.
pub fn head_but_records(path: &Path) -> Result<Value, ArtifactFileError> {
    head_with(path, &|key| if key == RECORDS { Member::Absent } else { Member::Kept }).map(Value::Object)
}

/// The top-level members of the artifact at `path`, each as `member` says;
/// the records are never read into the head.
pub fn head_with(
    path: &Path,
    member: &dyn Fn(&str) -> Member,
) -> Result<Map<String, Value>, ArtifactFileError> {
    let mut head = Map::new();
    let each = &mut |_: usize, _: IgnoredAny| -> Result<(), std::convert::Infallible> { Ok(()) };
    walk(path, Some(&mut head), member, each).map_err(|stopped| match stopped {
        Stopped::File(e) => e,
        Stopped::By(never) => match never {},
    })?;
    Ok(head)
}

/// Calls `each` with every element of `request_timings` and its position,
/// in file order, each read as a `T` (a `Value`, or a struct of the fields
/// the caller needs, which skips the rest while parsing) and dropped after
/// the call. `Ok(false)` when the document has no array `request_timings`
/// (no records, as in memory, not a damaged file).
pub fn for_each_record<T, E>(
    path: &Path,
    mut each: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<bool, Stopped<E>>
where
    T: DeserializeOwned,
{
    walk(path, None, &|_| Member::Absent, &mut each)
}

fn open(
    path: &Path,
) -> Result<serde_json::Deserializer<serde_json::de::IoRead<BufReader<File>>>, ArtifactFileError> {
    let file = File::open(path).map_err(|source| ArtifactFileError::Open { path: shown(path), source })?;
    Ok(serde_json::Deserializer::from_reader(BufReader::with_capacity(READ_BUFFER, file)))
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

fn parse_error(path: &Path, source: serde_json::Error) -> ArtifactFileError {
    ArtifactFileError::Parse { path: shown(path), source }
}

/// One pass over the file: the head kept (when asked for), the records
/// handed to `each` (when there is no head to keep).
fn walk<T, E, F>(
    path: &Path,
    head: Option<&mut Map<String, Value>>,
    member: &dyn Fn(&str) -> Member,
    each: &mut F,
) -> Result<bool, Stopped<E>>
where
    T: DeserializeOwned,
    F: FnMut(usize, T) -> Result<(), E>,
{
    let mut reader = open(path).map_err(Stopped::File)?;
    let streams_records = head.is_none();
    let mut found = false;
    let mut stopped = None;
    let document = Document {
        record: PhantomData,
        head,
        member,
        each: streams_records.then_some(each),
        found: &mut found,
        stopped: &mut stopped,
    };
    let parsed = document.deserialize(&mut reader).and_then(|()| reader.end());
    // The callback's own error, as it gave it, before the parser's account of it.
    match (stopped, parsed) {
        (Some(e), _) => Err(Stopped::By(e)),
        (None, Err(source)) => Err(Stopped::File(parse_error(path, source))),
        (None, Ok(())) => Ok(found),
    }
}

/// The top-level object: members kept per `member`, records streamed or skipped.
struct Document<'a, T, E, F> {
    record: PhantomData<fn(T)>,
    head: Option<&'a mut Map<String, Value>>,
    member: &'a dyn Fn(&str) -> Member,
    each: Option<&'a mut F>,
    found: &'a mut bool,
    stopped: &'a mut Option<E>,
}

impl<'de, T, E, F> DeserializeSeed<'de> for Document<'_, T, E, F>
where
    T: DeserializeOwned,
    F: FnMut(usize, T) -> Result<(), E>,
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T, E, F> Visitor<'de> for Document<'_, T, E, F>
where
    T: DeserializeOwned,
    F: FnMut(usize, T) -> Result<(), E>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == RECORDS
                && let Some(each) = self.each.as_deref_mut()
            {
                map.next_value_seed(Records {
                    record: PhantomData,
                    each,
                    found: self.found,
                    stopped: self.stopped,
                })?;
                continue;
            }
            let Some(head) = self.head.as_deref_mut() else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            match (self.member)(&key) {
                _ if key == RECORDS => {
                    map.next_value::<IgnoredAny>()?;
                }
                Member::Kept => {
                    let value: Value = map.next_value()?;
                    head.insert(key, value);
                }
                Member::Null => {
                    map.next_value::<IgnoredAny>()?;
                    head.insert(key, Value::Null);
                }
                Member::Absent => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// `request_timings`: each element handed to the callback as it is parsed.
struct Records<'a, T, E, F> {
    record: PhantomData<fn(T)>,
    each: &'a mut F,
    found: &'a mut bool,
    stopped: &'a mut Option<E>,
}

impl<'de, T, E, F> DeserializeSeed<'de> for Records<'_, T, E, F>
where
    T: DeserializeOwned,
    F: FnMut(usize, T) -> Result<(), E>,
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T, E, F> Visitor<'de> for Records<'_, T, E, F>
where
    T: DeserializeOwned,
    F: FnMut(usize, T) -> Result<(), E>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of request records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        *self.found = true;
        let mut pos = 0;
        while let Some(record) = seq.next_element::<T>()? {
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

    fn visit_unit<Er: de::Error>(self) -> Result<(), Er> {
        Ok(())
    }

    fn visit_bool<Er: de::Error>(self, _: bool) -> Result<(), Er> {
        Ok(())
    }

    fn visit_i64<Er: de::Error>(self, _: i64) -> Result<(), Er> {
        Ok(())
    }

    fn visit_u64<Er: de::Error>(self, _: u64) -> Result<(), Er> {
        Ok(())
    }

    fn visit_f64<Er: de::Error>(self, _: f64) -> Result<(), Er> {
        Ok(())
    }

    fn visit_str<Er: de::Error>(self, _: &str) -> Result<(), Er> {
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
    fn head_with_keeps_nulls_and_leaves_out_as_asked_but_never_the_records() {
        let doc =
            json!({"schema": "s", "request_timings": [{"a": 1}], "failures": [{"b": 2}], "notes": "long"});
        let file = file_of(&doc);
        let head = head_with(file.path(), &|key| match key {
            "notes" => Member::Null,
            "schema" => Member::Absent,
            _ => Member::Kept,
        })
        .expect("head");
        assert_eq!(Value::Object(head), json!({"failures": [{"b": 2}], "notes": null}));
    }

    #[test]
    fn records_arrive_in_order_typed_and_numbered() {
        #[derive(serde::Deserialize)]
        struct Slim {
            request_index: u64,
        }
        let doc = json!({"request_timings": [{"request_index": 7, "big": [1, 2, 3]}, {"request_index": 3}], "cell": "c"});
        let file = file_of(&doc);
        let mut seen = Vec::new();
        let found = for_each_record(file.path(), |pos, r: Slim| {
            seen.push((pos, r.request_index));
            Ok::<_, String>(())
        })
        .expect("records");
        assert!(found);
        assert_eq!(seen, [(0, 7), (1, 3)]);
    }

    #[test]
    fn records_that_are_not_an_array_are_none_not_damage() {
        for doc in
            [json!({"request_timings": {"a": 1}}), json!({"request_timings": null}), json!({"cell": "c"})]
        {
            let file = file_of(&doc);
            let found = for_each_record(file.path(), |_, _: Value| Ok::<_, String>(())).expect("reads");
            assert!(!found, "{doc}");
        }
    }

    #[test]
    fn a_callback_error_stops_the_read_and_is_returned_as_given() {
        let doc = json!({"request_timings": [{}, {}, {}]});
        let file = file_of(&doc);
        let mut calls = 0;
        let err = for_each_record(file.path(), |_, _: Value| {
            calls += 1;
            Err("no more".to_string())
        })
        .expect_err("stopped");
        assert_eq!(calls, 1);
        assert!(matches!(&err, Stopped::By(m) if m == "no more"), "{err}");
    }

    #[test]
    fn damage_names_the_file() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), b"{\"schema\": ").expect("write");
        let err = head(file.path()).expect_err("truncated");
        assert!(err.to_string().contains(&file.path().display().to_string()), "{err}");
        assert_eq!(err.path(), file.path().display().to_string());
        let err = head(Path::new("/nonexistent/benchmark.json")).expect_err("missing");
        assert!(err.to_string().starts_with("cannot open /nonexistent/benchmark.json"), "{err}");
        let err = whole(file.path()).expect_err("truncated");
        assert!(matches!(err, ArtifactFileError::Parse { .. }), "{err}");
    }
}
