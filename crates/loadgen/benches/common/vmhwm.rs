//! The process's peak resident memory, as the kernel counts it.

/// `VmHWM` of `/proc/self/status`, KiB (0 if unreadable).
pub fn vmhwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
