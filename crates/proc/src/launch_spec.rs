//! What the caller asks for: how to start a server and how to tell it is ready.

use std::path::PathBuf;
use std::time::Duration;

/// Everything needed to start one inference server. The caller renders
/// `args` (placeholders already substituted) and picks `port` with
/// [`crate::free_port`].
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// Server node name, used in logs, errors and the registry record.
    pub name: String,
    /// A path, or a bare name resolved on `PATH`.
    pub program: String,
    pub args: Vec<String>,
    /// Added to (and overriding) anvil's own environment.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    pub port: u16,
    pub ready: ReadySpec,
    /// stdout and stderr go here, interleaved line by line, unmodified.
    pub log_path: PathBuf,
    /// SIGTERM → wait this long → SIGKILL.
    pub grace: Duration,
    /// Directory of live-server records read by [`crate::reap_orphans`].
    pub registry_dir: PathBuf,
}

/// How to decide that a server is ready. When both an HTTP path and a log
/// pattern are given, both must succeed. When neither is given, the server
/// is ready once its port accepts a TCP connection.
#[derive(Debug, Clone)]
pub struct ReadySpec {
    /// e.g. `/health`, probed as `http://127.0.0.1:{port}{http_path}`
    /// (`https://` when `tls` is set).
    pub http_path: Option<String>,
    pub expect_status: u16,
    /// A regex matched against each log line (stdout or stderr).
    pub log_pattern: Option<String>,
    pub timeout: Duration,
    /// Pause between HTTP probes.
    pub interval: Duration,
    /// `Some`: the server speaks https, trusted as these settings say.
    pub tls: Option<anvil_net::TlsSettings>,
}

impl Default for ReadySpec {
    fn default() -> Self {
        ReadySpec {
            http_path: Some("/health".to_string()),
            expect_status: 200,
            log_pattern: None,
            timeout: Duration::from_secs(600),
            interval: Duration::from_millis(250),
            tls: None,
        }
    }
}
