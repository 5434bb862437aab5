//! `anvil report`: the quickstart's page rendered by headless Chromium
//! (screenshot not blank, plots present, the numbers in the DOM equal the
//! stored ones), the markdown and CSV exports, reports from a run id and a
//! bundle, `run --json`, completions, the man page and colour control.
//!
//! Chromium: `apt-get install -y chromium`. Without it the browser test
//! fails when `CI` is set and is skipped with a notice otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::Scratch;
use serde_json::Value;

const QUICKSTART: &str = include_str!("../recipes/quickstart.kdl");

/// One quickstart run shared by every test here: the scratch folder and
/// `run --report --json`'s summary.
fn quickstart() -> &'static (Scratch, Value) {
    static RUN: OnceLock<(Scratch, Value)> = OnceLock::new();
    RUN.get_or_init(|| {
        let scratch = Scratch::new();
        scratch.write("recipes/quickstart.kdl", QUICKSTART);
        let outcome = scratch.anvil(&["run", "recipes/quickstart.kdl", "--report", "--json"]).expect_code(0);
        let summary = outcome.json();
        (scratch, summary)
    })
}

fn step<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["steps"]
        .as_array()
        .and_then(|steps| steps.iter().find(|s| s["name"] == name))
        .unwrap_or_else(|| panic!("no step {name} in {summary:#}"))
}

/// A stored entry's result.json.
fn stored_result(scratch: &Scratch, fingerprint: &str) -> Value {
    let path = scratch.store().join("entries").join(&fingerprint[..2]).join(fingerprint).join("result.json");
    serde_json::from_str(&std::fs::read_to_string(&path).expect("read result.json"))
        .expect("result.json is JSON")
}

fn decision_summary(scratch: &Scratch) -> Value {
    serde_json::from_str(&scratch.read("results/quickstart/decision-summary.json")).expect("decision summary")
}

/// The page's rounding (1 decimal from 100, 2 from 1, else 3).
fn shown(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The `<td>` holding `data-metric="KEY"`: its exact value and its text.
fn metric_cell(html: &str, key: &str) -> (f64, String) {
    let needle = format!("data-metric=\"{key}\" data-value=\"");
    let at = html.find(&needle).unwrap_or_else(|| panic!("no number {key} on the page"));
    let rest = &html[at + needle.len()..];
    let (value, rest) = rest.split_once('"').expect("closing quote");
    let text = rest.split_once('>').and_then(|(_, r)| r.split_once('<')).map(|(t, _)| t).expect("cell text");
    (value.parse().expect("data-value is a number"), text.to_string())
}

#[test]
fn run_json_summary_names_steps_fingerprints_and_the_report() {
    let (scratch, summary) = quickstart();
    assert_eq!(summary["status"], "succeeded", "{summary:#}");
    assert_eq!(summary["campaign"], "quickstart");
    let headline = step(summary, "headline");
    assert_eq!(headline["kind"], "cell");
    assert_eq!(headline["status"], "ran");
    assert_eq!(headline["fingerprint"].as_str().map(str::len), Some(64));
    assert!(headline["duration_ms"].is_u64());
    let report = summary["report"].as_str().expect("report path");
    assert!(scratch.path().join(report).is_file(), "{report} written");
}

/// Tests that run the recipe again get their own store: a rerun rewrites
/// the campaign outputs the shared run's report reads.
#[test]
fn a_rerun_in_json_and_colour_follows_no_color_and_the_flag() {
    let scratch = Scratch::new();
    scratch.write("recipes/quickstart.kdl", QUICKSTART);
    scratch.run(Path::new("recipes/quickstart.kdl"), &[], 0);
    // Run again: every measured step cached, the JSON says so.
    let again = scratch.anvil(&["run", "recipes/quickstart.kdl", "--json"]).expect_code(0).json();
    let steps = again["steps"].as_array().expect("steps");
    assert!(steps.iter().filter(|s| s["kind"] != "finally").all(|s| s["status"] == "cached"), "{again:#}");
    assert!(again["report"].is_null(), "not written without --report");

    // The scratch commands set NO_COLOR; stdout is a pipe: plain lines, no animation.
    let plain = scratch.anvil(&["run", "recipes/quickstart.kdl"]).expect_code(0);
    assert!(!plain.stderr.contains('\x1b') && !plain.stdout.contains('\x1b'), "{}", plain.stderr);
    assert!(plain.stderr.contains("  cached   cell     headline"), "{}", plain.stderr);
    assert!(plain.stdout.contains("report: anvil report recipes/quickstart.kdl"), "{}", plain.stdout);
    let always = scratch.anvil(&["--color", "always", "run", "recipes/quickstart.kdl"]).expect_code(0);
    assert!(always.stderr.contains("\x1b[2mcached"), "{}", always.stderr);
    let never = scratch.anvil(&["--color", "never", "run", "recipes/quickstart.kdl"]).expect_code(0);
    assert!(!never.stderr.contains('\x1b'));
}

#[test]
fn the_page_is_self_contained_and_has_every_section() {
    let (scratch, summary) = quickstart();
    let html = std::fs::read_to_string(scratch.path().join(summary["report"].as_str().unwrap())).unwrap();
    for forbidden in ["<script", "<link", "src=", "url(", "@import", "@font-face"] {
        assert!(!html.contains(forbidden), "the page must fetch nothing: found {forbidden}");
    }
    let outside: Vec<&str> = html
        .match_indices("http")
        .map(|(i, _)| &html[i..(i + 40).min(html.len())])
        .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
        .collect();
    assert!(outside.is_empty(), "no address other than the SVG namespace: {outside:?}");
    for id in
        ["simulated", "campaign", "decision", "gates", "screens", "headline", "across", "cells", "steps"]
    {
        assert!(html.contains(&format!("id=\"{id}\"")), "section {id}");
    }
    assert!(html.contains("SIMULATED SERVERS"), "the simulated banner");
    let plots = html.matches("<svg class=\"plot\"").count();
    // A screen, two across cells, seven per cell (3 cells).
    assert!(plots >= 3 + 3 * 7, "{plots} plots");
    assert_eq!(
        plots,
        html.matches("<details class=\"data\"><summary>data").count(),
        "every plot has its data table"
    );
    for name in ["screen-step4", "screen-step12", "headline"] {
        assert!(html.contains(&format!(
            "anvil show {}",
            &step(summary, name)["fingerprint"].as_str().unwrap()[..12]
        )));
    }
}

#[test]
fn markdown_and_csv_exports() {
    let (scratch, summary) = quickstart();
    let md = scratch.anvil(&["report", "recipes/quickstart.kdl", "--format", "md"]).expect_code(0).stdout;
    assert!(md.starts_with("## quickstart"), "{md}");
    assert!(md.contains("SIMULATED SERVERS"));
    assert!(md.contains("| gate fast-is-faster | **passed** |"), "{md}");
    assert!(md.contains("| decode-step | aggregate_tok_s | `screen-step4` |"), "{md}");
    assert!(md.contains("`step4-throughput-winner`"), "{md}");

    let csv = scratch.anvil(&["report", "recipes/quickstart.kdl", "--format", "csv"]).expect_code(0).stdout;
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    assert_eq!(header[..3], ["cell", "status", "fingerprint"]);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "one row per cell: {csv}");
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("column {name}"));
    let headline = rows.iter().find(|r| r[0] == "headline").expect("headline row");
    let fp = step(summary, "headline")["fingerprint"].as_str().unwrap();
    assert_eq!(headline[col("fingerprint")], fp);
    let stored = stored_result(scratch, fp);
    for key in ["aggregate_tok_s", "ttft_p50_ms", "ttft_p99_ms", "decode_tok_s_mean"] {
        let value: f64 = headline[col(key)].parse().expect("a number");
        assert_eq!(value, stored[key].as_f64().unwrap(), "{key}");
    }
    assert_eq!(headline[col("simulated")], "true");
    assert_eq!(headline[col("requests")], "24");

    // -o writes the file instead.
    scratch.anvil(&["report", "recipes/quickstart.kdl", "--format", "csv", "-o", "cells.csv"]).expect_code(0);
    assert_eq!(scratch.read("cells.csv"), csv);
}

#[test]
fn reports_from_a_run_id_and_from_a_bundle() {
    let (scratch, summary) = quickstart();
    let run_id = summary["run_id"].as_str().unwrap();
    scratch.anvil(&["report", "--run", run_id, "-o", "by-id.html"]).expect_code(0);
    scratch.anvil(&["export", "recipes/quickstart.kdl", "-o", "quickstart.anvil"]).expect_code(0);
    let from_bundle = scratch.anvil(&["report", "quickstart.anvil", "-o", "from-bundle.html"]).expect_code(0);
    let fp = step(summary, "headline")["fingerprint"].as_str().unwrap();
    let stored = stored_result(scratch, fp)["aggregate_tok_s"].as_f64().unwrap();
    for page in ["by-id.html", "from-bundle.html"] {
        let html = scratch.read(page);
        assert!(html.contains(run_id), "{page} names the run");
        assert_eq!(metric_cell(&html, "headline.aggregate_tok_s").0, stored, "{page}");
        assert!(html.contains("id=\"headline\""), "{page}: the decision summary was found");
        assert!(!html.contains("No decision summary of this run"), "{page}");
    }
    assert!(scratch.read("from-bundle.html").contains("bundle quickstart.anvil"), "{}", from_bundle.stderr);
    // A recipe that never ran is an input error.
    scratch.write("recipes/other.kdl", &QUICKSTART.replace("campaign \"quickstart\"", "campaign \"other\""));
    let never = scratch.anvil(&["report", "recipes/other.kdl"]).expect_code(2);
    assert!(never.stderr.contains("has no recorded run"), "{}", never.stderr);
}

#[test]
fn completions_and_man_page() {
    let scratch = Scratch::new();
    let bash = scratch.anvil(&["completions", "bash"]).expect_code(0).stdout;
    assert!(bash.contains("_anvil()") && bash.contains("report"), "bash completion");
    let zsh = scratch.anvil(&["completions", "zsh"]).expect_code(0).stdout;
    assert!(zsh.starts_with("#compdef anvil"), "zsh completion");
    let fish = scratch.anvil(&["completions", "fish"]).expect_code(0).stdout;
    assert!(fish.contains("complete -c anvil"), "fish completion");
    let man = scratch.anvil(&["man"]).expect_code(0).stdout;
    assert!(man.contains(".TH anvil"), "roff title");
    assert!(man.contains("report"), "lists the subcommands");
}

// ---- the browser ----

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"].iter().find_map(|b| which(b))
}

fn which(binary: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(binary)).find(|p| p.is_file())
}

fn headless(browser: &Path, page: &Path, args: &[&str]) -> std::process::Output {
    let url = format!("file://{}", page.display());
    Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,2400"])
        .args(["--virtual-time-budget=5000"])
        .args(args)
        .arg(url)
        .output()
        .expect("start chromium")
}

#[test]
fn quickstart_report_in_a_real_browser() {
    let Some(browser) = chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!("headless Chromium is required in CI for the report test: apt-get install -y chromium");
        }
        eprintln!("NOTICE: skipping the browser test: no chromium on PATH (apt-get install -y chromium)");
        return;
    };
    let (scratch, summary) = quickstart();
    let page = scratch.path().join(summary["report"].as_str().unwrap());

    // A screenshot that is not blank.
    let png = scratch.path().join("report.png");
    let shot = headless(&browser, &page, &[&format!("--screenshot={}", png.display())]);
    assert!(shot.status.success(), "chromium --screenshot: {}", String::from_utf8_lossy(&shot.stderr));
    let image = png::decode(&std::fs::read(&png).expect("the screenshot")).expect("a PNG chromium wrote");
    let (colours, ink) = image.colour_stats();
    eprintln!(
        "screenshot: {}x{}, {colours} distinct colours, {:.1}% non-white",
        image.width,
        image.height,
        ink * 100.0
    );
    assert!(colours > 64, "a blank or nearly blank page: {colours} colours");
    assert!(ink > 0.05, "a blank or nearly blank page: {:.1}% non-white", ink * 100.0);

    // The DOM after rendering: the numbers shown are the stored ones.
    let dom = headless(&browser, &page, &["--dump-dom"]);
    assert!(dom.status.success(), "chromium --dump-dom: {}", String::from_utf8_lossy(&dom.stderr));
    let dom = String::from_utf8(dom.stdout).expect("utf-8 DOM");
    assert!(dom.matches("<svg class=\"plot\"").count() >= 20, "plots in the rendered DOM");
    assert!(dom.contains("SIMULATED SERVERS"));

    let fp = step(summary, "headline")["fingerprint"].as_str().unwrap();
    let stored = stored_result(scratch, fp);
    let tok_s = stored["aggregate_tok_s"].as_f64().unwrap();
    let (value, text) = metric_cell(&dom, "headline.aggregate_tok_s");
    assert_eq!(value, tok_s, "aggregate tok/s in the DOM");
    assert_eq!(text, shown(tok_s), "aggregate tok/s as shown");

    let decision = decision_summary(scratch);
    let simulated = decision["limitations"]
        .as_array()
        .and_then(|l| l.iter().filter_map(Value::as_str).find(|l| l.starts_with("Simulated engine:")))
        .expect("a limitation names the simulated cells");
    assert!(
        simulated.starts_with("Simulated engine: headline, screen-step12, screen-step4 measured"),
        "every simulated cell, headline or not: {simulated}"
    );
    let p50 = decision["headline_results"][0]["ttft_ms"]["p50"].as_f64().unwrap();
    assert_eq!(p50, stored["metrics"]["ttft_p50_ms"].as_f64().unwrap(), "the summary is the stored cell");
    let (value, text) = metric_cell(&dom, "headline.ttft_ms.p50");
    assert_eq!(value, p50, "headline TTFT p50 in the DOM");
    assert_eq!(text, shown(p50), "headline TTFT p50 as shown");

    let gates = decision["gates"].as_array().expect("gates");
    assert!(gates.len() >= 4);
    for gate in gates {
        let (name, status) = (gate["name"].as_str().unwrap(), gate["status"].as_str().unwrap());
        let cell = format!("data-gate=\"{name}\">{status}</td>");
        assert!(dom.contains(&cell), "gate {name} shown as {status}");
    }
    // The screen's winner.
    assert!(dom.contains("data-screen=\"decode-step\">screen-step4</strong>"));
}

/// Just enough PNG decoding (8-bit RGB/RGBA, non-interlaced, as Chromium
/// writes them) to count what a screenshot shows.
mod png {
    use std::collections::HashSet;
    use std::io::Read;

    pub struct Image {
        pub width: usize,
        pub height: usize,
        channels: usize,
        pixels: Vec<u8>,
    }

    impl Image {
        /// Distinct colours, and the fraction of pixels that are not white.
        pub fn colour_stats(&self) -> (usize, f64) {
            let mut seen = HashSet::new();
            let mut ink = 0usize;
            for px in self.pixels.chunks(self.channels) {
                let rgb = [px[0], px[1], px[2]];
                if rgb.iter().any(|&c| c < 245) {
                    ink += 1;
                }
                seen.insert(rgb);
            }
            (seen.len(), ink as f64 / (self.width * self.height).max(1) as f64)
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Image, String> {
        if bytes.get(..8) != Some(b"\x89PNG\r\n\x1a\n") {
            return Err("not a PNG".into());
        }
        let (mut at, mut idat, mut header) = (8, Vec::new(), None);
        while at + 8 <= bytes.len() {
            let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            let kind = &bytes[at + 4..at + 8];
            let data = bytes.get(at + 8..at + 8 + len).ok_or("truncated chunk")?;
            match kind {
                b"IHDR" => header = Some(data.to_vec()),
                b"IDAT" => idat.extend_from_slice(data),
                b"IEND" => break,
                _ => {}
            }
            at += 12 + len;
        }
        let h = header.ok_or("no IHDR")?;
        let width = u32::from_be_bytes(h[0..4].try_into().unwrap()) as usize;
        let height = u32::from_be_bytes(h[4..8].try_into().unwrap()) as usize;
        let channels = match (h[8], h[9], h[12]) {
            (8, 2, 0) => 3,
            (8, 6, 0) => 4,
            other => return Err(format!("unsupported PNG (depth, colour, interlace) {other:?}")),
        };
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(&idat[..]).read_to_end(&mut raw).map_err(|e| e.to_string())?;
        let stride = width * channels;
        let mut pixels = vec![0u8; stride * height];
        for y in 0..height {
            let line = raw.get(y * (stride + 1)..(y + 1) * (stride + 1)).ok_or("short image data")?;
            let (filter, line) = (line[0], &line[1..]);
            for x in 0..stride {
                let a = if x >= channels { pixels[y * stride + x - channels] as i32 } else { 0 };
                let b = if y > 0 { pixels[(y - 1) * stride + x] as i32 } else { 0 };
                let c =
                    if x >= channels && y > 0 { pixels[(y - 1) * stride + x - channels] as i32 } else { 0 };
                let predicted = match filter {
                    0 => 0,
                    1 => a,
                    2 => b,
                    3 => (a + b) / 2,
                    4 => {
                        let p = a + b - c;
                        let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                        if pa <= pb && pa <= pc {
                            a
                        } else if pb <= pc {
                            b
                        } else {
                            c
                        }
                    }
                    f => return Err(format!("bad filter {f}")),
                };
                pixels[y * stride + x] = (line[x] as i32 + predicted) as u8;
            }
        }
        Ok(Image { width, height, channels, pixels })
    }
}
