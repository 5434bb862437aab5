//! Run every check type once against an in-process simulated engine and
//! print each outcome with its evidence:
//! `cargo run -p anvil-checks --example against_sim [fault-key=rate ...]`,
//! e.g. `faults.canary-leak-rate=1`.

use anvil_checks::{CheckSpec, CheckType, Target, run_check};
use anvil_sim::SimProfile;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut profile = SimProfile::default();
    profile.set("decode-step-ms", "1")?;
    for setting in std::env::args().skip(1) {
        let (key, value) =
            setting.split_once('=').ok_or_else(|| anyhow::anyhow!("expected key=value, got {setting}"))?;
        profile.set(key, value)?;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let sim = anvil_sim::spawn(profile, listener).await?;
    let target = Target::new(sim.base_url());
    for &check_type in CheckType::ALL {
        let name = check_type.as_str();
        let mut spec = CheckSpec::new(format!("example-{name}"), check_type, "anvil-sim");
        spec.requests = 1;
        spec.concurrency = 2;
        let outcome = run_check(&spec, &target).await?;
        println!("== {name}: {} — {}", if outcome.passed { "PASS" } else { "FAIL" }, outcome.detail);
        println!("{}", serde_json::to_string_pretty(&outcome.evidence)?);
    }
    sim.shutdown().await?;
    Ok(())
}
