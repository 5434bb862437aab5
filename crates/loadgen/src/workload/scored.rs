//! Scored datasets: items that each carry the answer they are scored
//! against (anvil's own JSONL, GSM8K- and MMLU-style), read by
//! `anvil-quality`. A cell over one sends every item once per repeat, in
//! a seeded order, and keeps what the model answered (with the item's id)
//! so that the answers can be scored after the cell; the load generator
//! itself scores nothing.

use std::io::BufRead;

use anvil_quality::{Format, Item, ReadError};

use crate::workload::traffic::DatasetFormat;

impl DatasetFormat {
    /// The layout of a scored dataset, `None` for a file of prompts alone.
    pub fn scored(self) -> Option<Format> {
        match self {
            DatasetFormat::Anvil => Some(Format::Anvil),
            DatasetFormat::Gsm8k => Some(Format::Gsm8k),
            DatasetFormat::Mmlu => Some(Format::Mmlu),
            DatasetFormat::Sharegpt | DatasetFormat::Jsonl => None,
        }
    }
}

/// The items of a scored dataset's text.
pub fn items(format: Format, text: &str) -> Result<Vec<Item>, ReadError> {
    anvil_quality::read(format, text)
}

/// A scored dataset read through as the cell will read it: how many
/// items, or the first line that is no item (its number, apart from why).
pub(crate) fn check(mut reader: impl BufRead, format: Format) -> Result<u64, (Option<u64>, String)> {
    let mut text = String::new();
    reader.read_to_string(&mut text).map_err(|e| (None, format!("cannot be read as text: {e}")))?;
    let items = items(format, &text).map_err(|e| problem(&e))?;
    Ok(items.len() as u64)
}

/// The reader's error: its line apart from its message.
fn problem(error: &ReadError) -> (Option<u64>, String) {
    let message = error.to_string();
    let message = match error.line() {
        Some(line) => message.strip_prefix(&format!("line {line}: ")).unwrap_or(&message).to_string(),
        None => message,
    };
    (error.line().map(|l| l as u64), message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_line_is_named_once() {
        let text =
            "{\"question\": \"2+2?\", \"answer\": \"#### 4\"}\n{\"question\": \"x\", \"answer\": \"none\"}\n";
        let (line, message) = check(text.as_bytes(), Format::Gsm8k).unwrap_err();
        assert_eq!(line, Some(2));
        assert!(message.starts_with("field `answer`"), "{message}");
        let good = check(&text.as_bytes()[..text.find('\n').unwrap() + 1], Format::Gsm8k).unwrap();
        assert_eq!(good, 1);
        assert_eq!(DatasetFormat::Jsonl.scored(), None);
        assert_eq!(DatasetFormat::Mmlu.scored(), Some(Format::Mmlu));
    }
}
