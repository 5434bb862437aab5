//! GPUs are handed out as concrete ids; a request waits until enough are free.

use std::time::Duration;

use anvil_proc::{GpuPool, ProcError};

#[tokio::test]
async fn two_single_gpu_leases_run_together_and_a_third_waits() {
    let pool = GpuPool::from_list("0,1");
    let first = pool.acquire_for("server a", 1).await.expect("first");
    let second = pool.acquire_for("server b", 1).await.expect("second");
    let mut ids = [first.ids.clone(), second.ids.clone()].concat();
    ids.sort();
    assert_eq!(ids, ["0", "1"]);
    assert!(pool.free_ids().is_empty());

    let waiter_pool = pool.clone();
    let third = tokio::spawn(async move { waiter_pool.acquire_for("server c", 1).await });
    // Let the third request reach the pool and start waiting.
    while pool.waiting_reason().is_none() {
        tokio::task::yield_now().await;
    }
    assert_eq!(pool.waiting_reason().as_deref(), Some("server c waits for 1 GPU; none free"));
    assert!(!third.is_finished());

    let released = first.ids.clone();
    drop(first);
    let third = third.await.expect("join").expect("third lease");

    assert_eq!(third.ids, released, "gets exactly the GPU that was freed");
    assert!(pool.waiting_reason().is_none());
}

#[tokio::test]
async fn waiting_reason_names_the_free_gpus() {
    let pool = GpuPool::from_list("0,1,2,3");
    let held = pool.acquire(3).await.expect("three");
    let waiter_pool = pool.clone();
    let waiting = tokio::spawn(async move { waiter_pool.acquire_for("server vllm-tp2", 2).await });
    while pool.waiting_reason().is_none() {
        tokio::task::yield_now().await;
    }

    let free = pool.free_ids().join(",");
    assert_eq!(pool.waiting_reason(), Some(format!("server vllm-tp2 waits for 2 GPUs; 1 free: {free}")));

    drop(held);
    let lease = waiting.await.expect("join").expect("lease");
    assert_eq!(lease.ids.len(), 2);
    assert_eq!(lease.visible_devices().split(',').count(), 2);
}

#[tokio::test]
async fn a_big_request_is_not_starved_by_later_small_ones() {
    let pool = GpuPool::from_list("0,1");
    let held = pool.acquire(1).await.expect("one");
    let big_pool = pool.clone();
    let big = tokio::spawn(async move { big_pool.acquire_for("big", 2).await });
    while pool.waiting_reason().is_none() {
        tokio::task::yield_now().await;
    }
    let small_pool = pool.clone();
    let small = tokio::spawn(async move { small_pool.acquire_for("small", 1).await });
    while !pool.waiting_reason().is_some_and(|r| r.contains("1 more waiting")) {
        tokio::task::yield_now().await;
    }

    // One GPU is free, yet the small request queues behind the big one.
    assert_eq!(pool.free_ids().len(), 1);
    assert!(!small.is_finished());

    drop(held);
    let big = big.await.expect("join").expect("big lease");
    assert_eq!(big.ids.len(), 2);
    assert!(!small.is_finished());
    drop(big);
    let small = tokio::time::timeout(Duration::from_secs(30), small)
        .await
        .expect("small is served")
        .expect("join")
        .expect("small lease");
    assert_eq!(small.ids.len(), 1);
}

#[tokio::test]
async fn asking_for_more_gpus_than_exist_fails_at_once() {
    let pool = GpuPool::from_list("0, 1");
    let error = pool.acquire(3).await.expect_err("impossible");
    assert!(matches!(error, ProcError::NotEnoughGpus { wanted: 3, total: 2 }));
}

#[test]
fn list_parsing_ignores_blanks_and_duplicates() {
    let pool = GpuPool::from_list(" 2, 3,,3 ,");
    assert_eq!(pool.ids(), ["2", "3"]);
    assert_eq!(GpuPool::from_list("").total(), 0);
}

#[test]
fn detection_without_nvidia_smi_gives_an_empty_pool() {
    if which::which("nvidia-smi").is_ok() {
        eprintln!("skipped: nvidia-smi is installed here");
        return;
    }
    assert_eq!(GpuPool::detect().total(), 0);
}
