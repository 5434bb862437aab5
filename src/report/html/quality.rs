//! The Quality section: each scored cell's accuracy with its 95% interval,
//! then each arm comparison a gate made: for `lossless`, the identical
//! share against the control's own rerun and where the first differing
//! outputs diverged (excerpts of both sides); for `accuracy-not-worse`,
//! both accuracies, McNemar's verdict, the difference's interval and the
//! items the arms disagree on.

use std::fmt::Write;

use super::format::num;
use super::link::step_link;
use super::page::{Page, escape};
use super::table::{num_td, status_td};
use crate::report::model::{Body, Report, Step};
use crate::results::{Comparison, Identical, Lossless, NotWorse, PairedAccuracy, Requirement};

pub(super) fn quality(page: &mut Page, report: &Report) {
    page.section("quality", "Quality");
    let accuracy = accuracy_rows(report);
    let compared: Vec<(&Step, &Requirement, &Comparison)> = report
        .steps
        .iter()
        .filter_map(|s| match &s.body {
            Body::Gate(g) => {
                Some(g.requirements.iter().filter_map(move |r| Some((s, r, r.compared.as_ref()?))))
            }
            _ => None,
        })
        .flatten()
        .collect();
    if accuracy.is_empty() && compared.is_empty() {
        page.push("<p class=\"note\">No answers were scored or compared.</p>");
    }
    if !accuracy.is_empty() {
        page.push("<h3>Accuracy</h3><p class=\"note\">Each cell's share of its scored dataset's answers that its scorers call right, with the exact (Clopper–Pearson) 95% interval.</p>");
        page.table("quality", &["cell", "dataset", "right", "accuracy", "95% low", "95% high"], &accuracy);
    }
    for (step, requirement, comparison) in compared {
        let _ = write!(
            page.out,
            "<h3>gate {} — <code>{}</code></h3>",
            step_link(step),
            escape(&requirement.require)
        );
        let label = format!("gate {}: {}", step.name, requirement.require);
        page.table(
            "quality",
            &["status", "errs at most", "detail"],
            &[vec![
                status_td(&label, requirement.status.as_str()),
                num_td("error_at_most", requirement.error_at_most),
                escape(&requirement.detail),
            ]],
        );
        match comparison {
            Comparison::Lossless(l) => lossless(page, l),
            Comparison::AccuracyNotWorse(n) => not_worse(page, n),
        }
    }
    page.end();
}

fn accuracy_rows(report: &Report) -> Vec<Vec<String>> {
    let cells = report.steps.iter().filter_map(|s| match &s.body {
        Body::Cell(cell) => Some((s, cell.result.accuracy.as_ref()?, cell.result.simulated)),
        _ => None,
    });
    cells
        .map(|(step, a, simulated)| {
            let tag = if simulated { " <span class=\"sim-tag\">simulated</span>" } else { "" };
            vec![
                format!("{}{tag}", step_link(step)),
                escape(&a.dataset),
                format!("{}/{}", a.correct, a.n),
                num_td("accuracy", a.share),
                num_td("accuracy_low", Some(a.share_ci95_low)),
                num_td("accuracy_high", Some(a.share_ci95_high)),
            ]
        })
        .collect()
}

fn identical_row(what: &str, share: &Identical) -> Vec<String> {
    vec![
        escape(what),
        format!("{}/{}", share.identical, share.n),
        num_td("identical", share.share),
        num_td("identical_low", Some(share.share_ci95_low)),
        num_td("identical_high", Some(share.share_ci95_high)),
    ]
}

fn lossless(page: &mut Page, found: &Lossless) {
    let mut rows =
        vec![identical_row(&format!("{} against {}", found.arm, found.control), &found.arm_vs_control)];
    match &found.control_vs_rerun {
        Some(rerun) => rows.push(identical_row(&format!("{} against its rerun", found.control), rerun)),
        None => rows.push(vec![
            escape(&format!("{}: no rerun", found.control)),
            "—".into(),
            "—".into(),
            "—".into(),
            "—".into(),
        ]),
    }
    page.table("quality", &["outputs", "identical", "share", "95% low", "95% high"], &rows);
    let _ = write!(
        page.out,
        "<p class=\"note\">Cause: <strong>{}</strong> (Fisher's exact one-sided p = {}).</p>",
        escape(&found.cause),
        num(Some(found.p_value))
    );
    divergences(page, &format!("Where {} diverged from {}", found.arm, found.control), &found.diverged);
    divergences(page, &format!("Where {}'s rerun diverged", found.control), &found.rerun_diverged);
}

fn divergences(page: &mut Page, title: &str, shown: &[crate::results::Diverged]) {
    if shown.is_empty() {
        return;
    }
    let _ = write!(page.out, "<p><strong>{}</strong> (the first {}):</p>", escape(title), shown.len());
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|d| {
            vec![
                escape(&d.prompt),
                format!("{} {}", escape(&d.unit), d.at),
                format!("<code>{}</code>", escape(&d.excerpt_arm)),
                format!("<code>{}</code>", escape(&d.excerpt_control)),
            ]
        })
        .collect();
    page.table("quality", &["prompt", "first difference", "arm", "control"], &rows);
}

fn accuracy_row(what: &str, a: &PairedAccuracy) -> Vec<String> {
    vec![
        escape(what),
        format!("{}/{}", a.correct, a.n),
        num_td("accuracy", a.share),
        num_td("accuracy_low", Some(a.share_ci95_low)),
        num_td("accuracy_high", Some(a.share_ci95_high)),
    ]
}

fn not_worse(page: &mut Page, found: &NotWorse) {
    let rows = vec![
        accuracy_row(&found.arm, &found.arm_accuracy),
        accuracy_row(&found.control, &found.control_accuracy),
    ];
    page.table("quality", &["arm", "right", "accuracy", "95% low", "95% high"], &rows);
    let _ = write!(
        page.out,
        "<p class=\"note\">On the {} items both answered: {} right only for {}, {} only for {}; McNemar: <strong>{}</strong> (exact p = {}); {} minus {}: [{}, {}] at {}, margin {}.</p>",
        found.n,
        found.only_arm,
        escape(&found.arm),
        found.only_control,
        escape(&found.control),
        escape(&found.mcnemar),
        num(Some(found.p_value)),
        escape(&found.arm),
        escape(&found.control),
        num(Some(found.difference_low)),
        num(Some(found.difference_high)),
        found.level,
        found.margin,
    );
    if found.disagreements.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = found
        .disagreements
        .iter()
        .map(|d| {
            let right = if d.arm_correct { &found.arm } else { &found.control };
            vec![
                escape(&d.item),
                escape(right),
                escape(d.arm_extracted.as_deref().unwrap_or("—")),
                escape(d.control_extracted.as_deref().unwrap_or("—")),
            ]
        })
        .collect();
    let _ = write!(page.out, "<p><strong>Items they disagree on</strong> (the first {}):</p>", rows.len());
    page.table(
        "quality",
        &["item", "right", &format!("{} read", found.arm), &format!("{} read", found.control)],
        &rows,
    );
}
