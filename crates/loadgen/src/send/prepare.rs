//! What a cell does before its clock starts so that nothing of the
//! client's own making lands inside a measurement.
//!
//! The descriptor table: a process's table of open files starts with 64
//! slots and doubles when a descriptor beyond it is needed. In a
//! multi-threaded process (the load generator always is: the caller's
//! runtime, its own, the sender and record threads) the kernel then waits
//! for an RCU grace period before freeing the old table
//! (`expand_files` → `synchronize_rcu`): the thread that opened the socket
//! blocks for milliseconds. Duplicating a descriptor onto the highest slot
//! the cell can need, once, before anything is measured, grows the table
//! to its final size there; it never shrinks.

use nix::libc;

/// Grows the descriptor table to hold at least `slots` descriptors (raising
/// the soft `RLIMIT_NOFILE` toward the hard one if it is lower); returns the
/// slots it now holds for certain (0 if it could not tell).
pub fn presize_fd_table(slots: usize) -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 0;
    }
    let wanted = slots as libc::rlim_t;
    if limit.rlim_cur < wanted && limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit { rlim_cur: wanted.min(limit.rlim_max), rlim_max: limit.rlim_max };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    let top = wanted.min(limit.rlim_cur).saturating_sub(1) as libc::c_int;
    // SAFETY: plain descriptor calls on descriptors this function opens and
    // closes itself; F_DUPFD takes the lowest *free* slot at or above
    // `top`, so no open descriptor is ever touched.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if null < 0 {
            return 0;
        }
        let high = libc::fcntl(null, libc::F_DUPFD_CLOEXEC, top);
        libc::close(null);
        if high < 0 {
            return 0;
        }
        libc::close(high);
        high as usize + 1
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn presizing_leaves_descriptors_alone() {
        let before = std::fs::File::open("/dev/null").expect("a descriptor");
        let slots = super::presize_fd_table(300);
        assert!(slots >= 300 || slots == 0, "{slots}");
        // Still open, still the same file.
        use std::io::Read;
        let mut buf = [0u8; 1];
        assert_eq!((&before).read(&mut buf).expect("still open"), 0);
    }
}
