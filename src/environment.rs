//! Facts about the machine a run measured on: recorded in run records and
//! bundles so a reader knows where numbers came from. They are volatile
//! (host name, memory) and so are recorded, never hashed — except the GPU
//! model, which changes results and enters launched servers' fingerprints
//! (see `plan::preimage`).

use std::process::Command;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The machine a run measured on (a run record's `extra.environment`, a
/// bundle's `exported_on`). Every field is optional on reading (an older
/// anvil's record, a newer one's extra keys kept in `other`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    pub host_name: Option<String>,
    pub kernel: Option<String>,
    pub os: Option<String>,
    pub cpu: Cpu,
    pub memory_bytes: Option<u64>,
    /// `nvidia-smi`'s listing ([`gpus`]), or why there is none.
    pub gpus: Value,
    pub container: Container,
    pub anvil_version: Option<String>,
    /// Whether this anvil was built optimised (`cargo build --release`);
    /// an unoptimised build's load generator costs more per request.
    pub anvil_optimised: Option<bool>,
    /// For a run that measured nothing: the run whose environment it carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured_in_run: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cpu {
    pub model: Option<String>,
    pub logical_cores: Option<usize>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Container {
    pub detected: bool,
    /// The image a container runtime started us from, when the deployment says so.
    pub image: Option<String>,
}

/// Everything we can learn cheaply about this machine.
pub fn capture() -> Environment {
    Environment {
        host_name: read_trimmed("/proc/sys/kernel/hostname"),
        kernel: read_trimmed("/proc/sys/kernel/osrelease"),
        os: os_name(),
        cpu: Cpu {
            model: cpu_model(),
            logical_cores: std::thread::available_parallelism().map(|n| n.get()).ok(),
        },
        memory_bytes: memory_bytes(),
        gpus: gpus(),
        container: Container {
            detected: std::path::Path::new("/.dockerenv").exists()
                || std::path::Path::new("/run/.containerenv").exists(),
            image: std::env::var("ANVIL_CONTAINER_IMAGE").ok(),
        },
        anvil_version: Some(env!("CARGO_PKG_VERSION").to_string()),
        anvil_optimised: Some(!cfg!(debug_assertions)),
        captured_in_run: None,
        other: Map::new(),
    }
}

/// The GPUs `nvidia-smi` lists: model, driver, memory; and the CUDA version.
pub fn gpus() -> Value {
    let query = ["--query-gpu=index,name,driver_version,memory.total", "--format=csv,noheader,nounits"];
    let Some(listing) = run("nvidia-smi", &query) else {
        return json!({"available": false, "why": "nvidia-smi not found or failed"});
    };
    let devices: Vec<Value> = listing
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let [index, name, driver, memory] = fields.as_slice() else { return None };
            Some(json!({"index": index, "model": name, "driver": driver, "memory_mib": memory.parse::<u64>().ok()}))
        })
        .collect();
    let cuda = run("nvidia-smi", &[]).and_then(|banner| {
        let at = banner.find("CUDA Version:")?;
        banner[at + "CUDA Version:".len()..].split_whitespace().next().map(str::to_string)
    });
    json!({"available": true, "count": devices.len(), "devices": devices, "cuda_version": cuda})
}

/// The distinct GPU models of this machine, for fingerprints (None without nvidia-smi).
pub fn gpu_models() -> Option<Vec<String>> {
    let listing = run("nvidia-smi", &["--query-gpu=name", "--format=csv,noheader"])?;
    let mut models: Vec<String> =
        listing.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
    models.sort();
    models.dedup();
    Some(models)
}

fn run(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn os_name() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release").ok()?;
    let line = text.lines().find(|l| l.starts_with("PRETTY_NAME="))?;
    Some(line.trim_start_matches("PRETTY_NAME=").trim_matches('"').to_string())
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

fn memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn captures_this_machine() {
        let env = serde_json::to_value(super::capture()).unwrap();
        assert!(env["kernel"].is_string(), "{env}");
        assert!(env["memory_bytes"].as_u64().is_some_and(|m| m > 0), "{env}");
        assert!(env["cpu"]["logical_cores"].as_u64().is_some_and(|n| n > 0), "{env}");
        // Without nvidia-smi the GPUs say so rather than vanish.
        assert!(env["gpus"]["available"].is_boolean(), "{env}");
    }
}
