//! Server-side ground truth: when the sim wrote each part of each response.
//! A client benchmark can be checked against it (`GET /debug/ground-truth`,
//! or the JSONL `ground-truth-file`).
//!
//! "Written" means handed to the HTTP layer for sending; the kernel send
//! follows within microseconds on loopback.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// A moment on both clocks.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Stamp {
    /// Wall clock, ns since the Unix epoch.
    pub unix_ns: u64,
    /// Monotonic clock, ns since the sim started.
    pub mono_ns: u64,
}

/// One chunk of a streamed response.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ChunkRecord {
    #[serde(flatten)]
    pub at: Stamp,
    /// Tokens this chunk carries (0 for role, usage and closing events).
    pub tokens: u32,
    pub bytes: usize,
}

/// Everything the sim knows about one request's response.
#[derive(Debug, Clone, Serialize)]
pub struct GroundTruthRecord {
    pub request_id: String,
    pub endpoint: &'static str,
    pub canary: Option<String>,
    pub stream: bool,
    pub received: Stamp,
    pub first_byte: Option<Stamp>,
    pub last_byte: Option<Stamp>,
    pub chunks: Vec<ChunkRecord>,
    pub prompt_tokens: u32,
    pub cached_tokens: u32,
    pub completion_tokens: u32,
    pub finish_reason: Option<&'static str>,
    pub faults: Vec<&'static str>,
    /// completed, http-error, disconnected (fault), client-gone, engine-stopped.
    pub outcome: &'static str,
    pub http_status: u16,
}

/// The store of finished records.
pub struct GroundTruthLog {
    enabled: bool,
    started: Instant,
    records: Mutex<Vec<GroundTruthRecord>>,
    file: Option<Mutex<File>>,
}

impl GroundTruthLog {
    pub fn new(enabled: bool, file_path: Option<&str>) -> Result<Self, crate::error::SimError> {
        let file = match file_path {
            Some(path) => Some(Mutex::new(OpenOptions::new().create(true).append(true).open(path).map_err(
                |source| crate::error::SimError::GroundTruthFile { path: path.to_string(), source },
            )?)),
            None => None,
        };
        Ok(Self { enabled, started: Instant::now(), records: Mutex::new(Vec::new()), file })
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled || self.file.is_some()
    }

    pub fn now(&self) -> Stamp {
        let unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let mono_ns = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Stamp { unix_ns, mono_ns }
    }

    pub fn push(&self, record: GroundTruthRecord) {
        if let Some(file) = &self.file
            && let Ok(mut line) = serde_json::to_string(&record)
        {
            line.push('\n');
            let mut file = file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            // Ground truth is best effort: a full disk must not fail requests.
            let _ = file.write_all(line.as_bytes());
        }
        if self.enabled {
            self.records.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(record);
        }
    }

    /// The records so far; `clear` empties the store.
    pub fn snapshot(&self, clear: bool) -> Vec<GroundTruthRecord> {
        let mut records = self.records.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if clear { std::mem::take(&mut *records) } else { records.clone() }
    }
}
