//! `task` and `finally` steps: run a command; its exit status, output and
//! declared output files are its result.

use std::process::Stdio;
use std::time::Instant;

use tokio::process::Command;

use super::outcome::{Failure, Produced, ProducedFile};
use crate::document::TaskExec;
use crate::results::{self, NamedMap, TaskResult};

/// How much of stdout/stderr goes into result.json (the full text is a file).
const RESULT_TAIL: usize = 4000;

pub async fn run_task(task: &TaskExec) -> Result<Produced, Failure> {
    let argv = &task.argv;
    let Some((program, args)) = argv.split_first() else {
        return Err(Failure::new("`run` is empty"));
    };
    let cwd = &task.cwd;
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so a timeout or Ctrl-C takes its children too.
    command.process_group(0);
    command.envs(&task.env);
    let started = Instant::now();
    let child = command
        .spawn()
        .map_err(|err| Failure::new(format!("cannot start `{program}` in {}: {err}", cwd.display())))?;
    let pid = child.id();
    let waited = match task.timeout_ms.map(std::time::Duration::from_millis) {
        Some(limit) => match tokio::time::timeout(limit, child.wait_with_output()).await {
            Ok(done) => done,
            Err(_) => {
                if let Some(pid) = pid {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pid as i32),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                return Err(Failure::new(format!("timed out after {}", humantime::format_duration(limit))));
            }
        },
        None => child.wait_with_output().await,
    };
    let output = waited.map_err(|err| Failure::new(format!("waiting for `{program}`: {err}")))?;
    let duration = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let exit_code = output.status.code();
    if !output.status.success() {
        let how = match exit_code {
            Some(code) => format!("exited with code {code}"),
            None => "was killed by a signal".to_string(),
        };
        return Err(Failure::new(format!("`{}` {how}", argv.join(" "))).with_detail(tail(&stderr, 1500)));
    }
    let mut outputs = NamedMap::new();
    let mut files = vec![
        ProducedFile::Bytes { name: "stdout.txt".into(), bytes: output.stdout.clone() },
        ProducedFile::Bytes { name: "stderr.txt".into(), bytes: output.stderr.clone() },
    ];
    for declared in &task.outputs {
        let path = cwd.join(declared);
        match std::fs::read(&path) {
            Ok(bytes) => {
                outputs.insert(declared.clone(), format!("blake3:{}", blake3::hash(&bytes).to_hex()));
                files
                    .push(ProducedFile::Copy { name: format!("outputs/{}", sanitize(declared)), from: path });
            }
            Err(err) => {
                return Err(Failure::new(format!("declared output `{declared}` was not produced: {err}")));
            }
        }
    }
    let result = TaskResult {
        exit_code,
        stdout: tail(&stdout, RESULT_TAIL),
        stderr: tail(&stderr, RESULT_TAIL),
        outputs,
    };
    Ok(Produced {
        result: results::to_value(&result),
        files,
        rejected: false,
        summary: format!("exit 0 in {:.1}s", duration.as_secs_f64()),
        ..Produced::default()
    })
}

fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

/// Output files keep their relative path, flattened into one name.
fn sanitize(path: &str) -> String {
    path.trim_start_matches("./").replace(['/', '\\'], "__")
}
