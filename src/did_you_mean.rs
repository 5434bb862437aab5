//! The hint beside an unknown name: the recipe's loader and the run's
//! `--only` both offer the nearest known one.

/// "did you mean `x`?" for a misspelt name among known ones.
pub fn did_you_mean<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let best = known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(word, k), k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some(format!("did you mean `{}`?", best.1))
}
