//! GPUs as a counted resource with concrete device ids. A server asks for
//! n GPUs and gets specific ids (for `CUDA_VISIBLE_DEVICES`); they return to
//! the pool when the lease is dropped. Waiters are served first come, first
//! served, so a large request is not starved by a stream of small ones.

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ProcError;

#[derive(Debug, Clone)]
pub struct GpuPool {
    inner: Arc<PoolState>,
}

#[derive(Debug)]
struct PoolState {
    all: Vec<String>,
    /// One permit per free GPU; `acquire_many` is fair (FIFO).
    permits: Arc<Semaphore>,
    free: Mutex<BTreeSet<String>>,
    /// (who, how many) for everyone blocked in `acquire`, in arrival order.
    waiting: Mutex<Vec<(u64, String, usize)>>,
    next_waiter: Mutex<u64>,
}

/// GPUs held by one server until dropped.
#[derive(Debug)]
pub struct GpuLease {
    pub ids: Vec<String>,
    pool: Arc<PoolState>,
    _permit: OwnedSemaphorePermit,
}

impl GpuLease {
    /// The ids joined for `CUDA_VISIBLE_DEVICES` / `HIP_VISIBLE_DEVICES`.
    pub fn visible_devices(&self) -> String {
        self.ids.join(",")
    }
}

impl Drop for GpuLease {
    fn drop(&mut self) {
        // Ids go back before the permit does (field drop order), so the
        // next holder of a permit always finds enough free ids.
        if let Ok(mut free) = self.pool.free.lock() {
            free.extend(self.ids.drain(..));
        }
    }
}

impl GpuPool {
    /// A pool of the given ids, e.g. from `--gpus 0,1,2,3`.
    pub fn from_ids<I, S>(ids: I) -> GpuPool
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut all: Vec<String> = Vec::new();
        for id in ids {
            let id = id.into();
            if !all.contains(&id) {
                all.push(id);
            }
        }
        GpuPool {
            inner: Arc::new(PoolState {
                permits: Arc::new(Semaphore::new(all.len())),
                free: Mutex::new(all.iter().cloned().collect()),
                all,
                waiting: Mutex::new(Vec::new()),
                next_waiter: Mutex::new(0),
            }),
        }
    }

    /// Parses a comma-separated list ("0,1,2,3"; blanks ignored).
    pub fn from_list(list: &str) -> GpuPool {
        GpuPool::from_ids(list.split(',').map(str::trim).filter(|s| !s.is_empty()))
    }

    /// The GPUs `nvidia-smi` reports; an empty pool when it is absent or fails.
    pub fn detect() -> GpuPool {
        GpuPool::from_ids(detect_nvidia_gpus())
    }

    pub fn ids(&self) -> &[String] {
        &self.inner.all
    }

    pub fn total(&self) -> usize {
        self.inner.all.len()
    }

    pub fn free_ids(&self) -> Vec<String> {
        match self.inner.free.lock() {
            Ok(free) => free.iter().cloned().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Waits until `n` GPUs are free and leases them.
    pub async fn acquire(&self, n: usize) -> Result<GpuLease, ProcError> {
        self.acquire_for("a server", n).await
    }

    /// Like [`acquire`](Self::acquire); `who` names the waiter in
    /// [`waiting_reason`](Self::waiting_reason).
    pub async fn acquire_for(&self, who: &str, n: usize) -> Result<GpuLease, ProcError> {
        if n > self.total() {
            return Err(ProcError::NotEnoughGpus { wanted: n, total: self.total() });
        }
        let waiter = self.enter_waiting(who, n);
        let permit = Arc::clone(&self.inner.permits).acquire_many_owned(n as u32).await;
        drop(waiter);
        // The semaphore is never closed, so this only fails on a bug.
        let permit = permit.map_err(|_| ProcError::NotEnoughGpus { wanted: n, total: self.total() })?;
        let ids = match self.inner.free.lock() {
            Ok(mut free) => {
                let taken: Vec<String> = free.iter().take(n).cloned().collect();
                for id in &taken {
                    free.remove(id);
                }
                taken
            }
            Err(_) => Vec::new(),
        };
        Ok(GpuLease { ids, pool: Arc::clone(&self.inner), _permit: permit })
    }

    /// Why someone is waiting, for the UI, e.g.
    /// "server vllm-tp2 waits for 2 GPUs; 1 free: 3". None when nobody waits.
    pub fn waiting_reason(&self) -> Option<String> {
        let waiting = self.inner.waiting.lock().ok()?;
        let (_, who, n) = waiting.first()?;
        let free = self.free_ids();
        let free_text = if free.is_empty() {
            "none free".to_string()
        } else {
            format!("{} free: {}", free.len(), free.join(","))
        };
        let more = match waiting.len() {
            1 => String::new(),
            others => format!(" ({} more waiting)", others - 1),
        };
        let plural = if *n == 1 { "GPU" } else { "GPUs" };
        Some(format!("{who} waits for {n} {plural}; {free_text}{more}"))
    }

    /// Lists the caller as waiting until the returned guard drops (also
    /// when the `acquire` future is cancelled).
    fn enter_waiting(&self, who: &str, n: usize) -> WaitingGuard {
        let id = match self.inner.next_waiter.lock() {
            Ok(mut next) => {
                *next += 1;
                *next
            }
            Err(_) => 0,
        };
        if let Ok(mut waiting) = self.inner.waiting.lock() {
            waiting.push((id, who.to_string(), n));
        }
        WaitingGuard { pool: Arc::clone(&self.inner), id }
    }
}

struct WaitingGuard {
    pool: Arc<PoolState>,
    id: u64,
}

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        if let Ok(mut waiting) = self.pool.waiting.lock() {
            waiting.retain(|(waiter, _, _)| *waiter != self.id);
        }
    }
}

fn detect_nvidia_gpus() -> Vec<String> {
    let Ok(output) = Command::new("nvidia-smi").args(["--query-gpu=index", "--format=csv,noheader"]).output()
    else {
        return Vec::new();
    };
    if !output.status.success() {
        return Vec::new();
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}
