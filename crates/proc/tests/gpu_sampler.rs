//! GPU sampling through nvidia-smi's CSV loop mode, with a stand-in script
//! printing what nvidia-smi prints (real GPUs are checked where they exist).

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use anvil_proc::GpuSampler;

#[tokio::test]
async fn summarizes_samples_per_gpu() {
    let dir = tempfile::tempdir().expect("dir");
    let args_file = dir.path().join("args");
    let fake = dir.path().join("nvidia-smi");
    let script = format!(
        "#!/bin/sh\n\
         echo \"$@\" > {args}.tmp\n\
         echo '0, 100.0, 1980, 2619, 1000, 81559, 40, 50'\n\
         echo '1, [N/A], 1410, 2619, 2000, 81559, 45, 0'\n\
         echo '0, 300.0, 1800, 2619, 3000, 81559, 60, 100'\n\
         mv {args}.tmp {args}\n\
         exec sleep 1000\n",
        args = args_file.display()
    );
    std::fs::write(&fake, script).expect("write fake");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    let sampler = GpuSampler::start_with_program(
        &fake,
        &["0".to_string(), "1".to_string()],
        Duration::from_millis(100),
    )
    .expect("sampler starts");
    while !args_file.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let summary = sampler.stop().await;

    let args = std::fs::read_to_string(&args_file).expect("args");
    assert!(args.contains("--query-gpu=index,power.draw"), "{args}");
    assert!(args.contains("--loop-ms=100") && args.contains("--id=0,1"), "{args}");
    assert_eq!(summary.source.as_deref(), Some("nvidia-smi"));
    let gpus = summary.gpus.as_ref().expect("readings");
    let gpu0 = &gpus["0"];
    assert_eq!(gpu0.samples, 2);
    assert_eq!(gpu0.fields["power_w"].mean, 200.0);
    assert_eq!(gpu0.fields["power_w"].max, 300.0);
    assert_eq!(gpu0.fields["memory_used_mib"].max, 3000.0);
    let gpu1 = &gpus["1"];
    assert_eq!(gpu1.samples, 1);
    assert!(!gpu1.fields.contains_key("power_w"), "[N/A] readings are left out");
    // As the artifact stores it (`telemetry.gpu`).
    let stored = serde_json::to_value(&summary).expect("serializes");
    assert_eq!(stored["gpus"]["0"]["power_w"]["mean"], 200.0);
    assert_eq!(stored["interval_ms"], 100);
}

#[tokio::test]
async fn no_sampler_without_nvidia_smi() {
    if which::which("nvidia-smi").is_ok() {
        let sampler = GpuSampler::start(&[], Duration::from_millis(100)).expect("real sampler");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let summary = sampler.stop().await;
        eprintln!("real GPU summary: {summary:?}");
        assert!(summary.gpus.is_some_and(|g| !g.is_empty()));
        return;
    }
    assert!(GpuSampler::start(&[], Duration::from_millis(100)).is_none());
}
