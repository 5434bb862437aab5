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
    /// Its length in the model's tokens, when a tokenizer counted it.
    tokens: Option<u32>,
}

/// One entry as the tokenizer counted it: its tokens, and where a prompt
/// cut to `max-prompt-tokens` ends (bytes), when it was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    pub tokens: u64,
    /// Where the prompt cut to `max-prompt-tokens` ends, and its tokens
    /// counted again (a cut can change how the last word tokenizes).
    pub cut: Option<(usize, u64)>,
}

/// What the token bounds did to the file's prompts, for the artifact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Bounded {
    counted: bool,
    too_short: u64,
    too_long: u64,
    truncated: u64,
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
    /// A scored dataset's item ids, one per entry (empty: prompts alone).
    ids: Vec<String>,
    /// Request indices below this are measured (above: warmup, calibration).
    measured_below: u64,
    /// Requests of one run (what `order` was sampled for).
    requests: u32,
    seed: u64,
    bounded: Bounded,
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
        let mut ids = Vec::new();
        let mut push = |text: &str, output_tokens: u32| {
            entries.push(Entry { at: texts.len(), len: text.len(), output_tokens, tokens: None });
            texts.push_str(text);
        };
        match (spec.format, spec.format.scored()) {
            // Every item once per repeat: the cell's request count is the items'.
            (_, Some(scored)) => {
                for item in crate::workload::scored::items(scored, &raw)? {
                    push(&item.prompt, 0);
                    ids.push(item.id);
                }
            }
            (DatasetFormat::Sharegpt, None) => {
                let items: Vec<ShareGptItem> =
                    serde_json::from_str(&raw).context("a ShareGPT file is a JSON array of conversations")?;
                for item in &items {
                    match item.conversations.iter().find(|t| t.from == "human" || t.from == "user") {
                        Some(turn) if !turn.value.trim().is_empty() => push(&turn.value, 0),
                        _ => skipped += 1,
                    }
                }
            }
            (_, None) => {
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
        let requests = if ids.is_empty() { requests } else { entries.len() as u32 };
        let order = sample(entries.len(), requests as usize, seed);
        // Staged requests are numbered up to the stages' end; they cycle through the sample.
        let measured_below = staged_below.unwrap_or(u64::from(requests) * u64::from(repeats.max(1)));
        Ok(Self {
            spec: spec.clone(),
            texts,
            entries,
            order,
            skipped,
            ids,
            measured_below,
            requests,
            seed,
            bounded: Bounded::default(),
        })
    }

    pub fn spec(&self) -> &DatasetSpec {
        &self.spec
    }

    /// Requests per repeat of a scored dataset: each of its items once
    /// (`None`: a file of prompts, sampled to the cell's `requests`).
    pub fn scored_requests(&self) -> Option<u64> {
        (!self.ids.is_empty()).then_some(self.order.len() as u64)
    }

    /// The id of a scored dataset's `entry` (`None`: prompts alone).
    pub fn item_id(&self, entry: u64) -> Option<&str> {
        self.ids.get(usize::try_from(entry).ok()?).map(String::as_str)
    }

    /// Every entry's prompt, in file order (for a tokenizer to count).
    pub fn prompts(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| &self.texts[e.at..e.at + e.len])
    }

    /// The dataset with each entry's token count (`counted`, in file order)
    /// and the spec's token bounds applied: too short or too long prompts
    /// dropped (or cut, with `truncate`), then sampled again from what is left.
    pub fn counted(&self, counted: &[Counted]) -> anyhow::Result<Self> {
        let (min, max) =
            (self.spec.min_prompt_tokens.unwrap_or(0), self.spec.max_prompt_tokens.unwrap_or(u64::MAX));
        let mut bounded = Bounded { counted: true, ..Bounded::default() };
        let mut entries = Vec::with_capacity(self.entries.len());
        let mut kept_ids = Vec::new();
        for (k, (entry, c)) in self.entries.iter().zip(counted).enumerate() {
            let mut entry = Entry { tokens: u32::try_from(c.tokens).ok(), ..*entry };
            if c.tokens < min {
                bounded.too_short += 1;
                continue;
            }
            if c.tokens > max {
                match (self.spec.truncate, c.cut) {
                    (true, Some((cut, tokens))) => {
                        entry.len = cut;
                        entry.tokens = u32::try_from(tokens).ok();
                        bounded.truncated += 1;
                    }
                    _ => {
                        bounded.too_long += 1;
                        continue;
                    }
                }
            }
            entries.push(entry);
            kept_ids.extend(self.ids.get(k).cloned());
        }
        if entries.is_empty() {
            bail!(
                "no prompt of the dataset is within the token bounds ({} shorter than {min}, {} longer than {max})",
                bounded.too_short,
                bounded.too_long
            );
        }
        let order = sample(entries.len(), self.requests as usize, self.seed);
        Ok(Self {
            texts: self.texts.clone(),
            ids: kept_ids,
            entries,
            order,
            bounded,
            spec: self.spec.clone(),
            ..*self
        })
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
            // Sent as written: its length is exact when a tokenizer counted it.
            exact_tokens: entry.tokens.map(u64::from),
        })
    }

    pub fn describe(&self) -> Value {
        let mut d = json!({
            "kind": "dataset",
            "file": self.spec.path.display().to_string(),
            "format": self.spec.format.as_str(),
            "entries": self.entries.len(),
            "skipped_conversations": self.skipped,
            "sampling": "seeded shuffle without replacement; a new shuffle when the file runs out",
        });
        if !self.ids.is_empty() {
            d["scored_items"] = json!(self.ids.len());
            d["sampling"] = json!("every item once per repeat, in a seeded order");
        }
        if self.bounded.counted {
            d["token_bounds"] = json!({
                "min_prompt_tokens": self.spec.min_prompt_tokens,
                "max_prompt_tokens": self.spec.max_prompt_tokens,
                "truncate": self.spec.truncate,
                "dropped_too_short": self.bounded.too_short,
                "dropped_too_long": self.bounded.too_long,
                "truncated": self.bounded.truncated,
            });
        }
        d
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
        let spec = DatasetSpec {
            path: path.clone(),
            format: DatasetFormat::Sharegpt,
            min_prompt_tokens: None,
            max_prompt_tokens: None,
            truncate: false,
        };
        let d = Dataset::load(&spec, 3, 4, 1, None).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(d.skipped, 1);
        let p = d.plan(2, 64).unwrap();
        assert_eq!(p.content, Content::Prompt("What is rust?".into()));
        assert_eq!((p.max_tokens, p.origin.dataset_entry), (64, Some(0)));
    }

    #[test]
    fn a_scored_dataset_sends_each_item_once_a_repeat_with_its_id() {
        let path = std::env::temp_dir().join(format!("anvil-dataset-scored-{}.jsonl", std::process::id()));
        let items = [("a", "1+1?", "2"), ("b", "2+2?", "4"), ("c", "3+3?", "6")];
        let text: String = items
            .iter()
            .map(|(id, q, r)| {
                format!(
                    "{{\"id\":\"{id}\",\"prompt\":\"{q}\",\"reference\":\"{r}\",\"scorer\":\"number\"}}\n"
                )
            })
            .collect();
        std::fs::write(&path, text).unwrap();
        let spec = DatasetSpec {
            path: path.clone(),
            format: DatasetFormat::Anvil,
            min_prompt_tokens: None,
            max_prompt_tokens: None,
            truncate: false,
        };
        // Asked for 16 requests a repeat: the items decide, 3.
        let d = Dataset::load(&spec, 5, 16, 2, None).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(d.scored_requests(), Some(3));
        let sent: Vec<(String, String)> = (0..6)
            .map(|i| {
                let p = d.plan(i, 64).unwrap();
                let id = d.item_id(p.origin.dataset_entry.unwrap()).unwrap().to_string();
                let Content::Prompt(prompt) = p.content else { panic!("a prompt") };
                (id, prompt)
            })
            .collect();
        let mut first: Vec<&str> = sent[..3].iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(sent[..3], sent[3..], "the same order in each repeat");
        first.sort();
        assert_eq!(first, ["a", "b", "c"], "each item once");
        assert!(sent.iter().all(|(id, prompt)| items.iter().any(|(i, q, _)| i == id && q == prompt)));
        assert!(d.plan(6, 64).is_none(), "past the measured requests");
    }

    #[test]
    fn token_bounds_drop_and_cut_prompts() {
        let path = std::env::temp_dir().join(format!("anvil-dataset-bounds-{}.jsonl", std::process::id()));
        std::fs::write(
            &path,
            "{\"prompt\": \"a\"}\n{\"prompt\": \"b b b\"}\n{\"prompt\": \"c c c c c c\"}\n",
        )
        .unwrap();
        let mut spec = DatasetSpec {
            path: path.clone(),
            format: DatasetFormat::Jsonl,
            min_prompt_tokens: Some(2),
            max_prompt_tokens: Some(4),
            truncate: false,
        };
        let d = Dataset::load(&spec, 3, 6, 1, None).unwrap();
        let counts = [
            Counted { tokens: 1, cut: None },
            Counted { tokens: 3, cut: None },
            Counted { tokens: 6, cut: Some((7, 4)) },
        ];
        let kept = d.counted(&counts).unwrap();
        assert_eq!(kept.entries.len(), 1, "too short and too long dropped");
        let p = kept.plan(0, 8).unwrap();
        assert_eq!((p.content, p.exact_tokens), (Content::Prompt("b b b".into()), Some(3)));
        assert_eq!(kept.describe()["token_bounds"]["dropped_too_long"], 1);
        spec.truncate = true;
        let d = Dataset::load(&spec, 3, 6, 1, None).unwrap();
        let cut = d.counted(&counts).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(cut.entries.len(), 2);
        let texts: Vec<_> = (0..6)
            .filter_map(|i| match cut.plan(i, 8).unwrap().content {
                Content::Prompt(p) => Some(p),
                Content::Messages(_) => None,
            })
            .collect();
        assert!(texts.contains(&"c c c c".to_string()), "cut to its first 4 tokens: {texts:?}");
        assert!(
            d.counted(&[Counted { tokens: 1, cut: None }; 3]).unwrap_err().to_string().contains("no prompt")
        );
    }
}
