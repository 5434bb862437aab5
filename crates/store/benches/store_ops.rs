//! Store operation throughput. Prints a table; asserts nothing.
//!
//!     cargo bench -p anvil-store --bench store_ops
//!
//! Environment: ANVIL_STORE_BENCH_ENTRIES (entries committed, default 1000),
//! ANVIL_STORE_BENCH_DIR (where the temporary store goes; default the
//! system temp dir; put it on the disk you care about, fsync cost dominates).

use std::hint::black_box;
use std::time::{Duration, Instant};

use anvil_store::{Fingerprint, NodeStatus, RunNode, RunRecord, Store};
use serde_json::json;

const LOOKUPS: usize = 10_000;

fn main() {
    let entries: usize =
        std::env::var("ANVIL_STORE_BENCH_ENTRIES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let parent = std::env::var_os("ANVIL_STORE_BENCH_DIR").map(Into::into).unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(&parent).expect("create temp dir");
    let store = Store::open(&dir.path().join("store")).expect("open store");
    println!("store at {} ({entries} entries)\n", store.root().display());
    println!("{:<40} {:>8} {:>12} {:>14}", "operation", "count", "total", "per second");

    let stored: Vec<Fingerprint> =
        (0..entries).map(|i| Fingerprint::of_bytes(format!("hit-{i}").as_bytes())).collect();
    let missing: Vec<Fingerprint> =
        (0..LOOKUPS).map(|i| Fingerprint::of_bytes(format!("miss-{i}").as_bytes())).collect();

    row(
        "stage+commit (3 small files, fsync)",
        entries,
        timed(|| {
            for (i, fp) in stored.iter().enumerate() {
                let mut staged = store.stage(fp).expect("stage");
                staged
                    .write_json("preimage.json", &json!({ "node": i, "protocol": "capacity-v4" }))
                    .expect("write");
                staged.write_json("result.json", &json!({ "ttft_ms": 12.5, "tokens": i })).expect("write");
                staged.write_bytes("logs/server.log", b"server started\nready\n").expect("write");
                staged.commit().expect("commit");
            }
        }),
    );

    row(
        "contains() hit",
        LOOKUPS,
        timed(|| {
            for i in 0..LOOKUPS {
                assert!(black_box(store.contains(&stored[i % stored.len()])));
            }
        }),
    );
    row(
        "contains() miss",
        LOOKUPS,
        timed(|| {
            for fp in &missing {
                assert!(!black_box(store.contains(fp)));
            }
        }),
    );
    row(
        "read() hit (manifest + 2 JSON files)",
        LOOKUPS,
        timed(|| {
            for i in 0..LOOKUPS {
                black_box(store.read(&stored[i % stored.len()]).expect("read"));
            }
        }),
    );
    row(
        "resolve_prefix() 8 hex chars",
        LOOKUPS,
        timed(|| {
            for i in 0..LOOKUPS {
                let hex = stored[i % stored.len()].to_string();
                black_box(store.resolve_prefix(&hex[..8]).expect("resolve"));
            }
        }),
    );
    row(
        "try_lock()+drop, uncontended",
        LOOKUPS,
        timed(|| {
            for i in 0..LOOKUPS {
                black_box(store.try_lock(&stored[i % stored.len()]).expect("lock").expect("free"));
            }
        }),
    );
    row(
        "verify() whole store, per entry",
        entries,
        timed(|| {
            assert!(store.verify().expect("verify").is_clean());
        }),
    );

    let half = RunRecord {
        run_id: "bench".into(),
        recipe: "bench".into(),
        recipe_path: "bench.kdl".into(),
        started_at: "2025-01-01T00:00:00Z".into(),
        finished_at: None,
        status: anvil_store::RunStatus::Succeeded,
        nodes: stored
            .iter()
            .step_by(2)
            .map(|fp| RunNode {
                name: fp.short(),
                kind: "cell".into(),
                fingerprint: *fp,
                status: NodeStatus::Ran,
                started_at: None,
                duration_ms: None,
                detail: None,
            })
            .collect(),
        extra: json!(null),
    };
    store.record_run(&half).expect("record run");
    row(
        "gc() removing half, per entry removed",
        entries / 2,
        timed(|| {
            let report = store.gc(false).expect("gc");
            assert_eq!(report.entries_removed.len(), entries - entries.div_ceil(2));
        }),
    );
}

fn timed(work: impl FnOnce()) -> Duration {
    let start = Instant::now();
    work();
    start.elapsed()
}

fn row(operation: &str, count: usize, elapsed: Duration) {
    let per_second = count as f64 / elapsed.as_secs_f64();
    println!("{operation:<40} {count:>8} {:>10.1}ms {per_second:>14.0}", elapsed.as_secs_f64() * 1e3);
}
