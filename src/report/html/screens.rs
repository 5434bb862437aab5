//! The Screens section: each screen's verdict and its variants as bars,
//! with whiskers from the across-repeats intervals of the cells measured.

use std::fmt::Write;

use serde::Deserialize as _;

use super::link::step_link;
use super::page::{Page, escape};
use super::table::num_td;
use crate::report::model::{Body, Report, Step};
use crate::report::plot::{self, Bar};
use crate::results::ScreenResult;

/// The across-repeats key of a screen metric, for its whiskers.
fn repeats_key(metric: &str) -> &str {
    match metric {
        "aggregate_tok_s" => "throughput_tok_s",
        other => other,
    }
}

pub(super) fn screens(page: &mut Page, report: &Report) {
    page.section("screens", "Screens");
    let screens: Vec<(&Step, &ScreenResult)> = report
        .steps
        .iter()
        .filter_map(|s| match &s.body {
            Body::Screen(r) => Some((s, r)),
            _ => None,
        })
        .collect();
    if screens.is_empty() {
        page.push("<p class=\"note\">No screens.</p>");
    }
    for (step, screen) in screens {
        let _ = write!(page.out, "<h3>screen {}</h3>", step_link(step));
        if let Some(d) = &step.description {
            let _ = write!(page.out, "<p>{}</p>", escape(d));
        }
        let verdict = if let Some(winner) = screen.winner.as_ref().filter(|_| screen.meaningful) {
            format!(
                "winner <strong class=\"winner\" data-screen=\"{0}\">{1}</strong>",
                escape(&step.name),
                escape(winner)
            )
        } else if screen.winner.is_none() {
            format!(
                "<strong class=\"no-difference\" data-screen=\"{}\">undecided at 95% confidence</strong>, no winner (best measured: {})",
                escape(&step.name),
                escape(screen.best_measured())
            )
        } else {
            format!(
                "<strong class=\"no-difference\" data-screen=\"{}\">no meaningful difference</strong> (best measured: {})",
                escape(&step.name),
                escape(screen.best_measured())
            )
        };
        let _ = write!(page.out, "<p>{verdict} — {}</p>", escape(&screen.selection_reason));
        let mut bars = Vec::new();
        let mut rows = Vec::new();
        // Speculative acceptance from the server's own counters, where its cells have it.
        let acceptance = |name: &str| {
            let cell = report.cells().find(|(s, _)| s.name == name).map(|(_, c)| c)?;
            cell.artifact.telemetry.as_ref()?.server_derived.as_ref()?.spec_acceptance_rate
        };
        let with_acceptance = screen.values.iter().any(|(name, _)| acceptance(name).is_some());
        for (name, value) in screen.values.iter() {
            let cell = report.cells().find(|(s, _)| s.name == name).map(|(_, c)| c);
            let across = cell
                .and_then(|c| c.result.repeats.get(repeats_key(&screen.metric)))
                .and_then(|a| anvil_loadgen::AcrossRepeats::deserialize(a).ok());
            let ci = across.and_then(|a| Some((a.ci95_low?, a.ci95_high?)));
            let samples = across.map_or(1, |a| a.samples as u64);
            let rank = screen.ranking.iter().position(|r| r == name).map(|i| i + 1);
            let winner = screen.meaningful && screen.winner.as_deref() == Some(name);
            bars.push(Bar {
                label: name.to_string(),
                value: value.unwrap_or(0.0),
                interval: ci,
                highlight: winner,
            });
            let mut row = vec![
                escape(name),
                num_td(&format!("{}.{}", name, screen.metric), *value),
                num_td("ci95_low", ci.map(|c| c.0)),
                num_td("ci95_high", ci.map(|c| c.1)),
                samples.to_string(),
                rank.map_or_else(|| "—".into(), |r| r.to_string()),
                if winner { "winner".into() } else { String::new() },
            ];
            if with_acceptance {
                row.push(num_td("spec_acceptance_rate", acceptance(name)));
            }
            rows.push(row);
        }
        let title = format!("{} by {} ({})", step.name, screen.metric, screen.goal.as_str());
        let svg = plot::bars(&title, &screen.metric, &bars);
        let caption = if let Some(winner) = screen.winner.as_ref().filter(|_| screen.meaningful) {
            format!(
                "The winner ({winner}) is green; whiskers are 95% intervals across repeats where there are repeats."
            )
        } else {
            "No meaningful difference: no bar is marked as the winner. Whiskers are 95% intervals across repeats where there are repeats.".into()
        };
        let mut header = vec!["variant", &screen.metric, "ci95 low", "ci95 high", "repeats", "rank", ""];
        if with_acceptance {
            header.push("draft acceptance");
        }
        page.figure(&svg, &caption, &header, &rows);
    }
    page.end();
}
