//! The Slurm settings and what they mean: `sbatch` arguments and the poll
//! interval. A recipe (or a site file) sets them in an `executor "slurm"
//! { … }` block (`recipe::decls::executor` reads it). None of it enters a
//! fingerprint.

use std::path::PathBuf;
use std::time::Duration;

/// How jobs are submitted to Slurm (`src/executor/slurm/settings.rs` turns
/// them into `sbatch` arguments). None of it enters a fingerprint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlurmSettings {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// `--time`, in Slurm's words (`30`, `1:00:00`, `2-00:00:00`).
    pub time_limit: Option<String>,
    pub constraint: Option<String>,
    /// More `sbatch` arguments, passed as given.
    pub sbatch_args: Vec<String>,
    /// The anvil binary on the nodes (default: this binary's path, which a
    /// shared filesystem makes the same everywhere).
    pub anvil_binary: Option<PathBuf>,
    /// `--cpus-per-task` of a job (default: Slurm's).
    pub cpus: Option<u32>,
    /// `--mem` of a job (`4G`; default: Slurm's DefMemPerCPU).
    pub mem: Option<String>,
}

impl SlurmSettings {
    /// How often the head asks scontrol (default 1 s; `ANVIL_SLURM_POLL_MS`).
    pub fn poll_interval(&self) -> Duration {
        std::env::var("ANVIL_SLURM_POLL_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_secs(1))
    }

    /// The `sbatch` arguments these settings give every job.
    pub fn sbatch_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        let mut put = |flag: &str, value: &Option<String>| {
            if let Some(v) = value {
                args.push(format!("--{flag}={v}"));
            }
        };
        put("partition", &self.partition);
        put("account", &self.account);
        put("qos", &self.qos);
        put("time", &self.time_limit);
        put("constraint", &self.constraint);
        put("mem", &self.mem);
        put("cpus-per-task", &self.cpus.map(|c| c.to_string()));
        args.extend(self.sbatch_args.iter().cloned());
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_becomes_its_sbatch_argument() {
        let settings = SlurmSettings {
            partition: Some("gpu".into()),
            account: Some("bench".into()),
            qos: Some("normal".into()),
            time_limit: Some("4:00:00".into()),
            constraint: Some("h100".into()),
            sbatch_args: vec!["--exclusive".into()],
            anvil_binary: Some("/shared/anvil".into()),
            cpus: Some(16),
            mem: Some("128G".into()),
        };
        assert_eq!(
            settings.sbatch_args(),
            [
                "--partition=gpu",
                "--account=bench",
                "--qos=normal",
                "--time=4:00:00",
                "--constraint=h100",
                "--mem=128G",
                "--cpus-per-task=16",
                "--exclusive"
            ]
        );
        assert!(SlurmSettings::default().sbatch_args().is_empty());
    }
}
