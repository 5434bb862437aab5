//! Wall time of each check type against the in-process simulated engine
//! (1 ms decode steps), to size check nodes in a campaign. Prints a table:
//! `cargo bench -p anvil-checks --bench check_wall_time`.

use std::time::Instant;

use anvil_checks::{CheckSpec, CheckType, Target, run_check};
use anvil_sim::SimProfile;

const RUNS: usize = 5;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut profile = SimProfile::default();
    for (key, value) in
        [("decode-step-ms", "1"), ("decode-step-ms-per-seq", "0.01"), ("prefill-tok-s", "1000000")]
    {
        profile.set(key, value)?;
    }
    let sim = anvil_sim::spawn(profile, tokio::net::TcpListener::bind("127.0.0.1:0").await?).await?;
    let target = Target::new(sim.base_url());

    println!(
        "{:<28} {:>8} {:>10} {:>10} {:>10}",
        "check (defaults)", "attempts", "min ms", "median ms", "max ms"
    );
    let mut cases: Vec<(String, CheckSpec)> = CheckType::ALL
        .iter()
        .map(|&check_type| {
            (check_type.to_string(), CheckSpec::new(check_type.as_str(), check_type, "anvil-sim"))
        })
        .collect();
    let mut prefixed = CheckSpec::new("tool-call+prefix", CheckType::ToolCall, "anvil-sim");
    prefixed.shared_prefix_tokens = 8000;
    cases.push(("tool-call, 8k shared prefix".into(), prefixed));

    for (label, spec) in cases {
        let mut times = Vec::with_capacity(RUNS);
        let mut attempts = 0;
        for _ in 0..RUNS {
            let started = Instant::now();
            let outcome = run_check(&spec, &target).await?;
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            anyhow::ensure!(outcome.passed, "{label} failed on a clean sim: {}", outcome.detail);
            attempts = outcome.attempts;
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{label:<28} {attempts:>8} {:>10.1} {:>10.1} {:>10.1}",
            times[0],
            times[RUNS / 2],
            times[RUNS - 1]
        );
    }
    sim.shutdown().await?;
    Ok(())
}
