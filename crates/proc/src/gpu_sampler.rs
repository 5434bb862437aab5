//! Sampling GPU power, clocks, memory and temperature during a benchmark
//! cell with `nvidia-smi`'s own loop mode (`--loop-ms`), summarized at the end.
//! Where `nvidia-smi` does not exist there is simply no sampler.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anvil_artifact::gpu::{FieldSummary, GpuReadings, GpuTelemetry};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

/// The columns asked from nvidia-smi, in order.
const QUERY: &str =
    "index,power.draw,clocks.sm,clocks.mem,memory.used,memory.total,temperature.gpu,utilization.gpu";
/// Names of the numeric columns after `index`, as they appear in the summary.
const FIELDS: [&str; 7] = [
    "power_w",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "memory_used_mib",
    "memory_total_mib",
    "temperature_c",
    "utilization_pct",
];

/// Per GPU id: one Vec of readings per field ("[N/A]" readings are skipped).
type Readings = BTreeMap<String, [Vec<f64>; 7]>;

pub struct GpuSampler {
    child: Child,
    reader: JoinHandle<()>,
    readings: Arc<Mutex<Readings>>,
    interval: Duration,
    started: Instant,
}

impl GpuSampler {
    /// Starts sampling `gpu_ids` (all GPUs when empty) every `interval`.
    /// None when `nvidia-smi` is not installed or cannot start.
    pub fn start(gpu_ids: &[String], interval: Duration) -> Option<GpuSampler> {
        let program = which::which("nvidia-smi").ok()?;
        GpuSampler::start_with_program(&program, gpu_ids, interval)
    }

    /// Like [`start`](Self::start) with an explicit `nvidia-smi` (or a
    /// stand-in that prints the same CSV).
    pub fn start_with_program(program: &Path, gpu_ids: &[String], interval: Duration) -> Option<GpuSampler> {
        let mut command = Command::new(PathBuf::from(program));
        command
            .arg(format!("--query-gpu={QUERY}"))
            .arg("--format=csv,noheader,nounits")
            .arg(format!("--loop-ms={}", interval.as_millis().max(1)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        if !gpu_ids.is_empty() {
            command.arg(format!("--id={}", gpu_ids.join(",")));
        }
        let mut child = command.spawn().ok()?;
        let stdout = child.stdout.take()?;
        let readings = Arc::new(Mutex::new(Readings::new()));
        let sink = Arc::clone(&readings);
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some((id, values)) = parse_line(&line)
                    && let Ok(mut readings) = sink.lock()
                {
                    let per_field = readings.entry(id).or_default();
                    for (field, value) in per_field.iter_mut().zip(values) {
                        field.extend(value);
                    }
                }
            }
        });
        Some(GpuSampler { child, reader, readings, interval, started: Instant::now() })
    }

    /// Stops sampling and returns the summary: per GPU, sample count and
    /// mean/min/max of each field, as the artifact stores it.
    pub async fn stop(mut self) -> GpuTelemetry {
        let duration = self.started.elapsed();
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        let _ = tokio::time::timeout(Duration::from_secs(2), &mut self.reader).await;
        let readings = self.readings.lock().map(|r| r.clone()).unwrap_or_default();
        let gpus = readings.iter().map(|(id, per_field)| (id.clone(), summarize_gpu(per_field))).collect();
        GpuTelemetry {
            source: Some("nvidia-smi".into()),
            interval_ms: Some(self.interval.as_millis() as u64),
            duration_s: Some(duration.as_secs_f64()),
            gpus: Some(gpus),
            ..GpuTelemetry::default()
        }
    }
}

/// `0, 312.45, 1980, 2619, 70000, 81559, 54, 97` → id and 7 optional values.
fn parse_line(line: &str) -> Option<(String, [Option<f64>; 7])> {
    let mut cells = line.split(',').map(str::trim);
    let id = cells.next().filter(|id| !id.is_empty())?.to_string();
    let mut values = [None; 7];
    for value in values.iter_mut() {
        *value = cells.next()?.parse::<f64>().ok();
    }
    Some((id, values))
}

fn summarize_gpu(per_field: &[Vec<f64>; 7]) -> GpuReadings {
    let mut gpu = GpuReadings {
        samples: per_field.iter().map(Vec::len).max().unwrap_or(0) as u64,
        ..GpuReadings::default()
    };
    for (name, values) in FIELDS.iter().zip(per_field) {
        if values.is_empty() {
            continue;
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        gpu.fields.insert((*name).into(), FieldSummary { mean, min, max });
    }
    gpu
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_csv_line_with_missing_readings() {
        let (id, values) = parse_line("1, [N/A], 1410, 1593, 512, 81920, 33, 0").expect("parses");
        assert_eq!(id, "1");
        assert_eq!(values[0], None);
        assert_eq!(values[1], Some(1410.0));
        assert_eq!(values[6], Some(0.0));
    }

    #[test]
    fn rejects_a_short_line() {
        assert!(parse_line("0, 100").is_none());
    }
}
