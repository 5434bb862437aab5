//! How jobs are submitted: `--executor slurm` and the recipe's (or a site
//! file's) `executor "slurm" { … }` block. None of it enters a fingerprint.

use std::path::PathBuf;
use std::time::Duration;

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
    pub cpus_per_job: Option<u32>,
    /// `--mem` of a job (`4G`; default: Slurm's DefMemPerCPU).
    pub mem_per_job: Option<String>,
    /// How often the head asks scontrol (default 1 s; `ANVIL_SLURM_POLL_MS`).
    pub poll: Option<Duration>,
}

impl SlurmSettings {
    pub fn poll_interval(&self) -> Duration {
        self.poll
            .or_else(|| std::env::var("ANVIL_SLURM_POLL_MS").ok()?.parse().ok().map(Duration::from_millis))
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
        put("mem", &self.mem_per_job);
        put("cpus-per-task", &self.cpus_per_job.map(|c| c.to_string()));
        args.extend(self.sbatch_args.iter().cloned());
        args
    }

    /// The recipe's (or site file's) `executor "slurm" { … }` block.
    pub fn from_recipe(decl: Option<&crate::recipe::decls::ExecutorDecl>) -> SlurmSettings {
        let Some(d) = decl else { return SlurmSettings::default() };
        SlurmSettings {
            partition: d.partition.clone(),
            account: d.account.clone(),
            qos: d.qos.clone(),
            time_limit: d.time_limit.clone(),
            constraint: d.constraint.clone(),
            sbatch_args: d.sbatch_args.clone(),
            anvil_binary: d.anvil_binary.as_ref().map(PathBuf::from),
            cpus_per_job: d.cpus,
            mem_per_job: d.mem.clone(),
            poll: None,
        }
    }

    /// Recipe block values under command-line ones (`self` wins where set).
    pub fn over(mut self, base: &SlurmSettings) -> SlurmSettings {
        macro_rules! fill {
            ($($f:ident),*) => { $( if self.$f.is_none() { self.$f = base.$f.clone(); } )* };
        }
        fill!(partition, account, qos, time_limit, constraint, anvil_binary, cpus_per_job, mem_per_job, poll);
        if self.sbatch_args.is_empty() {
            self.sbatch_args = base.sbatch_args.clone();
        }
        self
    }
}
