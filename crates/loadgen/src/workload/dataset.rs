//! Prompt datasets: real prompts from a file, sampled with the campaign
//! seed (same seed, same prompts in the same order).
//!
//! Formats (docs/workloads.md):
//! - `sharegpt`: a JSON array of `{"conversations": [{"from": "human",
//!   "value": "..."}, {"from": "gpt", ...}, ...]}`; a prompt is a
//!   conversation's first human (or `user`) message;
//! - `jsonl`: one `{"prompt": "...", "output_tokens": n?}` per line.
//!
//! Sampling draws without replacement (a seeded shuffle of the entries),
//! starting a fresh shuffle when the cell asks for more requests than the
//! file holds.

use anyhow::{Context as _, bail};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::workload::prompt::SplitMix64;
use crate::workload::request::{Content, Origin, Planned};
use crate::workload::traffic::{DatasetFormat, DatasetSpec};

/// The stream of the dataset's shuffles.
const SAMPLING: u64 = 9 << 40;

/// One prompt: `texts[at .. at + len]`, and the output length it asks for (0: the cell's).
#[derive(Debug, Clone, Copy)]
struct Entry {
    at: usize,
    len: usize,
    output_tokens: u32,
}

#[derive(Debug)]
pub struct Dataset {
    spec: DatasetSpec,
    texts: String,
    entries: Vec<Entry>,
    /// Entry of each request of one run.
    order: Vec<u32>,
    /// Conversations the file holds without a usable prompt (skipped).
    skipped: u64,
    /// Request indices below this are measured (above: warmup, calibration).
    measured_below: u64,
}

#[derive(Deserialize)]
struct ShareGptItem {
    #[serde(default)]
    conversations: Vec<ShareGptTurn>,
}

#[derive(Deserialize)]
struct ShareGptTurn {
    from: String,
    value: String,
}

#[derive(Deserialize)]
struct JsonlItem {
    prompt: String,
    #[serde(default)]
    output_tokens: Option<u32>,
}

impl Dataset {
    pub fn load(
        spec: &DatasetSpec,
        seed: u64,
        requests: u32,
        repeats: u32,
        staged_below: Option<u64>,
    ) -> anyhow::Result<Self> {
        let raw = std::fs::read_to_string(&spec.path)?;
        let mut texts = String::new();
        let mut entries = Vec::new();
        let mut skipped = 0;
        let mut push = |text: &str, output_tokens: u32| {
            entries.push(Entry { at: texts.len(), len: text.len(), output_tokens });
            texts.push_str(text);
        };
        match spec.format {
            DatasetFormat::Sharegpt => {
                let items: Vec<ShareGptItem> =
                    serde_json::from_str(&raw).context("a ShareGPT file is a JSON array of conversations")?;
                for item in &items {
                    match item.conversations.iter().find(|t| t.from == "human" || t.from == "user") {
                        Some(turn) if !turn.value.trim().is_empty() => push(&turn.value, 0),
                        _ => skipped += 1,
                    }
                }
            }
            DatasetFormat::Jsonl => {
                for (n, line) in raw.lines().enumerate() {
                    if line.trim().is_empty() {
                        continue;
                    }
                    let item: JsonlItem =
                        serde_json::from_str(line).with_context(|| format!("line {}", n + 1))?;
                    push(&item.prompt, item.output_tokens.unwrap_or(0));
                }
            }
        }
        if entries.is_empty() {
            bail!("the dataset holds no prompt");
        }
        let order = sample(entries.len(), requests as usize, seed);
        // Staged requests are numbered up to the stages' end; they cycle through the sample.
        let measured_below = staged_below.unwrap_or(u64::from(requests) * u64::from(repeats.max(1)));
        Ok(Self { spec: spec.clone(), texts, entries, order, skipped, measured_below })
    }

    /// Request `index`'s prompt, `None` past the measured requests' slots.
    pub fn plan(&self, index: u64, max_tokens: u32) -> Option<Planned> {
        if index >= self.measured_below || self.order.is_empty() {
            return None;
        }
        let k = self.order[(index % self.order.len() as u64) as usize];
        let entry = self.entries[k as usize];
        let asked = entry.output_tokens;
        Some(Planned {
            content: Content::Prompt(self.texts[entry.at..entry.at + entry.len].to_string()),
            max_tokens: if asked > 0 { asked } else { max_tokens },
            ignore_eos: false,
            origin: Origin {
                dataset_entry: Some(u64::from(k)),
                requested_output_tokens: (asked > 0).then_some(u64::from(asked)),
                ..Origin::default()
            },
            exact_tokens: None,
        })
    }

    pub fn describe(&self) -> Value {
        json!({
            "kind": "dataset",
            "file": self.spec.path.display().to_string(),
            "format": self.spec.format.as_str(),
            "entries": self.entries.len(),
            "skipped_conversations": self.skipped,
            "sampling": "seeded shuffle without replacement; a new shuffle when the file runs out",
        })
    }
}

/// `count` entry numbers out of `entries`: successive seeded shuffles.
fn sample(entries: usize, count: usize, seed: u64) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed, SAMPLING);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let mut pass: Vec<u32> = (0..entries as u32).collect();
        for i in (1..pass.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            pass.swap(i, j);
        }
        out.extend(pass.into_iter().take(count - out.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_seeded_and_without_replacement() {
        let a = sample(10, 10, 1);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        assert_eq!(a, sample(10, 10, 1));
        assert_ne!(a, sample(10, 10, 2));
        assert_eq!(sample(3, 7, 1).len(), 7);
    }

    #[test]
    fn sharegpt_takes_the_first_human_turn() {
        let path = std::env::temp_dir().join(format!("anvil-dataset-{}.json", std::process::id()));
        std::fs::write(
            &path,
            r#"[{"conversations": [{"from": "human", "value": "What is rust?"}, {"from": "gpt", "value": "A language."}]},
                {"conversations": [{"from": "gpt", "value": "no prompt"}]}]"#,
        )
        .unwrap();
        let spec = DatasetSpec { path: path.clone(), format: DatasetFormat::Sharegpt };
        let d = Dataset::load(&spec, 3, 4, 1, None).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(d.skipped, 1);
        let p = d.plan(2, 64).unwrap();
        assert_eq!(p.content, Content::Prompt("What is rust?".into()));
        assert_eq!((p.max_tokens, p.origin.dataset_entry), (64, Some(0)));
    }
}
