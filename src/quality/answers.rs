//! A cell's kept answers, stored beside its result: each scored against its
//! item when the cell sent a scored dataset, written as `answers.jsonl`,
//! and summed up in the result (`answers`, `accuracy`). `anvil verify`
//! scores them again with the same functions (`src/bundle/answers.rs`).

use std::collections::HashMap;

use anvil_loadgen::{Answer, Answers, DatasetSpec, Traffic};
use anvil_quality::Item;

use crate::results::{ANSWERS_FILE, AnswerLine, KeptAnswers, ScoredAccuracy};

/// The level of an accuracy's interval: that of every interval gates read.
pub const ACCURACY_LEVEL: f64 = 0.95;

/// What a cell stores of its answers.
pub struct StoredAnswers {
    /// `answers.jsonl`.
    pub file: Vec<u8>,
    pub kept: KeptAnswers,
    pub accuracy: Option<ScoredAccuracy>,
}

/// The items of the scored dataset a cell sent (`None`: it sent none).
pub fn scored_items(traffic: &Traffic) -> Result<Option<(&DatasetSpec, Vec<Item>)>, String> {
    let Traffic::Dataset(dataset) = traffic else { return Ok(None) };
    let Some(format) = dataset.format.scored() else { return Ok(None) };
    let text = std::fs::read_to_string(&dataset.path)
        .map_err(|e| format!("reading the scored dataset {}: {e}", dataset.path.display()))?;
    let items = anvil_quality::read(format, &text)
        .map_err(|e| format!("the scored dataset {}: {e}", dataset.path.display()))?;
    Ok(Some((dataset, items)))
}

/// A measured cell's answers as stored: scored when its traffic is a
/// scored dataset (read again here, from the run's path).
pub fn for_cell(answers: &Answers, traffic: &Traffic, simulated: bool) -> Result<StoredAnswers, String> {
    Ok(store(answers, scored_items(traffic)?, simulated))
}

/// The cell's answers as stored: scored against `items` (a scored
/// dataset's), written one a line, summed up.
pub fn store(answers: &Answers, scored: Option<(&DatasetSpec, Vec<Item>)>, simulated: bool) -> StoredAnswers {
    let items = scored.as_ref().map(|(_, items)| items.as_slice()).unwrap_or_default();
    let lines = score_lines(&answers.answers, items);
    let file = jsonl(&lines);
    let kept = KeptAnswers {
        file: ANSWERS_FILE.to_string(),
        blake3: anvil_loadgen::answer_digest(&file),
        kept: lines.len() as u64,
        dropped: answers.dropped,
        bytes: answers.bytes,
        budget_bytes: answers.budget_bytes,
        simulated,
    };
    let accuracy = scored.map(|(dataset, items)| accuracy_of(&lines, dataset, items.len() as u64));
    StoredAnswers { file, kept, accuracy }
}

/// Each answer with its item's score; an answer to no item of `items` is
/// left unscored.
pub fn score_lines(answers: &[Answer], items: &[Item]) -> Vec<AnswerLine> {
    let by_id: HashMap<&str, &Item> = items.iter().map(|item| (item.id.as_str(), item)).collect();
    answers
        .iter()
        .map(|answer| {
            let item = answer.item.as_deref().and_then(|id| by_id.get(id));
            let scored = item.map(|item| anvil_quality::score(item, &answer.text));
            AnswerLine {
                answer: answer.clone(),
                correct: scored.as_ref().map(|s| s.correct),
                extracted: scored.and_then(|s| s.extracted),
            }
        })
        .collect()
}

/// The accuracy of the scored lines, with its Clopper–Pearson interval:
/// each item's first scored answer, once (a second run of a greedy engine
/// answers the same again, and counting it would narrow the interval with
/// no new item).
pub fn accuracy_of(lines: &[AnswerLine], dataset: &DatasetSpec, items: u64) -> ScoredAccuracy {
    let mut seen = std::collections::HashSet::new();
    let scored: Vec<&AnswerLine> = lines
        .iter()
        .filter(|l| l.correct.is_some())
        .filter(|l| l.answer.item.as_ref().is_some_and(|item| seen.insert(item.clone())))
        .collect();
    let outcomes: Vec<bool> = scored.iter().map(|l| l.correct == Some(true)).collect();
    let accuracy = anvil_quality::accuracy(&outcomes, ACCURACY_LEVEL);
    ScoredAccuracy {
        correct: accuracy.correct,
        n: accuracy.n,
        share: accuracy.share.is_finite().then_some(accuracy.share),
        share_ci95_low: accuracy.low,
        share_ci95_high: accuracy.high,
        level: accuracy.level,
        unanswered: scored.iter().filter(|l| !l.answer.complete).count() as u64,
        dataset: dataset
            .path
            .file_name()
            .map_or_else(|| dataset.path.display().to_string(), |n| n.to_string_lossy().into_owned()),
        format: dataset.format.as_str().to_string(),
        items,
    }
}

/// `answers.jsonl`: one line each.
pub fn jsonl(lines: &[AnswerLine]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        out.extend(serde_json::to_vec(line).unwrap_or_default());
        out.push(b'\n');
    }
    out
}

/// `answers.jsonl` read back; a line that is no answer is named.
pub fn read_jsonl(bytes: &[u8]) -> Result<Vec<AnswerLine>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(at, line)| serde_json::from_str(line).map_err(|e| format!("line {}: {e}", at + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use anvil_loadgen::DatasetFormat;
    use anvil_quality::Scorer;

    fn answer(index: u64, item: &str, text: &str, complete: bool) -> Answer {
        Answer {
            request_index: index,
            repeat: 0,
            item: Some(item.into()),
            prompt_blake3: anvil_loadgen::answer_digest(item.as_bytes()),
            text: text.into(),
            token_ids: None,
            text_blake3: anvil_loadgen::answer_digest(text.as_bytes()),
            complete,
            truncated: false,
            finish_reason: Some("stop".into()),
            simulated: true,
        }
    }

    #[test]
    fn scored_stored_and_read_back() {
        let items: Vec<Item> = ["4", "9", "B"]
            .iter()
            .enumerate()
            .map(|(i, r)| Item {
                id: format!("q{i}"),
                prompt: "?".into(),
                reference: r.to_string(),
                scorer: if *r == "B" { Scorer::Choice } else { Scorer::Number },
            })
            .collect();
        let answers = Answers {
            answers: vec![
                answer(0, "q0", "The answer is 4.", true),
                answer(1, "q1", "#### 8", true),
                answer(2, "q2", "Answer: B", false),
                answer(3, "other", "4", true),
                // A second answer to q0 (a repeat): kept, not counted again.
                answer(4, "q0", "#### 5", true),
            ],
            dropped: 1,
            bytes: 900,
            budget_bytes: 1000,
        };
        let dataset = DatasetSpec {
            path: "data/items.jsonl".into(),
            format: DatasetFormat::Anvil,
            min_prompt_tokens: None,
            max_prompt_tokens: None,
            truncate: false,
        };
        let stored = store(&answers, Some((&dataset, items)), true);
        let accuracy = stored.accuracy.unwrap();
        assert_eq!((accuracy.correct, accuracy.n, accuracy.unanswered), (2, 3, 1));
        assert_eq!((accuracy.dataset.as_str(), accuracy.items), ("items.jsonl", 3));
        assert!(accuracy.share_ci95_low < 2.0 / 3.0 && accuracy.share_ci95_high > 2.0 / 3.0);
        assert_eq!((stored.kept.kept, stored.kept.dropped), (5, 1));
        assert_eq!(stored.kept.blake3, anvil_loadgen::answer_digest(&stored.file));
        let back = read_jsonl(&stored.file).unwrap();
        assert_eq!(back[1].extracted.as_deref(), Some("8"));
        assert_eq!(back[3].correct, None, "an answer to no item of the dataset");
        assert_eq!(back[0].answer, answers.answers[0]);
        assert!(read_jsonl(b"{\"request_index\": 1}\n").unwrap_err().starts_with("line 1:"));
    }
}
