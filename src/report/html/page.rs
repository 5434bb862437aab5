//! The page being written: its text so far, its head and the shape of a
//! section, shared by every section's file.

use std::fmt::Write;

pub(super) use crate::report::plot::escape;

use crate::report::model::Report;

pub(super) struct Page {
    pub(super) out: String,
    pub(super) tables: usize,
}

impl Page {
    pub(super) fn push(&mut self, s: &str) {
        self.out.push_str(s);
    }

    pub(super) fn head(&mut self, report: &Report) {
        let _ = write!(
            self.out,
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"generator\" content=\"anvil {}\">\n<title>{} — anvil report</title>\n<style>{}</style>\n</head>\n<body>\n",
            escape(env!("CARGO_PKG_VERSION")),
            escape(&report.campaign),
            CSS
        );
    }

    pub(super) fn section(&mut self, id: &str, title: &str) {
        let _ = writeln!(self.out, "<section id=\"{id}\"><h2>{}</h2>", escape(title));
    }

    pub(super) fn end(&mut self) {
        self.out.push_str("</section>\n");
    }
}

const CSS: &str = r#"
:root{--fg:#1b1f24;--muted:#5b6470;--line:#d9dee4;--bg:#fff;--pass:#0a7a45;--fail:#b3261e;--warn:#8a5a00;--accent:#0072b2}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header,main,nav,footer{max-width:1240px;margin:0 auto;padding:0 20px}
header h1{margin:18px 0 4px;font-size:26px}
.lead{font-size:16px;margin:0 0 6px}
.meta,.note,footer{color:var(--muted)}
nav ul{list-style:none;padding:0;margin:8px 0 0;display:flex;flex-wrap:wrap;gap:6px 14px;border-bottom:1px solid var(--line);padding-bottom:8px}
nav a{color:var(--accent);text-decoration:none}
section{margin:22px 0;padding-top:4px}
h2{font-size:20px;border-bottom:2px solid var(--line);padding-bottom:4px;margin:0 0 10px}
h3{font-size:16px;margin:16px 0 6px}h4{font-size:14px;margin:12px 0 4px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}
thead th{background:#f3f5f7}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.kv td:first-child{color:var(--muted)}
table.kv thead{display:none}
.wide{overflow-x:auto}
.cols{display:flex;flex-wrap:wrap;gap:8px 28px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:10px 18px}
figure{margin:6px 0;border:1px solid var(--line);border-radius:6px;padding:6px 8px;background:#fff}
figcaption{color:var(--muted);font-size:12px;margin:2px 0}
svg.plot{width:100%;max-width:860px;height:auto;display:block}
details.identities>summary h3{display:inline}details.identities>summary{cursor:pointer}
details.data summary{cursor:pointer;color:var(--accent);font-size:12px}
details.cell{border:1px solid var(--line);border-radius:8px;padding:6px 12px;margin:10px 0;background:#fcfcfd}
details.cell>summary{cursor:pointer;font-size:15px;padding:4px 0}
.status.passed,.passed,.ok{color:var(--pass);font-weight:600}
.status.rejected,.status.failed,.rejected,.bad{color:var(--fail);font-weight:600}
.status.missing,.status.skipped,.status.undecided{color:var(--warn);font-weight:600}
.label{display:inline-block;background:#e8f1fa;border:1px solid #b9d3ea;border-radius:12px;padding:1px 10px;margin:2px 4px 2px 0;font-weight:600}
.winner{color:var(--pass)}.no-difference{color:var(--warn)}
.banner-sim{background:#fff3cd;border-bottom:4px solid #d08c00;color:#5c3b00;padding:14px 20px;font-size:17px;text-align:center}
.sim-tag{background:#fff3cd;border:1px solid #d08c00;border-radius:4px;padding:0 6px;font-size:12px}
pre{margin:0;white-space:pre-wrap;font-size:12px}
code{font-size:12px;background:#f3f5f7;padding:0 3px;border-radius:3px}
footer{border-top:1px solid var(--line);padding:10px 20px 30px}
@media print{details{display:block}nav{display:none}}
"#;
