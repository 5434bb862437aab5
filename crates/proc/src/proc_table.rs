//! Reading the Linux process table (`/proc`) to find the processes that
//! belong to a server, and to tell a live process from a recycled pid.

use std::fs;

/// The environment variable set in every launched server. Children inherit
/// it, so it marks the whole tree even when a worker leaves the process group
/// (engines that `setsid` their workers).
pub const SERVER_TOKEN_VAR: &str = "ANVIL_SERVER_TOKEN";

/// The fields of `/proc/<pid>/stat` that identify a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    /// One-letter state; `Z` is a zombie (dead, not yet reaped).
    pub state: char,
    pub ppid: i32,
    pub pgid: i32,
    pub sid: i32,
    /// Clock ticks since boot; with the pid it names one process uniquely.
    pub start_ticks: u64,
}

impl ProcStat {
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// `/proc/<pid>/stat`, or None when the process is gone.
pub fn stat(pid: i32) -> Option<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses a stat line. The command name (field 2) may hold spaces and
/// parentheses, so fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let pid = text.split_whitespace().next()?.parse().ok()?;
    let after_name = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // fields[0] is field 3 (state), so field N is fields[N - 3].
    Some(ProcStat {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        sid: fields.get(3)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

/// Every process visible in `/proc`.
pub fn all_processes() -> Vec<ProcStat> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// Live (non-zombie) processes of a process group.
pub fn group_members(pgid: i32) -> Vec<ProcStat> {
    all_processes().into_iter().filter(|p| p.pgid == pgid && !p.is_zombie()).collect()
}

/// Every live process of a server's tree: members of the process group
/// `pgid` (when given), holders of the token, and all their descendants by
/// parent pid. Descendants matter for the instant a worker is between
/// `setsid` and `exec`, when its environment briefly reads as empty.
pub fn server_tree(pgid: Option<i32>, token: &str) -> Vec<i32> {
    let live: Vec<ProcStat> = all_processes().into_iter().filter(|p| !p.is_zombie()).collect();
    let mut tree: Vec<i32> =
        live.iter().filter(|p| Some(p.pgid) == pgid || has_token(p.pid, token)).map(|p| p.pid).collect();
    loop {
        let before = tree.len();
        for p in &live {
            if tree.contains(&p.ppid) && !tree.contains(&p.pid) {
                tree.push(p.pid);
            }
        }
        if tree.len() == before {
            break;
        }
    }
    tree.sort_unstable();
    tree
}

/// Whether the process was started with our token in its environment.
/// Unreadable environments (other users' processes) count as "no".
pub fn has_token(pid: i32, token: &str) -> bool {
    let Ok(environ) = fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{SERVER_TOKEN_VAR}={token}");
    environ.split(|byte| *byte == 0).any(|entry| entry == wanted.as_bytes())
}

/// Whether `pid` is alive and is the same process that had `start_ticks`.
pub fn is_same_process(pid: i32, start_ticks: u64) -> bool {
    stat(pid).is_some_and(|s| s.start_ticks == start_ticks && !s.is_zombie())
}

/// This boot's id: records from an earlier boot describe no live process.
pub fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_whose_name_has_spaces_and_parens() {
        let line =
            "4242 (my (odd) prog) S 1 4240 4200 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 50";
        let s = parse_stat(line).expect("parses");
        assert_eq!(s.pid, 4242);
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.pgid, 4240);
        assert_eq!(s.sid, 4200);
        assert_eq!(s.start_ticks, 987654);
    }

    #[test]
    fn sees_its_own_process() {
        let me = std::process::id() as i32;
        let s = stat(me).expect("own stat");
        assert!(is_same_process(me, s.start_ticks));
        assert!(!is_same_process(me, s.start_ticks + 1));
    }
}
