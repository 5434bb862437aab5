//! Getting a cell ready to send token-exact prompts, before any clock
//! starts: load the served model's tokenizer, find its one-token words,
//! count the synthetic prompts' closing instructions, measure what the
//! chat template adds on the server, and tokenize the first planned
//! prompts to check they are the lengths they claim.

use std::sync::Arc;

use anvil_tokens::{ServerAddress, TokenAlphabet, Tokenizer, TokenizerSpec};
use anyhow::Context as _;

use crate::observe::chunk::Usage;
use crate::output::tokens::{OverheadProbe, PromptCheck, PromptMiss, TokenAccount};
use crate::workload::dataset::{Counted, Dataset};
use crate::workload::filler::Filler;
use crate::workload::prompt::{PromptBuilder, SplitMix64};
use crate::workload::request::Content;
use crate::workload::source::Source;
use crate::workload::spec::{CellSpec, Target};

/// Content lengths of the overhead probes: two, so a template whose
/// overhead depends on the content's length shows it.
const PROBE_TOKENS: [u64; 2] = [16, 64];
/// Generator stream of the probes' words (apart from every prompt's).
const PROBE_STREAM: u64 = 0x7072_6f62_6500_0000;
/// Planned prompts tokenized before the run: with a local tokenizer, and
/// (each one a round trip) with the server's.
const CHECKED_LOCAL: u64 = 64;
const CHECKED_REMOTE: u64 = 8;

/// What the run uses: the words, and the overhead every record is checked against.
pub struct TokenExact {
    /// The traffic again where counting changed it (a dataset's prompts counted and bounded).
    pub source: Option<Source>,
    pub filler: Filler,
    pub instruction_tokens: u64,
    pub template_overhead: u64,
    pub account: TokenAccount,
}

/// Prepares `spec`'s tokenizer; `probe(text)` sends one request with
/// `text` as its prompt and answers the server's `usage`.
pub async fn prepare(
    spec: &CellSpec,
    tokenizer: &TokenizerSpec,
    target: &Target,
    prompts: &PromptBuilder,
    source: &Source,
    mut probe: impl AsyncFnMut(&str) -> anyhow::Result<Usage>,
) -> anyhow::Result<TokenExact> {
    let address = ServerAddress {
        base_url: &target.base_url,
        model: &spec.model,
        api_key: target.api_key.as_deref(),
        tls: &target.tls,
    };
    let tokenizer = Tokenizer::load(tokenizer, &address)?;
    let identity = tokenizer.identity().clone();
    let alphabet = alphabet_of(&tokenizer, &spec.model).await?;
    let mut account = TokenAccount {
        tokenizer: Some(identity),
        alphabet: Some(alphabet.summary()),
        ..TokenAccount::default()
    };
    let (first_word, first_id) = alphabet.pick(0);
    let (first_word, first_id) = (first_word.to_string(), first_id);
    let filler = Filler::Tokens(alphabet);

    // The closing instructions' tokens where they stand: after a word.
    let closing = prompts.closing(0);
    let instruction_tokens = match closing.is_empty() {
        true => 0,
        false => {
            let ids = tokenizer.encode(&format!("{first_word}{closing}")).await?;
            anyhow::ensure!(
                ids.first() == Some(&first_id),
                "the tokenizer merges a word with the instructions after it ({closing:?})"
            );
            ids.len() as u64 - 1
        }
    };
    account.instruction_tokens = (instruction_tokens > 0).then_some(instruction_tokens);

    for (k, tokens) in PROBE_TOKENS.into_iter().enumerate() {
        let mut text = String::new();
        filler.push(&mut text, &mut SplitMix64::new(spec.seed, PROBE_STREAM + k as u64), tokens);
        let usage = probe(&text).await.context("measuring the chat template's tokens")?;
        account.overhead_probes.push(OverheadProbe {
            content_tokens: tokens,
            prompt_tokens: usage.prompt_tokens,
            cached_tokens: usage.cached_tokens,
        });
    }
    let overheads: Vec<u64> =
        account.overhead_probes.iter().map(|p| p.prompt_tokens.saturating_sub(p.content_tokens)).collect();
    let template_overhead = overheads[0];
    anyhow::ensure!(
        overheads.iter().all(|&o| o == template_overhead),
        "the server counted {:?} prompt tokens for contents of {PROBE_TOKENS:?} exact tokens: its chat \
         template's overhead is not constant, so no prompt length can be planned",
        account.overhead_probes.iter().map(|p| p.prompt_tokens).collect::<Vec<_>>()
    );
    account.template_overhead_tokens = Some(template_overhead);
    // The probes share nothing but the template: what the server cached of
    // the second is the template's leading part as its cache holds it.
    account.template_cached_tokens = account.overhead_probes.last().and_then(|p| p.cached_tokens);

    let counted = match source {
        Source::Dataset(d) => Some(Source::Dataset(Arc::new(count_dataset(d, &tokenizer).await?))),
        _ => None,
    };
    let source = counted.as_ref().unwrap_or(source);

    let exact_prompts = PromptBuilder { filler: filler.clone(), instruction_tokens, ..prompts.clone() };
    let planned_total = source.requests().unwrap_or(u64::from(spec.requests));
    let limit = if tokenizer.is_remote() { CHECKED_REMOTE } else { CHECKED_LOCAL };
    let mut check = PromptCheck { checked: 0, exact: 0, first_miss: None };
    for index in 0..planned_total.min(limit) {
        let planned = source.plan(index, &exact_prompts, spec.max_tokens, spec.seed);
        let (Content::Prompt(text), Some(planned_tokens)) = (&planned.content, planned.exact_tokens) else {
            continue;
        };
        let tokenized = tokenizer.encode(text).await?.len() as u64;
        check.checked += 1;
        if tokenized == planned_tokens {
            check.exact += 1;
        } else if check.first_miss.is_none() {
            check.first_miss = Some(PromptMiss { request_index: index, planned: planned_tokens, tokenized });
        }
    }
    account.checked_prompts = (check.checked > 0).then_some(check);
    Ok(TokenExact { source: counted, filler, instruction_tokens, template_overhead, account })
}

/// The alphabets found in this process, by tokenizer (its file's blake3, or
/// the endpoint and the model asked): every cell on one server would
/// otherwise find the same words again.
static FOUND: std::sync::Mutex<Vec<(String, Arc<TokenAlphabet>)>> = std::sync::Mutex::new(Vec::new());

/// `tokenizer`'s alphabet: one found before for the same tokenizer if it
/// still holds for it (checked, not assumed: a server at the same address
/// may now serve another model), else found now.
async fn alphabet_of(tokenizer: &Tokenizer, model: &str) -> anyhow::Result<Arc<TokenAlphabet>> {
    let identity = tokenizer.identity();
    let key = match &identity.blake3 {
        Some(digest) => digest.clone(),
        None => format!("{} {model}", identity.location),
    };
    let known = FOUND.lock().ok().and_then(|f| f.iter().find(|(k, _)| *k == key).map(|(_, a)| a.clone()));
    if let Some(alphabet) = known
        && alphabet.holds_for(tokenizer).await?
    {
        return Ok(alphabet);
    }
    let alphabet = Arc::new(
        TokenAlphabet::discover(tokenizer)
            .await
            .with_context(|| format!("finding one-token words with the tokenizer {}", identity.location))?,
    );
    if let Ok(mut found) = FOUND.lock() {
        found.retain(|(k, _)| *k != key);
        found.push((key, alphabet.clone()));
    }
    Ok(alphabet)
}

/// A dataset's prompts counted in the model's tokens (so each record knows
/// its expected length) and held to the spec's token bounds.
async fn count_dataset(dataset: &Dataset, tokenizer: &Tokenizer) -> anyhow::Result<Dataset> {
    let spec = dataset.spec();
    anyhow::ensure!(
        !(spec.truncate && tokenizer.is_remote()),
        "`truncate` cuts prompts at a token's offset, which only a tokenizer.json gives: the server's \
         tokenize endpoint does not"
    );
    if tokenizer.is_remote() {
        // No cuts here: only counts, asked several at a time.
        let texts: Vec<String> = dataset.prompts().map(str::to_owned).collect();
        let counted: Vec<Counted> = tokenizer
            .encode_many(&texts)
            .await?
            .iter()
            .map(|ids| Counted { tokens: ids.len() as u64, cut: None })
            .collect();
        return dataset.counted(&counted);
    }
    let mut counted = Vec::new();
    for text in dataset.prompts() {
        let (tokens, cut_at) = tokenizer.count_and_cut(text, spec.max_prompt_tokens)?;
        let cut = match cut_at {
            Some(end) => Some((end, tokenizer.count_and_cut(&text[..end], None)?.0)),
            None => None,
        };
        counted.push(Counted { tokens, cut });
    }
    dataset.counted(&counted)
}
