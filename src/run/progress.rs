//! What the terminal shows while a run goes on: a line per finished step,
//! and a live line of what is running (only when both stdout and stderr are
//! a terminal, so CI logs and pipes get plain lines). The ending word is
//! coloured when `crate::terminal::color_enabled()` says so (`--color`, `NO_COLOR`).

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::executor::interface::Ending;
use crate::step_kind::Kind;

pub struct Progress {
    bar: Option<ProgressBar>,
    running: Mutex<BTreeSet<String>>,
    /// Live numbers of running cells: name → "40/100 512 tok/s".
    cells: Mutex<std::collections::BTreeMap<String, String>>,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        let animate = std::io::stderr().is_terminal() && std::io::stdout().is_terminal();
        let bar = animate.then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{pos}/{len}] {elapsed} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress { bar, running: Mutex::new(BTreeSet::new()), cells: Mutex::new(Default::default()) }
    }

    pub fn set_total(&self, total: usize) {
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
        }
    }

    /// A cell's live line: requests done of total, throughput, failures.
    pub fn cell(&self, name: &str, done: u32, total: u32, tok_s: f64, failed: u32) {
        let line = format!(
            "{done}/{total} {tok_s:.0} tok/s{}",
            if failed > 0 { format!(" {failed} failed") } else { String::new() }
        );
        self.cells.lock().unwrap_or_else(|e| e.into_inner()).insert(name.to_string(), line);
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        self.show(&running);
    }

    pub fn started(&self, name: &str, kind: Kind) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.insert(format!("{kind} {name}"));
        self.show(&running);
    }

    pub fn finished(
        &self,
        name: &str,
        kind: Kind,
        ending: Ending,
        detail: &str,
        duration: Duration,
        counted: bool,
    ) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.remove(&format!("{kind} {name}"));
        self.cells.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
        let first_line = detail.lines().next().unwrap_or("");
        let line = format!(
            "  {} {:<8} {:<28} {:>7}  {}",
            paint(ending, &format!("{:<8}", ending.as_str())),
            kind.as_str(),
            name,
            format_duration(duration),
            first_line
        );
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                if counted {
                    bar.inc(1);
                }
            }
            None => eprintln!("{line}"),
        }
        self.show(&running);
    }

    fn show(&self, running: &BTreeSet<String>) {
        if let Some(bar) = &self.bar {
            let cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
            let parts: Vec<String> = running
                .iter()
                .map(|r| match r.split_once(' ').and_then(|(_, name)| cells.get(name)) {
                    Some(live) => format!("{r} [{live}]"),
                    None => r.clone(),
                })
                .collect();
            bar.set_message(format!("running: {}", parts.join(", ")));
        }
    }

    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The ending word in its colour (green ran, red failed or rejected, dim
/// cached or skipped), or as it is when colour is off.
fn paint(ending: Ending, word: &str) -> String {
    if !crate::terminal::color_enabled() {
        return word.to_string();
    }
    let code = match ending {
        Ending::Ran => "32",
        Ending::Failed | Ending::Rejected => "31;1",
        _ => "2",
    };
    format!("\x1b[{code}m{word}\x1b[0m")
}

pub fn format_duration(d: Duration) -> String {
    if d.is_zero() {
        "-".into()
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}
