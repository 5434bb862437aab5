//! What the Slurm settings mean: `sbatch` arguments and the poll interval.
//! The settings themselves are the recipe's (or a site file's) `executor
//! "slurm" { … }` block, defined once with it (`recipe::decls::executor`).
//! None of it enters a fingerprint.

use std::time::Duration;

use crate::recipe::Recipe;
use crate::recipe::decls::ExecutorDecl;
pub use crate::recipe::decls::executor::SlurmSettings;

impl SlurmSettings {
    /// The recipe's `executor "slurm" { … }` block; Slurm's defaults without one.
    pub fn of_recipe(recipe: &Recipe) -> SlurmSettings {
        match &recipe.executor {
            Some(ExecutorDecl::Slurm(settings)) => settings.clone(),
            _ => SlurmSettings::default(),
        }
    }

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
