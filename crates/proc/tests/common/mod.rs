//! Shared helpers for the integration tests: a spec builder over a temp
//! directory, and ways to look at processes through /proc.
#![allow(dead_code)] // each test module uses a different subset

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use anvil_proc::{LaunchSpec, ReadySpec, free_port, proc_table};

/// A temporary directory holding one test's logs, pid files and registry.
pub struct Scratch {
    pub dir: tempfile::TempDir,
    /// Held as long as the test's servers may live (a `Scratch` outlives them).
    _turn: Turn,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch::with_dir(tempfile::tempdir().expect("temp dir"))
    }

    pub fn with_dir(dir: tempfile::TempDir) -> Scratch {
        Scratch { dir, _turn: Turn::take(false) }
    }

    /// A scratch for a test that needs the process to itself: no other
    /// test's `Scratch` (so none of their servers) lives meanwhile.
    /// `shutdown_all_servers` stops every server of the process, and all
    /// tests of this crate share one process (one test binary).
    pub fn alone() -> Scratch {
        Scratch { dir: tempfile::tempdir().expect("temp dir"), _turn: Turn::take(true) }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn registry(&self) -> PathBuf {
        self.path("servers")
    }

    /// A spec running `sh -c <script>` with `$DIR` set to the scratch dir;
    /// ready when a log line matches `ready_pattern`.
    pub fn shell_spec(&self, name: &str, script: &str, ready_pattern: &str) -> LaunchSpec {
        LaunchSpec {
            name: name.to_string(),
            program: "sh".to_string(),
            args: vec!["-c".to_string(), script.to_string()],
            env: vec![("DIR".to_string(), self.dir.path().display().to_string())],
            cwd: Some(self.dir.path().to_path_buf()),
            port: free_port().expect("free port"),
            ready: ReadySpec {
                http_path: None,
                expect_status: 200,
                log_pattern: Some(ready_pattern.to_string()),
                timeout: Duration::from_secs(30),
                interval: Duration::from_millis(50),
                tls: None,
            },
            log_path: self.path(&format!("{name}.log")),
            grace: Duration::from_secs(5),
            registry_dir: self.registry(),
        }
    }

    /// A spec running python's http.server over the scratch dir, ready
    /// when `GET /` answers 200.
    pub fn http_server_spec(&self, name: &str) -> LaunchSpec {
        let port = free_port().expect("free port");
        LaunchSpec {
            name: name.to_string(),
            program: "python3".to_string(),
            args: [
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--directory",
                &self.dir.path().display().to_string(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            env: Vec::new(),
            cwd: None,
            port,
            ready: ReadySpec {
                http_path: Some("/".to_string()),
                expect_status: 200,
                log_pattern: None,
                timeout: Duration::from_secs(30),
                interval: Duration::from_millis(50),
                tls: None,
            },
            log_path: self.path(&format!("{name}.log")),
            grace: Duration::from_secs(5),
            registry_dir: self.registry(),
        }
    }

    /// Reads a pid the test script wrote, waiting for the file to appear.
    pub fn read_pid(&self, name: &str) -> i32 {
        read_pid_file(&self.path(name))
    }

    pub fn registry_records(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.registry()) {
            Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
            Err(_) => Vec::new(),
        }
    }
}

pub fn read_pid_file(path: &Path) -> i32 {
    for _ in 0..400 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("pid file {} never appeared", path.display());
}

/// Alive and not a zombie.
pub fn is_alive(pid: i32) -> bool {
    proc_table::stat(pid).is_some_and(|s| !s.is_zombie())
}

/// Waits (bounded, generously) for a process to disappear; true if it did.
/// Used only where the kernel delivers a signal asynchronously.
pub fn wait_dead(pid: i32) -> bool {
    for _ in 0..400 {
        if !is_alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    false
}

/// A shared or an exclusive turn at this process's servers (a
/// reader-writer lock whose guard may cross threads and `.await`s).
struct Turn {
    alone: bool,
}

/// (shared turns held, whether an exclusive one is held)
static TURNS: Mutex<(usize, bool)> = Mutex::new((0, false));
static TURN_ENDED: Condvar = Condvar::new();

impl Turn {
    fn take(alone: bool) -> Turn {
        let mut turns = TURNS.lock().unwrap_or_else(|e| e.into_inner());
        while turns.1 || (alone && turns.0 > 0) {
            turns = TURN_ENDED.wait(turns).unwrap_or_else(|e| e.into_inner());
        }
        if alone {
            turns.1 = true;
        } else {
            turns.0 += 1;
        }
        Turn { alone }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut turns = TURNS.lock().unwrap_or_else(|e| e.into_inner());
        if self.alone {
            turns.1 = false;
        } else {
            turns.0 -= 1;
        }
        TURN_ENDED.notify_all();
    }
}
