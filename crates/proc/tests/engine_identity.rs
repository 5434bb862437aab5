//! An engine is identified by the bytes of its executable, not its name.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use anvil_proc::{ProcError, engine_identity, engine_identity_with_timeout};

fn write_executable(path: &Path, script: &str) {
    std::fs::write(path, script).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn hash_and_version_change_when_the_binary_changes() {
    let dir = tempfile::tempdir().expect("dir");
    let engine = dir.path().join("fake-engine");
    write_executable(&engine, "#!/bin/sh\necho 'fake-engine 1.0.0'\n");
    let engine = engine.display().to_string();

    let first = engine_identity(&engine, &["--version"]).expect("identity");
    write_executable(
        Path::new(&engine),
        "#!/bin/sh\necho 'fake-engine 1.0.1'\necho 'built with CUDA 12.8' >&2\n",
    );
    let second = engine_identity(&engine, &["--version"]).expect("identity");

    assert_eq!(first.version_output.as_deref(), Some("fake-engine 1.0.0"));
    assert_eq!(second.version_output.as_deref(), Some("fake-engine 1.0.1\nbuilt with CUDA 12.8"));
    assert_ne!(first.blake3, second.blake3);
    assert_eq!(first.blake3.len(), 64);
    assert_eq!(first.program_path, second.program_path);
}

#[test]
fn same_bytes_give_the_same_hash() {
    let dir = tempfile::tempdir().expect("dir");
    let script = "#!/bin/sh\necho v2\n";
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    write_executable(&a, script);
    write_executable(&b, script);

    let a = engine_identity(&a.display().to_string(), &[]).expect("a");
    let b = engine_identity(&b.display().to_string(), &[]).expect("b");

    assert_eq!(a.blake3, b.blake3);
    assert_eq!(a.blake3, blake3::hash(script.as_bytes()).to_hex().to_string());
    assert_eq!(a.version_output, None, "no version args, no version run");
}

#[test]
fn program_on_path_is_resolved() {
    let identity = engine_identity("sh", &[]).expect("sh is on PATH");
    assert!(identity.program_path.starts_with('/'), "{}", identity.program_path);
}

#[test]
fn failing_or_hanging_version_command_is_not_an_error() {
    let dir = tempfile::tempdir().expect("dir");
    let silent = dir.path().join("silent");
    write_executable(&silent, "#!/bin/sh\nexit 2\n");
    let hangs = dir.path().join("hangs");
    write_executable(&hangs, "#!/bin/sh\nsleep 1000\n");

    let silent = engine_identity(&silent.display().to_string(), &["--version"]).expect("ok");
    let hangs = engine_identity_with_timeout(
        &hangs.display().to_string(),
        &["--version"],
        Duration::from_millis(200),
    )
    .expect("ok");

    assert_eq!(silent.version_output, None);
    assert_eq!(hangs.version_output, None);
}

#[test]
fn missing_program_is_an_error() {
    let error = engine_identity("/no/such/engine", &["--version"]).expect_err("missing");
    assert!(matches!(error, ProcError::ProgramNotFound { .. }), "{error}");
}
