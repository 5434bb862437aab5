//! Standalone sim server: `anvil-sim [--host H] [--port P] [--profile-json JSON]`.
//! anvil itself runs the same server as `anvil sim`; this binary lets the
//! sim's own tests and benchmarks run it as a separate process.

use anvil_sim::SimProfile;
use anyhow::{Context as _, bail};

fn main() -> anyhow::Result<()> {
    let mut host = "127.0.0.1".to_owned();
    let mut port = 0u16;
    let mut profile = SimProfile::default();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--host" => host = value()?,
            "--port" => port = value()?.parse().context("--port must be a number")?,
            "--profile-json" => profile = SimProfile::from_json(&value()?)?,
            "--set" => {
                let pair = value()?;
                let (key, val) = pair.split_once('=').context("--set takes KEY=VALUE")?;
                profile.set(key, val)?;
            }
            other => bail!(
                "unknown argument {other}; usage: anvil-sim [--host H] [--port P] [--profile-json JSON] [--set KEY=VALUE]..."
            ),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind((host.as_str(), port))
            .await
            .with_context(|| format!("cannot listen on {host}:{port}"))?;
        // The bound address on stdout tells a parent which port it got.
        println!("anvil-sim listening on http://{}", listener.local_addr()?);
        anvil_sim::serve(profile, listener).await?;
        Ok(())
    })
}
