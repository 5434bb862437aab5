//! How fast one core of the sim streams chunks, and how late they arrive.
//!
//! The sim runs on a current_thread runtime in its own thread (one core);
//! a raw-TCP reader runs in another thread. Run:
//!     cargo bench -p anvil-sim --bench chunk_rate

use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anvil_sim::SimProfile;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Start the sim on its own single-threaded runtime; returns its address.
fn start_sim(settings: &[(&str, &str)]) -> std::net::SocketAddr {
    let mut profile = SimProfile::default();
    for (key, value) in settings {
        profile.set(key, value).expect("bench settings are valid");
    }
    let (addr_tx, addr_rx) = std_mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let sim = anvil_sim::spawn(profile, listener).await.expect("sim starts");
            addr_tx.send(sim.addr()).expect("report address");
            std::future::pending::<()>().await;
        });
    });
    addr_rx.recv().expect("sim address")
}

fn unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// One raw HTTP/1.1 streaming request; returns (arrival unix ns, events in
/// that read) for every read, reading until the server closes.
async fn raw_stream(addr: std::net::SocketAddr, words: usize) -> Vec<(u64, usize)> {
    let body = json!({
        "messages": [{"role": "user", "content": format!("Write about {words} words.")}],
        "stream": true,
    })
    .to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut buffer = vec![0u8; 256 * 1024];
    let mut reads = Vec::new();
    let mut previous_byte = 0u8;
    loop {
        let n = stream.read(&mut buffer).await.expect("read");
        if n == 0 {
            return reads;
        }
        let at = unix_ns();
        // Count event ends ("\n\n"), including one split across reads.
        let mut events = 0;
        for &byte in &buffer[..n] {
            if byte == b'\n' && previous_byte == b'\n' {
                events += 1;
            }
            previous_byte = byte;
        }
        reads.push((at, events));
    }
}

/// Run `streams` concurrent streams from a reader thread; returns every
/// stream's reads and the wall time.
fn run_streams(
    addr: std::net::SocketAddr,
    streams: usize,
    words: usize,
) -> (Vec<Vec<(u64, usize)>>, Duration) {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let start = Instant::now();
            let tasks: Vec<_> = (0..streams).map(|_| tokio::spawn(raw_stream(addr, words))).collect();
            let mut all = Vec::new();
            for task in tasks {
                all.push(task.await.expect("stream task"));
            }
            (all, start.elapsed())
        })
    })
    .join()
    .expect("reader thread")
}

fn ground_truth(addr: std::net::SocketAddr) -> Vec<Value> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let url = format!("http://{addr}/debug/ground-truth?clear=1");
            anvil_net::install_crypto_provider();
            reqwest::get(url)
                .await
                .expect("ground truth")
                .json::<Vec<Value>>()
                .await
                .expect("ground truth JSON")
        })
    })
    .join()
    .expect("ground truth thread")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn main() {
    println!("chunk rate: sim on one current_thread core, zero-cost steps, ground truth on");
    println!("{:>8} {:>10} {:>12} {:>12}", "streams", "chunks", "seconds", "chunks/s");
    let addr =
        start_sim(&[("decode-step-ms", "0"), ("decode-step-ms-per-seq", "0"), ("prefill-tok-s", "1e9")]);
    run_streams(addr, 4, 2000); // warm up
    ground_truth(addr);
    for (streams, words) in [(1, 200_000), (16, 20_000), (64, 5_000)] {
        let (reads, wall) = run_streams(addr, streams, words);
        ground_truth(addr); // keep the record store small
        let chunks: usize = reads.iter().flatten().map(|(_, events)| events).sum();
        println!(
            "{streams:>8} {chunks:>10} {:>12.3} {:>12.0}",
            wall.as_secs_f64(),
            chunks as f64 / wall.as_secs_f64()
        );
    }

    println!();
    println!("added latency: server write (ground truth) -> client read, decode-step-ms 2");
    println!("{:>8} {:>14} {:>12} {:>12} {:>12}", "streams", "mean gap ms", "p50 us", "p99 us", "max us");
    let addr =
        start_sim(&[("decode-step-ms", "2"), ("decode-step-ms-per-seq", "0"), ("prefill-tok-s", "1e9")]);
    for streams in [1, 16] {
        ground_truth(addr);
        let (reads, _) = run_streams(addr, streams, 500);
        let truth = ground_truth(addr);
        let mut latencies = Vec::new();
        let mut gaps = Vec::new();
        // Match by order: in each stream, the k-th event read is the k-th event written.
        for (stream_reads, record) in reads.iter().zip(truth.iter()) {
            let writes: Vec<u64> = record["chunks"]
                .as_array()
                .expect("chunks")
                .iter()
                .map(|c| c["unix_ns"].as_u64().unwrap_or(0))
                .collect();
            let arrivals: Vec<u64> =
                stream_reads.iter().flat_map(|(at, events)| std::iter::repeat_n(*at, *events)).collect();
            // The first write holds two events (role chunk + first token),
            // every later write one: write i ends with event i + 1.
            for (i, written) in writes.iter().enumerate() {
                if let Some(arrived) = arrivals.get(i + 1) {
                    latencies.push(arrived.saturating_sub(*written) as f64 / 1000.0);
                }
            }
            gaps.extend(writes.windows(2).skip(1).map(|w| (w[1] - w[0]) as f64 / 1e6));
        }
        latencies.sort_by(f64::total_cmp);
        let mean_gap = gaps.iter().sum::<f64>() / gaps.len().max(1) as f64;
        println!(
            "{streams:>8} {mean_gap:>14.3} {:>12.1} {:>12.1} {:>12.1}",
            percentile(&latencies, 50.0),
            percentile(&latencies, 99.0),
            latencies.last().copied().unwrap_or(0.0)
        );
    }
}
