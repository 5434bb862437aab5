//! Cross-host locks for a store on a shared filesystem: a lock file created
//! with `O_EXCL` that carries a lease its holder keeps renewing.
//!
//! `flock` is not reliable on every NFS, and a kernel lock cannot outlive a
//! node that lost power anyway. A lease lock works on any filesystem where
//! exclusive create and rename are atomic (NFSv3+ with close-to-open
//! consistency, Lustre, GPFS, CephFS):
//!
//! - **Take**: create `locks/<fp>.lease` with `create_new` (O_EXCL). It holds
//!   one line of JSON: the holder (`host:pid:nonce`) and the lease's expiry
//!   (wall clock, milliseconds). Fixed width, so renewals rewrite it in place.
//! - **Keep**: a thread renews the expiry every third of the lease. Before
//!   each renewal it checks the file still names this holder; if not, the
//!   lock was lost (the lease ran out while this process was stalled) and
//!   [`LeaseLock::is_lost`] says so.
//! - **Break**: a lock whose lease has expired (or whose holder ran on this
//!   host and has exited) is deleted, and the breaker retries the exclusive
//!   create.
//! - **Release**: the holder stops renewing and deletes the file if it still
//!   names this holder.
//! - **Removal turn**: POSIX has no compare-and-delete, so every deletion
//!   (break or release) holds `locks/<fp>.lease.break`, a second `O_EXCL`
//!   file held for the few microseconds of "read, check, delete". With the
//!   turn held nobody else can delete the lease file, and nobody can create
//!   one while it exists, so what the remover read is what it deletes.
//!   (Moving the file aside and putting back what was not ours leaves a gap
//!   in which a third process creates the lock, and the put-back then
//!   fails: two holders. CI hit that with eight racing breakers.) A turn
//!   whose holder died is deleted once its holder is gone from this host or
//!   the turn is a lease old.
//!
//! Assumptions: the hosts' clocks agree to well within a lease (NTP), and a
//! holder that cannot renew for a whole lease is dead. A process stalled for
//! longer than its lease can lose its lock; its result is still safe, since
//! committing an entry is first-rename-wins.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::StoreError;
use crate::fingerprint::Fingerprint;

/// Default lease: a dead node's lock is broken at most this long after it died.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The lease length for this process: `ANVIL_LEASE_SECS` or 30 s.
pub fn lease_duration() -> Duration {
    std::env::var("ANVIL_LEASE_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(DEFAULT_LEASE)
}

static SHARED: AtomicBool = AtomicBool::new(false);

/// Whether this process treats its stores as shared across hosts
/// (`ANVIL_STORE_SHARED=1`, or [`treat_stores_as_shared`]): node locks
/// then take a lease lock as well.
pub fn shared_store() -> bool {
    SHARED.load(Ordering::SeqCst)
        || std::env::var("ANVIL_STORE_SHARED").is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// From now on this process treats its stores as shared (the Slurm head does).
pub fn treat_stores_as_shared() {
    SHARED.store(true, Ordering::SeqCst);
}

/// What a lease file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    pub holder: String,
    /// Wall clock, milliseconds since the Unix epoch.
    pub expires_ms: u64,
}

impl LeaseInfo {
    fn line(&self) -> String {
        // Fixed width: a renewal overwrites the same bytes.
        format!("{{\"holder\":{},\"expires_ms\":{:>20}}}\n", json_string(&self.holder), self.expires_ms)
    }

    fn parse(text: &str) -> Option<LeaseInfo> {
        let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
        Some(LeaseInfo {
            holder: value.get("holder")?.as_str()?.to_string(),
            expires_ms: value.get("expires_ms")?.as_u64()?,
        })
    }

    /// Past its lease, or held by a process of this host that has exited.
    pub fn is_stale(&self) -> bool {
        self.expires_ms < now_ms() || holder_is_dead_here(&self.holder)
    }
}

/// Read a lease file; `None` if it is absent or unreadable.
pub fn read_lease(path: &Path) -> Option<LeaseInfo> {
    LeaseInfo::parse(&fs::read_to_string(path).ok()?)
}

/// A held lease lock; dropping it releases the lock.
#[derive(Debug)]
pub struct LeaseLock {
    path: PathBuf,
    holder: String,
    lost: Arc<AtomicBool>,
    renewals: Arc<AtomicU64>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    renewer: Option<JoinHandle<()>>,
}

impl LeaseLock {
    /// Take the lock at `path` if nobody holds a live lease on it.
    pub fn try_acquire(path: &Path, lease: Duration) -> io::Result<Option<LeaseLock>> {
        let holder = new_holder();
        // Bounded: each round either creates, finds a live holder, or breaks a stale lock.
        for _ in 0..16 {
            let info = LeaseInfo { holder: holder.clone(), expires_ms: now_ms() + lease.as_millis() as u64 };
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut file) => {
                    file.write_all(info.line().as_bytes())?;
                    file.sync_all()?;
                    return Ok(Some(LeaseLock::start(path.to_path_buf(), holder, lease)));
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(err),
            }
            match observe(path)? {
                Observed::Gone => continue,
                Observed::Live => return Ok(None),
                Observed::Stale => break_stale(path)?,
            }
        }
        Ok(None)
    }

    /// Take the lock, waiting (polling) while someone else holds it.
    pub fn acquire(path: &Path, lease: Duration) -> io::Result<LeaseLock> {
        let mut pause = Duration::from_millis(20);
        loop {
            if let Some(lock) = LeaseLock::try_acquire(path, lease)? {
                return Ok(lock);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    fn start(path: PathBuf, holder: String, lease: Duration) -> LeaseLock {
        let lost = Arc::new(AtomicBool::new(false));
        let renewals = Arc::new(AtomicU64::new(0));
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let renewer = {
            let (path, holder, lost, renewals, stop) =
                (path.clone(), holder.clone(), lost.clone(), renewals.clone(), stop.clone());
            std::thread::Builder::new()
                .name("anvil-lease".into())
                .spawn(move || renew_until_stopped(&path, &holder, lease, &lost, &renewals, &stop))
                .ok()
        };
        LeaseLock { path, holder, lost, renewals, stop, renewer }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// True once a renewal found the lock taken by someone else.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// How many times the lease was renewed.
    pub fn renewals(&self) -> u64 {
        self.renewals.load(Ordering::SeqCst)
    }
}

impl Drop for LeaseLock {
    fn drop(&mut self) {
        {
            let (flag, wake) = &*self.stop;
            *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
            wake.notify_all();
        }
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.join();
        }
        if !self.is_lost() {
            let _ = remove_if_ours(&self.path, &self.holder);
        }
    }
}

fn renew_until_stopped(
    path: &Path,
    holder: &str,
    lease: Duration,
    lost: &AtomicBool,
    renewals: &AtomicU64,
    stop: &(Mutex<bool>, Condvar),
) {
    let every = lease / 3;
    let (flag, wake) = stop;
    let mut stopped = flag.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        // Checked before waiting too: a stop may come before the first wait.
        if *stopped {
            return;
        }
        let (guard, _) = wake.wait_timeout(stopped, every).unwrap_or_else(|e| e.into_inner());
        stopped = guard;
        if *stopped {
            return;
        }
        match renew(path, holder, lease) {
            Ok(true) => {
                renewals.fetch_add(1, Ordering::SeqCst);
            }
            Ok(false) => {
                lost.store(true, Ordering::SeqCst);
                return;
            }
            Err(_) => {} // a transient error (NFS hiccup): try again next time
        }
    }
}

/// Rewrite the expiry in place if the file still names `holder`.
fn renew(path: &Path, holder: &str, lease: Duration) -> io::Result<bool> {
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err),
    };
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    match LeaseInfo::parse(&text) {
        Some(info) if info.holder == holder => {}
        Some(_) => return Ok(false),
        None => return Err(io::Error::other("unreadable lease")),
    }
    let info = LeaseInfo { holder: holder.to_string(), expires_ms: now_ms() + lease.as_millis() as u64 };
    file.seek(SeekFrom::Start(0))?;
    file.write_all(info.line().as_bytes())?;
    file.sync_data()?;
    Ok(true)
}

enum Observed {
    Gone,
    Live,
    Stale,
}

fn observe(path: &Path) -> io::Result<Observed> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Observed::Gone),
        Err(err) => return Err(err),
    };
    match LeaseInfo::parse(&text) {
        Some(info) if info.is_stale() => Ok(Observed::Stale),
        Some(_) => Ok(Observed::Live),
        // Half-written by a creator right now, or garbage: stale only once old.
        None => {
            let age = fs::metadata(path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .unwrap_or_default();
            Ok(if age > lease_duration() * 2 { Observed::Stale } else { Observed::Live })
        }
    }
}

/// Delete the lock at `path` if, with the removal turn held, it is stale.
fn break_stale(path: &Path) -> io::Result<()> {
    // Another remover holds the turn: it is deleting this lock right now.
    let Some(_turn) = RemovalTurn::take(path, Duration::from_millis(50))? else {
        return Ok(());
    };
    // Read again under the turn: an earlier breaker may have deleted the
    // stale lock and a live holder created a new one since we looked.
    match observe(path)? {
        Observed::Stale => remove_absent_ok(path),
        Observed::Gone | Observed::Live => Ok(()),
    }
}

fn remove_if_ours(path: &Path, holder: &str) -> io::Result<()> {
    // Not worth waiting long for: a lock left behind runs out with its lease.
    let Some(_turn) = RemovalTurn::take(path, Duration::from_secs(5))? else {
        return Ok(());
    };
    if read_lease(path).is_some_and(|info| info.holder == holder) {
        remove_absent_ok(path)?;
    }
    Ok(())
}

fn remove_absent_ok(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// The right to delete one lease file (`<lease>.break`), held while a
/// remover reads, checks and deletes it.
struct RemovalTurn {
    path: PathBuf,
}

impl RemovalTurn {
    /// Take the turn, waiting up to `patience` for another remover.
    fn take(lease_path: &Path, patience: Duration) -> io::Result<Option<RemovalTurn>> {
        let name = lease_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let path = lease_path.with_file_name(format!("{name}.break"));
        let deadline = std::time::Instant::now() + patience;
        let mut pause = Duration::from_micros(200);
        loop {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    file.write_all(new_holder().as_bytes())?;
                    return Ok(Some(RemovalTurn { path }));
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                    if turn_is_abandoned(&path) {
                        let _ = fs::remove_file(&path);
                        continue;
                    }
                }
                Err(err) => return Err(err),
            }
            if std::time::Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

impl Drop for RemovalTurn {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// A turn whose remover exited on this host, or that is a whole lease old
/// (a remover holds it for microseconds).
fn turn_is_abandoned(path: &Path) -> bool {
    let holder = fs::read_to_string(path).unwrap_or_default();
    if !holder.is_empty() && holder_is_dead_here(holder.trim()) {
        return true;
    }
    let age = fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .unwrap_or_default();
    age > lease_duration()
}

fn new_holder() -> String {
    format!("{}:{}:{}", hostname(), std::process::id(), unique())
}

fn unique() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{:x}{:x}", nanos as u64, COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// This machine's name (as the holder id says it).
pub fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// A holder `host:pid:nonce` on this host whose process has exited.
fn holder_is_dead_here(holder: &str) -> bool {
    let mut parts = holder.rsplitn(3, ':');
    let (_nonce, pid, host) = (parts.next(), parts.next(), parts.next());
    match (host, pid.and_then(|p| p.parse::<u32>().ok())) {
        (Some(host), Some(pid)) if host == hostname() && Path::new("/proc/self").exists() => {
            pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
        }
        _ => false,
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A fingerprint's lease in a shared store (`locks/<fp>.lease`).
pub(crate) enum Lease {
    /// The store is not shared: the OS lock alone excludes.
    NotShared,
    Held(LeaseLock),
    /// Someone holds it (only when not waiting).
    Busy,
}

impl crate::store::Store {
    /// Take `fp`'s lease when this process treats stores as shared
    /// ([`shared_store`]), waiting for it if `wait`.
    pub(crate) fn lease(&self, fp: &Fingerprint, wait: bool) -> Result<Lease, StoreError> {
        if !shared_store() {
            return Ok(Lease::NotShared);
        }
        let path = self.layout.locks().join(format!("{fp}.lease"));
        let lease = lease_duration();
        let taken = if wait {
            LeaseLock::acquire(&path, lease).map(Some)
        } else {
            LeaseLock::try_acquire(&path, lease)
        };
        match taken.map_err(StoreError::io("take the lease", &path))? {
            Some(lock) => Ok(Lease::Held(lock)),
            None => Ok(Lease::Busy),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_release_frees() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lease");
        let a = LeaseLock::try_acquire(&path, Duration::from_secs(30)).unwrap().expect("free");
        assert!(LeaseLock::try_acquire(&path, Duration::from_secs(30)).unwrap().is_none());
        assert_eq!(read_lease(&path).unwrap().holder, a.holder());
        drop(a);
        assert!(!path.exists());
        assert!(LeaseLock::try_acquire(&path, Duration::from_secs(30)).unwrap().is_some());
    }

    #[test]
    fn an_expired_lease_from_another_host_is_broken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lease");
        let dead = LeaseInfo { holder: "other-node:1:abc".into(), expires_ms: now_ms() - 1 };
        fs::write(&path, dead.line()).unwrap();
        let lock = LeaseLock::try_acquire(&path, Duration::from_secs(30)).unwrap().expect("stale broken");
        assert_eq!(read_lease(&path).unwrap().holder, lock.holder());
        // A live lease of another host is respected.
        drop(lock);
        let live = LeaseInfo { holder: "other-node:1:abc".into(), expires_ms: now_ms() + 60_000 };
        fs::write(&path, live.line()).unwrap();
        assert!(LeaseLock::try_acquire(&path, Duration::from_secs(30)).unwrap().is_none());
    }

    #[test]
    fn a_dead_local_holder_is_broken_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lease");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let dead = LeaseInfo { holder: format!("{}:{pid}:n", hostname()), expires_ms: now_ms() + 60_000 };
        fs::write(&path, dead.line()).unwrap();
        assert!(LeaseLock::try_acquire(&path, Duration::from_secs(30)).unwrap().is_some());
    }

    #[test]
    fn the_holder_renews_and_notices_a_takeover() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lease");
        let lock = LeaseLock::try_acquire(&path, Duration::from_millis(300)).unwrap().unwrap();
        let first = read_lease(&path).unwrap().expires_ms;
        std::thread::sleep(Duration::from_millis(450));
        assert!(lock.renewals() >= 1);
        assert!(read_lease(&path).unwrap().expires_ms > first);
        // Someone else's lock replaces ours: the renewer notices.
        let other = LeaseInfo { holder: "other-node:1:x".into(), expires_ms: now_ms() + 60_000 };
        fs::write(&path, other.line()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(lock.is_lost());
        drop(lock);
        assert_eq!(read_lease(&path).unwrap().holder, "other-node:1:x", "a lost lock is not removed");
    }

    /// Eight threads break one expired lock at once, 200 times. (Moving a
    /// lock aside to check it, then putting back what was not ours, let a
    /// third thread in: two winners in about one run in four of 20 rounds.)
    #[test]
    fn racing_breakers_leave_exactly_one_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lease");
        for _ in 0..200 {
            let dead = LeaseInfo { holder: "gone:1:x".into(), expires_ms: now_ms() - 1 };
            fs::write(&path, dead.line()).unwrap();
            let barrier = Arc::new(std::sync::Barrier::new(8));
            let holders: Vec<_> = (0..8)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        LeaseLock::try_acquire(&path, Duration::from_secs(30)).unwrap()
                    })
                })
                .collect();
            let won: Vec<LeaseLock> = holders.into_iter().filter_map(|h| h.join().unwrap()).collect();
            assert_eq!(won.len(), 1, "exactly one winner");
            assert_eq!(read_lease(&path).unwrap().holder, won[0].holder());
            drop(won);
        }
    }
}
