//! The simulated engine in the bench's process, on its own thread and
//! runtime (one worker), for the whole bench: `start(profile keys)` gives
//! its base URL.

pub fn start(settings: &[(&str, &str)]) -> String {
    let settings: Vec<(String, String)> =
        settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        rt.block_on(async move {
            let mut profile = anvil_sim::SimProfile::default();
            for (k, v) in &settings {
                profile.set(k, v).unwrap();
            }
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let sim = anvil_sim::spawn(profile, listener).await.unwrap();
            tx.send(sim.base_url()).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("sim address")
}
