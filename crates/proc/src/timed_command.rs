//! Running a short probe command (`--version`, a Python identity script,
//! `nvidia-smi`) with a deadline: its output is captured, and when it
//! overruns, its whole process group is killed.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::teardown;

/// What a probe that finished in time printed, and how it exited.
#[derive(Debug)]
pub(crate) struct Captured {
    pub status: ExitStatus,
    /// Decoded lossily: a probe's stray bytes do not lose the rest.
    pub stdout: String,
    pub stderr: String,
}

#[derive(Debug)]
pub(crate) enum ProbeFailure {
    /// The program could not be started (or its pipes not opened).
    Spawn(std::io::Error),
    /// It ran (or kept its pipes open) past the deadline; its group was killed.
    TimedOut(Duration),
}

impl std::fmt::Display for ProbeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeFailure::Spawn(e) => write!(f, "cannot start it: {e}"),
            ProbeFailure::TimedOut(after) => write!(f, "no answer after {:.1}s", after.as_secs_f64()),
        }
    }
}

/// Runs `<program> <args>` with stdin closed, in a process group of its own
/// (so a timeout kills whatever it forked too), and waits at most `timeout`
/// for it to close its output.
pub(crate) fn run_captured<I, S>(program: &Path, args: I, timeout: Duration) -> Result<Captured, ProbeFailure>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(ProbeFailure::Spawn)?;
    let pgid = child.id() as i32;
    let no_pipe = || ProbeFailure::Spawn(std::io::Error::other("no pipe to the child"));
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        teardown::signal_group(pgid, Signal::SIGKILL);
        let _ = child.wait();
        return Err(no_pipe());
    };
    let (done_tx, done_rx) = mpsc::channel();
    // Readers run on threads so a chatty child never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let err_reader = std::thread::spawn(move || {
            let mut err = Vec::new();
            let _ = stderr.read_to_end(&mut err);
            err
        });
        let _ = stdout.read_to_end(&mut out);
        let err = err_reader.join().unwrap_or_default();
        let _ = done_tx.send((out, err));
    });
    let outputs = done_rx.recv_timeout(timeout);
    if outputs.is_err() {
        teardown::signal_group(pgid, Signal::SIGKILL);
    }
    let status = child.wait();
    let (out, err) = outputs.map_err(|_| ProbeFailure::TimedOut(timeout))?;
    Ok(Captured {
        status: status.map_err(ProbeFailure::Spawn)?,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
    })
}
