//! Property tests (fuzz target `inputs`) for the readers of a workload's
//! files: whatever bytes a trace or dataset file holds, neither the check
//! that runs when a recipe loads nor the replay's own loader panics, and
//! they agree: a file the check passes loads, and a file it refuses does
//! not. (A check that passed what the replay then refused would let a
//! server start for a cell that cannot run.) Driver and seed corpus:
//! `fuzz/harness.rs`, `fuzz/corpus/inputs/`.

use proptest::prelude::*;

use super::dataset::Dataset;
use super::input_check::{check_dataset_from, check_trace_from};
use super::trace::Trace;
use super::traffic::{DatasetFormat, DatasetSpec, TraceFormat, TraceSpec};
use crate::fuzz_harness as harness;
use crate::observe::proptests::hostile_bytes;

const JSON_BYTES: &[u8] = b"{}[]\":,\n 0123456789-.eE\\truefalsnul";

fn file_with(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::io::Write::write_all(&mut file, bytes).expect("write it");
    file
}

fn trace_spec(path: &std::path::Path, format: TraceFormat) -> TraceSpec {
    TraceSpec::whole_file(path, format, 16)
}

/// The check and the loader on the same bytes, in every format.
fn agree(bytes: &[u8]) -> Result<(), TestCaseError> {
    let file = file_with(bytes);
    for format in [TraceFormat::Mooncake, TraceFormat::Jsonl] {
        let checked = check_trace_from(bytes, format);
        let loaded = Trace::load(&trace_spec(file.path(), format));
        prop_assert_eq!(
            checked.is_ok(),
            loaded.is_ok(),
            "trace {:?}: check {:?}, load {:?}",
            format,
            checked,
            loaded.err().map(|e| format!("{e:#}"))
        );
    }
    for format in [DatasetFormat::Sharegpt, DatasetFormat::Jsonl] {
        let checked = check_dataset_from(bytes, format);
        let spec = DatasetSpec {
            path: file.path().to_path_buf(),
            format,
            min_prompt_tokens: None,
            max_prompt_tokens: None,
            truncate: false,
        };
        let loaded = Dataset::load(&spec, 1, 4, 1, None);
        prop_assert_eq!(
            checked.is_ok(),
            loaded.is_ok(),
            "dataset {:?}: check {:?}, load {:?}",
            format,
            checked,
            loaded.err().map(|e| format!("{e:#}"))
        );
    }
    Ok(())
}

#[test]
fn fuzz_inputs_arbitrary_bytes_are_judged_alike_by_check_and_load() {
    harness::check("inputs", "arbitrary_bytes", 128, hostile_bytes(JSON_BYTES, 400), |bytes| agree(&bytes));
}

#[test]
fn corpus_inputs_are_judged_alike_by_check_and_load() {
    for (name, bytes) in harness::corpus("inputs") {
        if let Err(e) = agree(&bytes) {
            panic!("{name}: {e}");
        }
    }
}

#[test]
fn fuzz_inputs_mutated_corpus_is_judged_alike_by_check_and_load() {
    let seeds: Vec<Vec<u8>> = harness::corpus("inputs").into_iter().map(|(_, b)| b).collect();
    let insert = proptest::sample::select(vec![
        &b"\n"[..],
        b"\"",
        b"{",
        b"]",
        b",",
        b"-1",
        b"\"x\"",
        b"null",
        b"99999999999",
        b"\xff",
        b"{\"timestamp\": 1, \"input_length\": 2}\n",
    ])
    .prop_map(<[u8]>::to_vec);
    harness::check("inputs", "mutated_corpus", 128, harness::mutated(seeds, insert, 6), |bytes| {
        agree(&bytes)
    });
}
