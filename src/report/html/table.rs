//! Data tables, the plots' figures (a plot with its numbers folded under
//! it), and the table cells that carry a machine-readable value.

use std::fmt::Write;

use super::format::num;
use super::page::{Page, escape};

impl Page {
    /// A table: header cells, then rows of already-escaped cell HTML.
    pub(super) fn table(&mut self, class: &str, header: &[&str], rows: &[Vec<String>]) {
        self.tables += 1;
        let _ = write!(self.out, "<table class=\"{class}\"><thead><tr>");
        for h in header {
            let _ = write!(self.out, "<th scope=\"col\">{}</th>", escape(h));
        }
        self.out.push_str("</tr></thead><tbody>");
        for row in rows {
            self.out.push_str("<tr>");
            for cell in row {
                if cell.starts_with("<td") || cell.starts_with("<th") {
                    self.out.push_str(cell);
                } else {
                    let _ = write!(self.out, "<td>{cell}</td>");
                }
            }
            self.out.push_str("</tr>");
        }
        self.out.push_str("</tbody></table>\n");
    }

    /// A plot and its numbers as a table, folded under it.
    pub(super) fn figure(&mut self, svg: &str, caption: &str, header: &[&str], rows: &[Vec<String>]) {
        self.out.push_str("<figure>");
        self.out.push_str(svg);
        let _ = write!(self.out, "<figcaption>{}</figcaption>", escape(caption));
        let _ = write!(self.out, "<details class=\"data\"><summary>data ({} rows)</summary>", rows.len());
        self.table("data", header, rows);
        self.out.push_str("</details></figure>\n");
    }
}

/// A table cell holding a number, with its exact stored value in `data-value`.
pub(super) fn num_td(key: &str, value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => {
            format!(
                "<td class=\"num\" data-metric=\"{}\" data-value=\"{v}\">{}</td>",
                escape(key),
                num(value)
            )
        }
        _ => format!("<td class=\"num\" data-metric=\"{}\">—</td>", escape(key)),
    }
}

pub(super) fn status_td(label: &str, status: &str) -> String {
    format!("<td class=\"status {0}\" data-gate=\"{1}\">{0}</td>", escape(status), escape(label))
}
