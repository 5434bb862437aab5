//! Capturing a server's stdout and stderr: every line goes, unmodified and
//! in arrival order, to the log file; the last lines are kept in memory for
//! error messages; and each line can be matched against the readiness
//! pattern.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};

use regex::Regex;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How many recent lines stay in memory.
const TAIL_CAPACITY: usize = 500;

/// The shared sink both output streams write into.
pub struct ServerLog {
    file: Mutex<File>,
    tail: Mutex<VecDeque<String>>,
    ready_pattern: Option<Regex>,
    /// Flips to true on the first line matching `ready_pattern`.
    pattern_seen: watch::Sender<bool>,
}

impl ServerLog {
    pub fn new(file: File, ready_pattern: Option<Regex>) -> Arc<Self> {
        Arc::new(ServerLog {
            file: Mutex::new(file),
            tail: Mutex::new(VecDeque::with_capacity(TAIL_CAPACITY)),
            ready_pattern,
            pattern_seen: watch::Sender::new(false),
        })
    }

    pub fn watch_pattern(&self) -> watch::Receiver<bool> {
        self.pattern_seen.subscribe()
    }

    /// Starts a task copying `stream` into the log until it closes.
    pub fn forward<R>(self: &Arc<Self>, stream: R) -> JoinHandle<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let log = Arc::clone(self);
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => log.record_line(&line),
                }
            }
        })
    }

    fn record_line(&self, raw: &[u8]) {
        if let Ok(mut file) = self.file.lock() {
            // A full disk must not stop the server; the tail still works.
            let _ = file.write_all(raw);
            if !raw.ends_with(b"\n") {
                let _ = file.write_all(b"\n");
            }
        }
        let text = String::from_utf8_lossy(raw);
        let text = text.trim_end_matches(['\n', '\r']);
        if let Some(pattern) = &self.ready_pattern
            && !*self.pattern_seen.borrow()
            && pattern.is_match(text)
        {
            self.pattern_seen.send_replace(true);
        }
        if let Ok(mut tail) = self.tail.lock() {
            if tail.len() == TAIL_CAPACITY {
                tail.pop_front();
            }
            tail.push_back(text.to_string());
        }
    }

    /// The last `lines` lines, joined with newlines.
    pub fn tail(&self, lines: usize) -> String {
        let Ok(tail) = self.tail.lock() else {
            return String::new();
        };
        let skip = tail.len().saturating_sub(lines);
        tail.iter().skip(skip).cloned().collect::<Vec<_>>().join("\n")
    }
}
