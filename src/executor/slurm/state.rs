//! Slurm job states and the text `scontrol show job -o ID` prints.
//!
//! Slurm 22.05 has no JSON for one job (`scontrol show job --json` is not
//! supported and `squeue --json` ignores `-j`), so the one-line form is
//! parsed: space-separated `Key=Value` pairs.

use std::collections::BTreeMap;

/// A job's `JobState`, as far as anvil distinguishes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Running,
    /// CONFIGURING, COMPLETING, SUSPENDED, REQUEUED, RESIZING, …: not over yet.
    Busy(String),
    Completed,
    Failed,
    Timeout,
    Cancelled,
    NodeFail,
    OutOfMemory,
    Preempted,
    /// BOOT_FAIL, DEADLINE, and states this anvil does not know: over.
    Ended(String),
    /// scontrol no longer knows the job (purged after MinJobAge).
    Unknown,
}

impl JobState {
    pub fn parse(word: &str) -> JobState {
        match word.trim() {
            "PENDING" => JobState::Pending,
            "RUNNING" => JobState::Running,
            "COMPLETED" => JobState::Completed,
            "FAILED" => JobState::Failed,
            "TIMEOUT" => JobState::Timeout,
            "CANCELLED" => JobState::Cancelled,
            "NODE_FAIL" => JobState::NodeFail,
            "OUT_OF_MEMORY" => JobState::OutOfMemory,
            "PREEMPTED" => JobState::Preempted,
            w @ ("CONFIGURING" | "COMPLETING" | "SUSPENDED" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED"
            | "RESIZING" | "SIGNALING" | "STAGE_OUT" | "STOPPED" | "RESV_DEL_HOLD") => {
                JobState::Busy(w.to_string())
            }
            w => JobState::Ended(w.to_string()),
        }
    }

    /// The job will not run anything any more.
    pub fn is_terminal(&self) -> bool {
        !matches!(self, JobState::Pending | JobState::Running | JobState::Busy(_))
    }

    pub fn as_str(&self) -> &str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Busy(w) | JobState::Ended(w) => w,
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Timeout => "TIMEOUT",
            JobState::Cancelled => "CANCELLED",
            JobState::NodeFail => "NODE_FAIL",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::Preempted => "PREEMPTED",
            JobState::Unknown => "UNKNOWN",
        }
    }

    /// Why a step of a job that ended this way and stored nothing failed.
    pub fn explain(&self) -> &'static str {
        match self {
            JobState::Completed => "the job completed without storing this step",
            JobState::Failed => "the job exited non-zero",
            JobState::Timeout => "the job ran past its time limit",
            JobState::Cancelled => "the job was cancelled",
            JobState::NodeFail => "the job's node failed",
            JobState::OutOfMemory => "the job ran out of memory",
            JobState::Preempted => "the job was preempted",
            JobState::Unknown => "Slurm no longer knows the job",
            _ => "the job ended",
        }
    }
}

/// What `scontrol show job -o` says about one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub id: String,
    pub state: JobState,
    pub reason: String,
    /// The node(s) it runs on; empty while pending.
    pub nodes: String,
    pub exit_code: String,
    pub stdout: String,
}

/// Parse one job's `scontrol show job -o` line (the first, for an array).
pub fn parse_show_job(text: &str) -> Option<JobInfo> {
    let line = text.lines().find(|l| l.contains("JobId="))?;
    let fields: BTreeMap<&str, &str> = line.split_whitespace().filter_map(|kv| kv.split_once('=')).collect();
    let get = |k: &str| fields.get(k).map(|v| v.to_string()).unwrap_or_default();
    let nodes = match get("NodeList").as_str() {
        "(null)" | "" => String::new(),
        n => n.to_string(),
    };
    Some(JobInfo {
        id: get("JobId"),
        state: JobState::parse(&get("JobState")),
        reason: get("Reason"),
        nodes,
        exit_code: get("ExitCode"),
        stdout: get("StdOut"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_running_and_a_cancelled_job() {
        let running = "JobId=12 JobName=anvil-sim-step4 UserId=root(0) GroupId=root(0) Priority=1 \
            JobState=RUNNING Reason=None Dependency=(null) ExitCode=0:0 RunTime=00:00:03 \
            NodeList=vm BatchHost=vm NumNodes=1 StdOut=/tmp/s/jobs/slurm-12.log TresPerNode=gres:gpu:1\n";
        let info = parse_show_job(running).unwrap();
        assert_eq!(info.id, "12");
        assert_eq!(info.state, JobState::Running);
        assert_eq!(info.nodes, "vm");
        assert_eq!(info.stdout, "/tmp/s/jobs/slurm-12.log");
        assert!(!info.state.is_terminal());
        let pending = "JobId=13 JobState=PENDING Reason=Resources NodeList=(null) ExitCode=0:0";
        let info = parse_show_job(pending).unwrap();
        assert_eq!(
            (info.state, info.reason.as_str(), info.nodes.as_str()),
            (JobState::Pending, "Resources", "")
        );
        let cancelled = "JobId=14 JobState=CANCELLED Reason=None NodeList=vm ExitCode=0:15";
        assert!(parse_show_job(cancelled).unwrap().state.is_terminal());
        assert_eq!(parse_show_job("slurm_load_jobs error: Invalid job id specified"), None);
    }

    #[test]
    fn every_end_state_is_terminal() {
        for w in [
            "COMPLETED",
            "FAILED",
            "TIMEOUT",
            "CANCELLED",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
            "PREEMPTED",
            "BOOT_FAIL",
        ] {
            assert!(JobState::parse(w).is_terminal(), "{w}");
            assert_eq!(JobState::parse(w).as_str(), w);
        }
        for w in ["PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"] {
            assert!(!JobState::parse(w).is_terminal(), "{w}");
        }
    }
}
