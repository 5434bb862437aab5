//! Guarantees that need real processes: crashes mid-write, kill -9 of a
//! lock holder, two processes racing for one fingerprint, gc vs. an open
//! store. The test binary re-executes itself as the child process: the
//! ignored test `child_process` does what `ANVIL_STORE_CHILD_ROLE` says.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use crate::common;
use crate::common::{fp, new_store};
use anvil_store::{Fingerprint, Store, StoreError};
use serde_json::json;

const ROLE: &str = "ANVIL_STORE_CHILD_ROLE";
const ROOT: &str = "ANVIL_STORE_CHILD_ROOT";
const FINGERPRINT: &str = "ANVIL_STORE_CHILD_FP";
const GO_FILE: &str = "ANVIL_STORE_CHILD_GO";
/// Marks protocol lines in the child's stdout (libtest prints there too).
const MARK: &str = "@@child ";

// ---------------------------------------------------------------- child side

#[test]
#[ignore = "helper: runs only when re-executed by the tests below"]
fn child_process() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let root = PathBuf::from(std::env::var(ROOT).expect("root given"));
    let fingerprint: Fingerprint = std::env::var(FINGERPRINT).expect("fp given").parse().expect("valid fp");
    let store = Store::open(&root).expect("child opens store");
    let say = |line: &str| {
        println!("{MARK}{line}");
        std::io::stdout().flush().expect("flush stdout");
    };
    match role.as_str() {
        "abort-while-staging" => {
            let mut staged = store.stage(&fingerprint).unwrap();
            staged.write_json("preimage.json", &json!({ "child": true })).unwrap();
            staged.write_json("result.json", &json!({ "half": "done" })).unwrap();
            staged.write_bytes("logs/big.log", &vec![b'x'; 64 * 1024]).unwrap();
            say("READY");
            std::process::abort();
        }
        "hold-lock" => {
            let _lock = store.lock(&fingerprint).unwrap();
            say("READY");
            sleep_forever();
        }
        "try-gc" => match store.gc(false) {
            Ok(_) => say("GC ok"),
            Err(StoreError::Busy { .. }) => say("GC busy"),
            Err(other) => say(&format!("GC error {other}")),
        },
        "hold-store-open" => {
            say("READY");
            sleep_forever();
        }
        "produce-with-lock" => {
            say("READY");
            wait_for_go();
            let _lock = store.lock(&fingerprint).unwrap();
            if let Some(entry) = store.read(&fingerprint).unwrap() {
                say(&format!("RESULT skipped {}", entry.content_hash));
                return;
            }
            let mut staged = store.stage(&fingerprint).unwrap();
            staged.write_json("preimage.json", &json!({})).unwrap();
            staged.write_json("result.json", &json!({ "pid": std::process::id() })).unwrap();
            // Widen the window in which a lock-less rival could slip in.
            std::thread::sleep(Duration::from_millis(100));
            let entry = staged.commit().unwrap();
            say(&format!("RESULT committed {}", entry.content_hash));
        }
        "produce-without-lock" => {
            let mut staged = store.stage(&fingerprint).unwrap();
            staged.write_json("preimage.json", &json!({})).unwrap();
            staged.write_json("result.json", &json!({ "pid": std::process::id() })).unwrap();
            say("READY");
            wait_for_go();
            let entry = staged.commit().unwrap();
            say(&format!("RESULT {} {}", entry.result["pid"], entry.content_hash));
        }
        other => panic!("unknown child role {other}"),
    }
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Start barrier: spin until the parent creates the go file, so children
/// reach the contended step together.
fn wait_for_go() {
    let go = PathBuf::from(std::env::var(GO_FILE).expect("go file given"));
    while !go.exists() {
        std::thread::sleep(Duration::from_millis(2));
    }
}

// --------------------------------------------------------------- parent side

/// A child process, killed on drop so a failing test leaves no orphans.
struct ChildProcess {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

impl ChildProcess {
    fn spawn(role: &str, root: &Path, fingerprint: &Fingerprint, go_file: &Path) -> ChildProcess {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["processes::child_process", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(ROLE, role)
            .env(ROOT, root)
            .env(FINGERPRINT, fingerprint.to_string())
            .env(GO_FILE, go_file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        ChildProcess { child, stdout }
    }

    /// The next protocol line, without the mark.
    fn next_message(&mut self) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).expect("read child stdout");
            assert!(read > 0, "child exited before saying anything more");
            if let Some(at) = line.find(MARK) {
                return line[at + MARK.len()..].trim_end().to_string();
            }
        }
    }

    fn expect(&mut self, message: &str) {
        assert_eq!(self.next_message(), message);
    }

    fn kill_9(&mut self) {
        self.child.kill().expect("SIGKILL child");
        self.child.wait().expect("reap child");
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn go_file(t: &common::TestStore) -> PathBuf {
    t.dir.path().join("go")
}

#[test]
fn crash_between_stage_and_commit_leaves_nothing_visible() {
    let t = new_store();
    let target = fp("crashed");
    let mut child = ChildProcess::spawn("abort-while-staging", t.store.root(), &target, &go_file(&t));
    child.expect("READY");
    let status = child.child.wait().unwrap();
    assert!(!status.success(), "child aborted");

    assert!(!t.store.contains(&target));
    assert!(t.store.read(&target).unwrap().is_none());
    assert!(t.store.list().unwrap().is_empty());
    let report = t.store.verify().unwrap();
    assert!(report.is_clean(), "a crash is not damage: {report:?}");
    assert_eq!(report.leftovers.len(), 2, "staging dir and its unheld lock: {report:?}");
    assert!(report.in_progress.is_empty(), "the dead writer's lock died with it");

    let gc = t.store.gc(false).unwrap();
    assert_eq!(gc.leftovers_removed.len(), 2);
    assert!(gc.bytes_freed >= 64 * 1024);
    let report = t.store.verify().unwrap();
    assert!(report.is_clean() && report.leftovers.is_empty(), "{report:?}");
}

#[test]
fn a_lock_dies_with_its_process() {
    let t = new_store();
    let target = fp("locked");
    let mut child = ChildProcess::spawn("hold-lock", t.store.root(), &target, &go_file(&t));
    child.expect("READY");
    assert!(t.store.try_lock(&target).unwrap().is_none(), "the child holds it");
    assert!(t.store.try_lock(&fp("other")).unwrap().is_some(), "locks are per fingerprint");

    child.kill_9();
    let lock = t.store.try_lock(&target).unwrap();
    assert!(lock.is_some(), "the kernel released the dead child's lock");
}

#[test]
fn two_processes_with_locks_produce_an_entry_exactly_once() {
    let t = new_store();
    let target = fp("contended");
    let go = go_file(&t);
    let mut children: Vec<ChildProcess> =
        (0..2).map(|_| ChildProcess::spawn("produce-with-lock", t.store.root(), &target, &go)).collect();
    for child in &mut children {
        child.expect("READY");
    }
    std::fs::write(&go, "").unwrap();
    let results: Vec<String> = children.iter_mut().map(|child| child.next_message()).collect();

    let committed = results.iter().filter(|r| r.starts_with("RESULT committed ")).count();
    let skipped = results.iter().filter(|r| r.starts_with("RESULT skipped ")).count();
    assert_eq!((committed, skipped), (1, 1), "{results:?}");
    let stored = t.store.read(&target).unwrap().expect("entry exists");
    for result in &results {
        assert!(result.ends_with(&stored.content_hash), "both see the same entry: {results:?}");
    }
    let report = t.store.verify().unwrap();
    assert!(report.is_clean() && report.leftovers.is_empty(), "{report:?}");
}

#[test]
fn two_processes_committing_at_once_agree_on_one_entry() {
    let t = new_store();
    let target = fp("collision");
    let go = go_file(&t);
    let mut children: Vec<ChildProcess> =
        (0..2).map(|_| ChildProcess::spawn("produce-without-lock", t.store.root(), &target, &go)).collect();
    for child in &mut children {
        child.expect("READY");
    }
    std::fs::write(&go, "").unwrap();
    let results: Vec<String> = children.iter_mut().map(|child| child.next_message()).collect();

    let stored = t.store.read(&target).unwrap().expect("entry exists");
    let expected = format!("RESULT {} {}", stored.result["pid"], stored.content_hash);
    assert_eq!(results, vec![expected.clone(), expected], "the loser returns the winner's entry");
    for child in &mut children {
        assert!(child.child.wait().unwrap().success());
    }
    let report = t.store.verify().unwrap();
    assert!(report.is_clean() && report.leftovers.is_empty(), "loser cleaned up: {report:?}");
}

#[test]
fn gc_refuses_while_another_process_has_the_store_open() {
    let t = new_store();
    common::put(&t.store, "garbage");
    let mut child = ChildProcess::spawn("hold-store-open", t.store.root(), &fp("unused"), &go_file(&t));
    child.expect("READY");

    let err = t.store.gc(false).unwrap_err();
    assert!(matches!(err, StoreError::Busy { .. }), "{err}");
    assert!(t.store.contains(&fp("garbage")));
    // A dry run needs no exclusivity.
    assert_eq!(t.store.gc(true).unwrap().entries_removed, vec![fp("garbage")]);
    common::put(&t.store, "after-busy");
    child.kill_9();

    // Our shared lock survived the failed upgrade: another process's gc is
    // refused because of us.
    let mut rival = ChildProcess::spawn("try-gc", t.store.root(), &fp("unused"), &go_file(&t));
    rival.expect("GC busy");
    drop(rival);

    let report = t.store.gc(false).unwrap();
    assert_eq!(report.entries_removed.len(), 2);
    // And after gc we are back to shared: another process may open the store.
    let mut reopened = ChildProcess::spawn("hold-store-open", t.store.root(), &fp("unused"), &go_file(&t));
    reopened.expect("READY");
}
