//! A server's `scrape` URL: checked when a recipe is loaded, read when its
//! server runs. Neither the recipe's nor the run's alone.

/// Why a `scrape` URL names no metrics endpoint anvil can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ScrapeUrlError {
    #[error("give an http:// or https:// URL")]
    NotHttp,
    #[error("the URL has no host")]
    NoHost,
    #[error("a scrape URL takes no query or fragment")]
    QueryOrFragment,
    #[error("the URL must end in `/metrics` (e.g. \"http://127.0.0.1:9400/metrics\")")]
    NotMetrics,
}

/// A `scrape` target's address without its `/metrics`: it is read, as the
/// engine's own, at `<base>/metrics`.
pub fn scrape_base_url(url: &str) -> Result<&str, ScrapeUrlError> {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    let Some(rest) = rest else { return Err(ScrapeUrlError::NotHttp) };
    if rest.starts_with('/') || rest.is_empty() {
        return Err(ScrapeUrlError::NoHost);
    }
    if url.contains(['?', '#']) {
        return Err(ScrapeUrlError::QueryOrFragment);
    }
    match url.trim_end_matches('/').strip_suffix("/metrics") {
        Some(base) if base.len() > url.len() - rest.len() => Ok(base),
        _ => Err(ScrapeUrlError::NotMetrics),
    }
}
