//! Reading a server's Prometheus `/metrics` (vLLM, SGLang, llama.cpp with
//! `--metrics`, TensorRT-LLM) and turning two scrapes into what happened
//! between them.
//!
//! Series keys are `name` or `name{label="value",...}` with labels sorted
//! by name, so the same series has the same key in every scrape.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::ProcError;

/// GETs `<base_url>/metrics` and parses it.
pub async fn scrape_metrics(base_url: &str) -> Result<BTreeMap<String, f64>, ProcError> {
    scrape_metrics_with_tls(base_url, &anvil_net::TlsSettings::default()).await
}

/// [`scrape_metrics`] of an https server trusted as `tls` says.
pub async fn scrape_metrics_with_tls(
    base_url: &str,
    tls: &anvil_net::TlsSettings,
) -> Result<BTreeMap<String, f64>, ProcError> {
    let url = format!("{}/metrics", base_url.trim_end_matches('/'));
    let fail = |reason: String| ProcError::Metrics { url: url.clone(), reason };
    let client = anvil_net::http_client_builder(tls)
        .and_then(|builder| Ok(builder.timeout(Duration::from_secs(10)).build()?))
        .map_err(|e| fail(format!("{e:#}")))?;
    let response = client.get(&url).send().await.map_err(|e| fail(e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(fail(format!("HTTP {status}")));
    }
    let text = response.text().await.map_err(|e| fail(e.to_string()))?;
    Ok(parse_prometheus_text(&text))
}

/// Parses the Prometheus text exposition format. Comments (`# HELP`,
/// `# TYPE`) and lines that do not parse are skipped: one odd line from an
/// engine must not lose the other metrics.
pub fn parse_prometheus_text(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(parse_sample)
        .collect()
}

fn parse_sample(line: &str) -> Option<(String, f64)> {
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if rest.starts_with('{') {
        let (parsed, after) = parse_labels(&rest[1..])?;
        labels = parsed;
        rest = after;
    }
    // A timestamp may follow the value; it is ignored.
    let value = parse_value(rest.split_whitespace().next()?)?;
    Some((series_key(name, labels), value))
}

/// Parses `a="x",b="y"}` and returns the labels and the text after `}`.
fn parse_labels(mut text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        text = text.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        if let Some(after) = text.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = text.find('=')?;
        let label = text[..eq].trim().to_string();
        let quoted = text[eq + 1..].trim_start().strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        let close = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                (_, c) => value.push(c),
            }
        };
        labels.push((label, value));
        text = &quoted[close + 1..];
    }
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

fn series_key(name: &str, mut labels: Vec<(String, String)>) -> String {
    if labels.is_empty() {
        return name.to_string();
    }
    labels.sort();
    let rendered: Vec<String> = labels
        .iter()
        .map(|(k, v)| {
            let escaped = v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
            format!("{k}=\"{escaped}\"")
        })
        .collect();
    format!("{name}{{{}}}", rendered.join(","))
}

/// The metric name of a series key (without labels).
pub fn metric_name(key: &str) -> &str {
    key.split('{').next().unwrap_or(key)
}

/// Whether a series only ever goes up: by Prometheus naming convention,
/// counters end in `_total`, and histograms/summaries expose `_count`,
/// `_sum` and `_bucket`. Everything else is read as a gauge.
pub fn is_cumulative(key: &str) -> bool {
    let name = metric_name(key);
    ["_total", "_count", "_sum", "_bucket"].iter().any(|suffix| name.ends_with(suffix))
}

/// What changed between two scrapes of the same server:
/// - cumulative series (see [`is_cumulative`]): `after - before`; a series
///   new in `after` counts from 0; if it went down (the server restarted)
///   the delta is `after`, as Prometheus' `increase()` does;
/// - gauges (running requests, KV-cache usage): the `after` value;
/// - `*_created` timestamps and series missing from `after` are left out.
pub fn metric_deltas(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    after
        .iter()
        .filter(|(key, _)| !metric_name(key).ends_with("_created"))
        .map(|(key, &now)| {
            let value = if is_cumulative(key) {
                let then = before.get(key).copied().unwrap_or(0.0);
                if now >= then { now - then } else { now }
            } else {
                now
            };
            (key.clone(), value)
        })
        .collect()
}
