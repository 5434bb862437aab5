//! `anvil sim`: the simulated engine on its own, for curl and for anvil's
//! own server launcher (every `engine "sim"` server is this command).

use std::path::Path;

use anvil_sim::SimProfile;

use super::common::{Exit, failed, input};

pub async fn sim(host: &str, port: u16, profile_file: Option<&Path>, set: &[String]) -> Result<i32, Exit> {
    let mut profile = match profile_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| input(format!("cannot read profile {}: {e}", path.display())))?;
            SimProfile::from_json(&text).map_err(|e| input(format!("profile {}: {e}", path.display())))?
        }
        None => SimProfile::default(),
    };
    for item in set {
        let (key, value) =
            item.split_once('=').ok_or_else(|| input(format!("--set takes key=value, got `{item}`")))?;
        profile.set(key, value).map_err(|e| input(format!("--set {item}: {e}")))?;
    }
    let listener = tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|e| failed(format!("cannot listen on {host}:{port}: {e}")))?;
    eprintln!(
        "anvil sim (simulated engine) listening on http://{}",
        listener.local_addr().map(|a| a.to_string()).unwrap_or_default()
    );
    anvil_sim::serve(profile, listener).await.map_err(|e| failed(format!("sim: {e:#}")))?;
    Ok(0)
}
