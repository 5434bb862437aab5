//! Scored datasets read from the text of a JSONL file (one JSON object a
//! line; blank lines skipped), in three formats, and anvil's own written
//! back.
//!
//! - `anvil`: `{"id":..,"prompt":..,"reference":..,"scorer":"exact|number|choice|regex"}`;
//!   a number reference must be one number, a choice reference one letter
//!   A–J, a regex reference a pattern that compiles.
//! - `gsm8k`: `{"question":..,"answer":"<working>#### 42"}`: the question
//!   is the prompt, as it is; the number after the answer's last `####` is
//!   the reference, scored as a number.
//! - `mmlu`: `{"question":..,"choices":[..],"answer": 0..n-1 or "A".."J"}`
//!   with 2 to 10 choices: the prompt is the question, the choices as
//!   `A. ..` lines, and a request for the letter; scored as a choice.
//!
//! In `gsm8k` and `mmlu`, an item's id is its `id` field (a string or an
//! integer) when it has one, else its line number. Ids are unique: a
//! repeated id is an error naming both lines.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::choice::{LETTERS, reference_letter};
use crate::error::ReadError;
use crate::item::{Item, Scorer};
use crate::number::reference_number;

anvil_words::words! {
    #[serde]
    /// The layout of a scored dataset's lines.
    pub enum Format {
        Anvil = "anvil",
        Gsm8k = "gsm8k",
        Mmlu = "mmlu",
    }
}

/// The items of a dataset's text in `format`.
pub fn read(format: Format, text: &str) -> Result<Vec<Item>, ReadError> {
    match format {
        Format::Anvil => read_anvil(text),
        Format::Gsm8k => read_gsm8k(text),
        Format::Mmlu => read_mmlu(text),
    }
}

/// anvil's own JSONL (the module's documentation).
pub fn read_anvil(text: &str) -> Result<Vec<Item>, ReadError> {
    read_lines(text, |line, fields| {
        let id = string(line, fields, "id")?.to_string();
        let prompt = prompt(line, fields, "prompt")?;
        let word = string(line, fields, "scorer")?;
        let scorer = Scorer::from_word(word).ok_or_else(|| {
            invalid(line, "scorer", format!("is `{word}`, not one of {}", Scorer::WORDS.join(", ")))
        })?;
        let reference = checked_reference(line, scorer, string(line, fields, "reference")?)?;
        Ok(Item { id, prompt, reference, scorer })
    })
}

/// GSM8K-style JSONL (the module's documentation).
pub fn read_gsm8k(text: &str) -> Result<Vec<Item>, ReadError> {
    read_lines(text, |line, fields| {
        let id = id_or_line(line, fields)?;
        let prompt = prompt(line, fields, "question")?;
        let answer = string(line, fields, "answer")?;
        let reference = answer
            .rsplit_once("####")
            .and_then(|(_, after)| reference_number(after))
            .ok_or_else(|| invalid(line, "answer", "does not end in `#### <number>`".to_string()))?;
        Ok(Item { id, prompt, reference, scorer: Scorer::Number })
    })
}

/// MMLU-style JSONL (the module's documentation).
pub fn read_mmlu(text: &str) -> Result<Vec<Item>, ReadError> {
    read_lines(text, |line, fields| {
        let id = id_or_line(line, fields)?;
        let question = prompt(line, fields, "question")?;
        let choices = match fields.get("choices") {
            None => return Err(ReadError::Missing { line, field: "choices" }),
            Some(Value::Array(choices)) => choices,
            Some(_) => return Err(invalid(line, "choices", "is not an array".to_string())),
        };
        if !(2..=LETTERS.len()).contains(&choices.len()) {
            let problem = format!("has {} entries, not 2 to {}", choices.len(), LETTERS.len());
            return Err(invalid(line, "choices", problem));
        }
        let choices = choices
            .iter()
            .map(|c| {
                c.as_str()
                    .ok_or_else(|| invalid(line, "choices", "holds an entry that is not a string".into()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let letters = &LETTERS[..choices.len()];
        let reference = match fields.get("answer") {
            None => return Err(ReadError::Missing { line, field: "answer" }),
            Some(Value::Number(n)) => n.as_u64().and_then(|i| letters.chars().nth(usize::try_from(i).ok()?)),
            Some(Value::String(s)) => reference_letter(s).filter(|l| letters.contains(*l)),
            Some(_) => None,
        };
        let last = letters.chars().next_back().unwrap_or('A');
        let reference = reference.ok_or_else(|| {
            let problem =
                format!("is not a choice: an index 0 to {} or a letter A to {last}", choices.len() - 1);
            invalid(line, "answer", problem)
        })?;
        Ok(Item {
            id,
            prompt: mmlu_prompt(question, &choices),
            reference: reference.to_string(),
            scorer: Scorer::Choice,
        })
    })
}

/// The question, one `A. choice` line per choice, and a request for the
/// letter.
pub fn mmlu_prompt(question: String, choices: &[&str]) -> String {
    let mut prompt = question;
    let letters: Vec<char> = LETTERS.chars().take(choices.len()).collect();
    for (letter, choice) in letters.iter().zip(choices) {
        prompt.push_str(&format!("\n{letter}. {}", choice.trim()));
    }
    let (last, rest) = letters.split_last().unwrap_or((&'A', &[]));
    let rest: Vec<String> = rest.iter().map(char::to_string).collect();
    prompt.push_str(&format!(
        "\nAnswer with the letter of the correct choice ({} or {last}).\nAnswer:",
        rest.join(", ")
    ));
    prompt
}

/// anvil's own JSONL of `items`, one line each, as [`read_anvil`] reads it.
pub fn write_anvil(items: &[Item]) -> String {
    items.iter().map(|item| serde_json::to_string(item).expect("an item serializes") + "\n").collect()
}

/// Reads each non-blank line as a JSON object and makes it an item, refusing
/// repeated ids and a text with no item.
fn read_lines(
    text: &str,
    mut item: impl FnMut(usize, &Map<String, Value>) -> Result<Item, ReadError>,
) -> Result<Vec<Item>, ReadError> {
    let mut items = Vec::new();
    let mut first_line_of: HashMap<String, usize> = HashMap::new();
    for (at, raw) in text.lines().enumerate() {
        let line = at + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(raw).map_err(|source| ReadError::NotJson { line, source })?;
        let Value::Object(fields) = value else { return Err(ReadError::NotObject { line }) };
        let item = item(line, &fields)?;
        if let Some(&first) = first_line_of.get(&item.id) {
            return Err(ReadError::DuplicateId { line, id: item.id, first });
        }
        first_line_of.insert(item.id.clone(), line);
        items.push(item);
    }
    if items.is_empty() {
        return Err(ReadError::Empty);
    }
    Ok(items)
}

fn invalid(line: usize, field: &'static str, problem: String) -> ReadError {
    ReadError::Invalid { line, field, problem }
}

/// A field that must be a string.
fn string<'a>(
    line: usize,
    fields: &'a Map<String, Value>,
    field: &'static str,
) -> Result<&'a str, ReadError> {
    match fields.get(field) {
        None => Err(ReadError::Missing { line, field }),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(invalid(line, field, "is not a string".to_string())),
    }
}

/// A field that must be a string with something besides whitespace.
fn prompt(line: usize, fields: &Map<String, Value>, field: &'static str) -> Result<String, ReadError> {
    let text = string(line, fields, field)?;
    if text.trim().is_empty() {
        return Err(invalid(line, field, "is empty".to_string()));
    }
    Ok(text.to_string())
}

/// The `id` field (a string or an integer), or the line number without one.
fn id_or_line(line: usize, fields: &Map<String, Value>) -> Result<String, ReadError> {
    match fields.get("id") {
        None => Ok(line.to_string()),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => Ok(n.to_string()),
        Some(_) => Err(invalid(line, "id", "is neither a non-empty string nor an integer".to_string())),
    }
}

/// A reference as its scorer needs it: a number (kept as written, trimmed),
/// a letter (made uppercase), a pattern that compiles, or a non-empty text.
fn checked_reference(line: usize, scorer: Scorer, reference: &str) -> Result<String, ReadError> {
    let problem = match scorer {
        Scorer::Number if reference_number(reference).is_none() => {
            "is not a number (digits, optional minus, commas and point)".to_string()
        }
        Scorer::Choice => match reference_letter(reference) {
            Some(letter) => return Ok(letter.to_string()),
            None => "is not a choice letter A to J".to_string(),
        },
        Scorer::Regex => match regex::Regex::new(reference) {
            Ok(_) => return Ok(reference.to_string()),
            Err(e) => format!("is not a regular expression: {e}"),
        },
        Scorer::Exact if reference.trim().is_empty() => "is empty".to_string(),
        Scorer::Exact | Scorer::Number => return Ok(reference.trim().to_string()),
    };
    Err(invalid(line, "reference", problem))
}
