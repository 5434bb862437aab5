//! How long the lifecycle steps take on this machine. Prints a table;
//! asserts nothing (timings are noisy; tests never time anything).
//!
//!     cargo bench -p anvil-proc --bench lifecycle

use std::time::{Duration, Instant};

use anvil_proc::{LaunchSpec, ReadySpec, free_port, launch, proc_table};

const ROUNDS: usize = 20;

fn spec(dir: &std::path::Path, name: &str, program: &str, args: &[&str], ready: ReadySpec) -> LaunchSpec {
    LaunchSpec {
        name: name.to_string(),
        program: program.to_string(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: Vec::new(),
        cwd: Some(dir.to_path_buf()),
        port: free_port().expect("port"),
        ready,
        log_path: dir.join(format!("{name}.log")),
        grace: Duration::from_secs(5),
        registry_dir: dir.join("servers"),
    }
}

fn log_ready() -> ReadySpec {
    ReadySpec {
        http_path: None,
        expect_status: 200,
        log_pattern: Some("^ready$".to_string()),
        timeout: Duration::from_secs(30),
        interval: Duration::from_millis(20),
        tls: None,
    }
}

struct Row {
    what: &'static str,
    samples: Vec<Duration>,
}

impl Row {
    fn print(&mut self) {
        self.samples.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let at = |q: f64| self.samples[((self.samples.len() - 1) as f64 * q).round() as usize];
        println!(
            "| {:<44} | {:>3} | {:>9.2} | {:>9.2} | {:>9.2} |",
            self.what,
            self.samples.len(),
            ms(at(0.5)),
            ms(at(0.9)),
            ms(at(1.0))
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().expect("dir");
    let mut rows = Vec::new();

    let mut ready = Row { what: "launch → ready (sh, log pattern)", samples: Vec::new() };
    let mut stop = Row { what: "stop, SIGTERM honoured (sh + forked sleep)", samples: Vec::new() };
    for i in 0..ROUNDS {
        let script = "sleep 1000 & echo ready; wait";
        let s = spec(dir.path(), &format!("sh{i}"), "sh", &["-c", script], log_ready());
        let server = launch(s).await.expect("ready");
        ready.samples.push(server.startup());
        stop.samples.push(server.stop().await.duration);
    }
    rows.push(ready);
    rows.push(stop);

    let mut http = Row { what: "launch → ready (python http.server, HTTP)", samples: Vec::new() };
    for i in 0..ROUNDS / 4 {
        let port = free_port().expect("port");
        let mut s = spec(
            dir.path(),
            &format!("py{i}"),
            "python3",
            &["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1"],
            ReadySpec { http_path: Some("/".to_string()), log_pattern: None, ..log_ready() },
        );
        s.port = port;
        let server = launch(s).await.expect("ready");
        http.samples.push(server.startup());
        server.stop().await;
    }
    rows.push(http);

    let mut scan = Row { what: "/proc scan for one server tree", samples: Vec::new() };
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let _ = proc_table::server_tree(Some(1), "no-such-token");
        scan.samples.push(started.elapsed());
    }
    rows.push(scan);

    println!("processes visible: {}", proc_table::all_processes().len());
    println!("| {:<44} | {:>3} | {:>9} | {:>9} | {:>9} |", "step", "n", "p50 ms", "p90 ms", "max ms");
    println!("|{:-<46}|{:-<5}|{:-<11}|{:-<11}|{:-<11}|", "", "", "", "", "");
    for row in &mut rows {
        row.print();
    }
}
