//! `vllm bench serve --save-result --save-detailed`: one flat JSON object
//! (one per line with `--append-result`) whose per-request data are
//! parallel arrays in seconds (`ttfts`, `itls`, `latencies`,
//! `start_times`, `input_lens`, `output_lens`, `errors`) and whose
//! summaries are `{mean,median,std}_{m}_ms` and `p{P}_{m}_ms`. The file
//! records no vLLM version, so it is recognised by its keys.

use serde_json::{Map, Value, json};

use super::fields::{Doc, FieldError};
use super::imported::{Check, Imported, SourceFile, Tool, Unfilled, fail, gaps_us, put, succeed};
use super::methods::{linear_percentile, mean, population_std};

/// Keys every `vllm bench serve` result has (its summary and settings).
const SIGNATURE: [&str; 5] = ["date", "backend", "num_prompts", "duration", "max_concurrency"];

pub fn looks_like(v: &Value) -> bool {
    SIGNATURE.iter().all(|k| v.get(k).is_some()) && v.get("mean_ttft_ms").is_some()
}

/// The per-request arrays, checked to be parallel.
struct Arrays {
    ttfts: Vec<f64>,
    latencies: Vec<f64>,
    itls: Vec<Vec<f64>>,
    input_lens: Vec<f64>,
    output_lens: Vec<f64>,
    start_times: Vec<f64>,
    errors: Vec<String>,
}

impl Arrays {
    fn read(doc: Doc<'_>, v: &Value) -> Result<Arrays, FieldError> {
        if v.get("ttfts").is_none() {
            return Err(doc.err(
                "ttfts",
                "is missing: the result was saved without --save-detailed, and anvil imports per-request data only",
            ));
        }
        let itls = doc
            .array(v, "itls")?
            .iter()
            .enumerate()
            .map(|(i, gaps)| {
                gaps.as_array()
                    .and_then(|g| g.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>())
                    .ok_or_else(|| doc.err(&format!("itls[{i}]"), "is not an array of numbers"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let errors = doc
            .array(v, "errors")?
            .iter()
            .enumerate()
            .map(|(i, e)| match e {
                Value::String(s) => Ok(s.clone()),
                Value::Null => Ok(String::new()),
                _ => Err(doc.err(&format!("errors[{i}]"), "is not a string")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let arrays = Arrays {
            ttfts: doc.numbers(v, "ttfts")?,
            latencies: doc.numbers(v, "latencies")?,
            itls,
            input_lens: doc.numbers(v, "input_lens")?,
            output_lens: doc.numbers(v, "output_lens")?,
            start_times: doc.numbers(v, "start_times")?,
            errors,
        };
        let n = arrays.ttfts.len();
        for (field, len) in [
            ("latencies", arrays.latencies.len()),
            ("itls", arrays.itls.len()),
            ("input_lens", arrays.input_lens.len()),
            ("output_lens", arrays.output_lens.len()),
            ("start_times", arrays.start_times.len()),
            ("errors", arrays.errors.len()),
        ] {
            if len != n {
                return Err(
                    doc.err(field, format!("has {len} entries, ttfts has {n}: the arrays must be parallel"))
                );
            }
        }
        Ok(arrays)
    }

    fn ok(&self, i: usize) -> bool {
        self.errors[i].is_empty()
    }
}

pub fn read(doc: Doc<'_>, v: &Value, files: Vec<SourceFile>) -> Result<Imported, FieldError> {
    let a = Arrays::read(doc, v)?;
    let mut out = Imported::new(Tool::VllmBench, files);
    out.version_note = Some("vLLM's result file records no vLLM version (nor any schema version)".into());
    let first_send = a.start_times.iter().copied().fold(f64::INFINITY, f64::min);
    for i in 0..a.ttfts.len() {
        let mut r = Map::new();
        r.insert("request_index".into(), json!(i));
        r.insert("repeat".into(), json!(0));
        // start_times are perf_counter readings: only their differences mean anything.
        let sent_ms = (a.start_times[i] - first_send) * 1000.0;
        r.insert("actual_send_ms".into(), json!(sent_ms));
        if a.ok(i) {
            succeed(&mut r);
            let (ttft, e2e) = (a.ttfts[i] * 1000.0, a.latencies[i] * 1000.0);
            r.insert("ttft_ms".into(), json!(ttft));
            // vLLM tells no reasoning from content: its first chunk is both.
            r.insert("time_to_first_output_ms".into(), json!(ttft));
            r.insert("e2e_ms".into(), json!(e2e));
            r.insert("finished_ms".into(), json!(sent_ms + e2e));
            r.insert("output_tokens".into(), json!(a.output_lens[i] as u64));
            r.insert("prompt_tokens".into(), json!(a.input_lens[i] as u64));
            r.insert("content_chunks".into(), json!(a.itls[i].len() + 1));
            r.insert("chunk_gaps_us".into(), gaps_us(a.itls[i].iter().map(|s| s * 1000.0)));
        } else {
            // A failed request's ttft, latency and output length are 0 placeholders, not values.
            fail(&mut r, &a.errors[i]);
        }
        out.records.push(r);
    }
    workload(doc, v, &a, &mut out)?;
    out.checks = checks(v, &a);
    for (field, why) in UNFILLED {
        out.unfilled(field, *why);
    }
    out.notes
        .push("chunk_gaps_us: vLLM's itls, one gap per SSE event (as anvil's), rounded to whole µs".into());
    Ok(out)
}

/// What vLLM's result file never records.
const UNFILLED: &[(&str, &str)] = &[
    ("base_url", "vLLM's result file records no server URL (nor endpoint path)"),
    ("engine", "the file does not say which server answered"),
    (
        "context_tokens",
        "the requested input length (--random-input-len) is not recorded; input_lens are the server's prompt counts",
    ),
    ("max_tokens", "the requested output length (--random-output-len) is not recorded"),
    ("sampling", "sampling settings and the seed are not recorded"),
    ("started_at", "`date` is local time to the second with no time zone"),
    (
        "request_timings[*].request_start_unix_ns",
        "start_times are perf_counter readings with an arbitrary origin, not wall-clock times",
    ),
    (
        "request_timings[*].output_token_source",
        "output_lens are the server's usage counts when it sent them, else vLLM's tokenizer count, and the file does not say which",
    ),
    ("request_timings[*].http_status", "not recorded"),
    ("request_timings[*].request_id", "not recorded"),
];

fn workload(doc: Doc<'_>, v: &Value, a: &Arrays, out: &mut Imported) -> Result<(), FieldError> {
    let w = &mut out.workload;
    w.insert("model".into(), json!(doc.str(v, "model_id")?));
    match v.get("endpoint_type").or(v.get("backend")).and_then(Value::as_str) {
        Some("openai") => put(w, "api", Some("completions")),
        Some("openai-chat") => put(w, "api", Some("chat")),
        other => out.unfilled.push(Unfilled {
            field: "api".into(),
            why: format!("backend {other:?} is not an OpenAI completions or chat endpoint anvil names"),
        }),
    }
    let cap = v.get("max_concurrency").and_then(Value::as_u64);
    let rate = v.get("request_rate");
    let burstiness = v.get("burstiness").and_then(Value::as_f64).unwrap_or(1.0);
    match (rate.and_then(Value::as_str), rate.and_then(Value::as_f64), cap) {
        // Every request due at once, `cap` sent at a time: anvil's closed loop of `cap` workers.
        (Some("inf"), _, Some(cap)) => {
            w.insert("arrival".into(), json!({"kind": "closed_loop"}));
            w.insert("concurrency".into(), json!(cap));
        }
        (_, Some(rate), cap) if burstiness == 1.0 => {
            w.insert("arrival".into(), json!({"kind": "poisson", "rate_per_s": rate}));
            put(w, "concurrency", cap);
        }
        _ => out.unfilled.push(Unfilled {
            field: "arrival".into(),
            why: format!(
                "request_rate {} with burstiness {burstiness} and max_concurrency {cap:?} has no anvil arrival",
                rate.unwrap_or(&Value::Null)
            ),
        }),
    }
    // vLLM's openai backends always stream; per-event gaps prove it for this file.
    if (0..a.ttfts.len()).any(|i| a.ok(i) && !a.itls[i].is_empty()) {
        w.insert("stream".into(), json!(true));
        out.notes.push("stream: inferred from the per-request gaps between streamed events (the file has no stream flag)".into());
    } else {
        out.unfilled.push(Unfilled {
            field: "stream".into(),
            why: "the file has no stream flag and no request recorded a gap between streamed events".into(),
        });
    }
    Ok(())
}

/// vLLM's summaries re-computed from its arrays with its own definitions:
/// successful requests only, TPOT per request `(latency − ttft) /
/// (output_len − 1)` for output_len > 1, ITL pooled over every gap, numpy
/// mean, median, population std and linear percentiles, seconds × 1000.
fn checks(v: &Value, a: &Arrays) -> Vec<Check> {
    let ok: Vec<usize> = (0..a.ttfts.len()).filter(|&i| a.ok(i)).collect();
    let per = |f: &dyn Fn(usize) -> Option<f64>| ok.iter().filter_map(|&i| f(i)).collect::<Vec<f64>>();
    let series: [(&str, &str, Vec<f64>); 4] = [
        ("TTFT", "ttft", per(&|i| Some(a.ttfts[i]))),
        (
            "TPOT",
            "tpot",
            per(&|i| {
                (a.output_lens[i] > 1.0).then(|| (a.latencies[i] - a.ttfts[i]) / (a.output_lens[i] - 1.0))
            }),
        ),
        ("ITL", "itl", ok.iter().flat_map(|&i| a.itls[i].iter().copied()).collect()),
        ("E2E", "e2el", per(&|i| Some(a.latencies[i]))),
    ];
    let mut out = Vec::new();
    for (metric, m, values) in series {
        let ms = |x: Option<f64>| x.map(|x| x * 1000.0);
        let mut stats: Vec<(String, String, Option<f64>)> = vec![
            (format!("mean_{m}_ms"), "mean".into(), ms(mean(&values))),
            (format!("median_{m}_ms"), "median".into(), ms(linear_percentile(&values, 50.0))),
            (format!("std_{m}_ms"), "std".into(), ms(population_std(&values))),
        ];
        // `p{P}_{m}_ms`, P as vLLM writes it (`99`, `99.9`).
        let suffix = format!("_{m}_ms");
        let mut percentiles: Vec<(f64, String)> = v
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys())
            .filter_map(|k| {
                let p: f64 = k.strip_prefix('p')?.strip_suffix(suffix.as_str())?.parse().ok()?;
                Some((p, k.clone()))
            })
            .collect();
        percentiles.sort_by(|x, y| x.0.total_cmp(&y.0));
        for (p, key) in percentiles {
            stats.push((key, format!("p{}", trim(p)), ms(linear_percentile(&values, p))));
        }
        for (key, stat, rederived) in stats {
            let Some(printed) = v.get(&key).and_then(Value::as_f64) else { continue };
            out.push(Check {
                metric: metric.into(),
                printed_at: key,
                stat,
                unit: "ms".into(),
                printed,
                rederived,
            });
        }
    }
    out
}

fn trim(p: f64) -> String {
    if p.fract() == 0.0 { format!("{}", p as u64) } else { format!("{p}") }
}
