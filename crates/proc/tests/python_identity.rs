//! A Python engine is identified by its interpreter and the distributions
//! installed beside it, read from a real venv without importing them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anvil_proc::{ProcError, python_identity};

/// A fresh venv (no pip: fast) and its site-packages; None where python3
/// cannot make one.
fn venv() -> Option<(tempfile::TempDir, String, PathBuf)> {
    let python3 = which::which("python3").ok()?;
    let dir = tempfile::tempdir().expect("dir");
    let venv = dir.path().join("venv");
    let made = Command::new(python3).args(["-m", "venv", "--without-pip"]).arg(&venv).status().ok()?;
    if !made.success() {
        eprintln!("skipped: python3 -m venv failed");
        return None;
    }
    let lib = std::fs::read_dir(venv.join("lib")).expect("venv lib");
    let site = lib
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .expect("site-packages");
    let python = venv.join("bin").join("python").display().to_string();
    Some((dir, python, site))
}

fn install_fake(site: &Path, folder_name: &str, name: &str, version: &str, record: &str) -> PathBuf {
    let info = site.join(format!("{folder_name}-{version}.dist-info"));
    std::fs::create_dir_all(&info).expect("dist-info");
    std::fs::write(
        info.join("METADATA"),
        format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
    )
    .expect("METADATA");
    std::fs::write(info.join("RECORD"), record).expect("RECORD");
    info
}

const RECORD: &str = "fakeengine/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n";

#[test]
fn installed_distribution_shows_its_version_and_missing_ones_are_absent() {
    let Some((_dir, python, site)) = venv() else { return };
    install_fake(&site, "fakeengine", "fakeengine", "1.0", RECORD);

    let identity = python_identity(&python, &["fakeengine", "not-installed-anywhere"]).expect("identity");

    let fake = &identity.distributions["fakeengine"];
    assert_eq!(fake.version, "1.0");
    assert_eq!(fake.record_sha256.as_deref().map(str::len), Some(64));
    assert_eq!(identity.distributions.len(), 1, "{:?}", identity.distributions);
    assert_eq!(identity.torch_build, None);
    assert!(identity.prefix.ends_with("/venv"), "the venv, not the base python: {}", identity.prefix);
    assert!(identity.python_version.starts_with('3'), "{}", identity.python_version);
    assert_eq!(identity.python_path, python);

    let json = serde_json::to_string(&identity).expect("serialize");
    assert_eq!(serde_json::from_str::<anvil_proc::PythonIdentity>(&json).expect("deserialize"), identity);
}

#[test]
fn a_new_version_or_a_new_record_changes_the_identity() {
    let Some((_dir, python, site)) = venv() else { return };
    let info = install_fake(&site, "fakeengine", "fakeengine", "1.0", RECORD);
    let first = python_identity(&python, &["fakeengine"]).expect("identity");

    std::fs::write(info.join("RECORD"), RECORD.replace("47DEQ", "58EFR")).expect("RECORD");
    let rebuilt = python_identity(&python, &["fakeengine"]).expect("identity");
    assert_eq!(rebuilt.distributions["fakeengine"].version, "1.0");
    assert_ne!(
        rebuilt.distributions["fakeengine"].record_sha256,
        first.distributions["fakeengine"].record_sha256
    );
    assert_ne!(rebuilt, first);

    std::fs::remove_dir_all(&info).expect("uninstall");
    install_fake(&site, "fakeengine", "fakeengine", "1.1", RECORD);
    let upgraded = python_identity(&python, &["fakeengine"]).expect("identity");
    assert_eq!(upgraded.distributions["fakeengine"].version, "1.1");
    assert_eq!(
        upgraded.distributions["fakeengine"].record_sha256,
        first.distributions["fakeengine"].record_sha256
    );
    assert_ne!(upgraded, first);
}

#[test]
fn names_are_matched_canonically() {
    let Some((_dir, python, site)) = venv() else { return };
    install_fake(&site, "flashinfer_python", "flashinfer-python", "0.3.0", RECORD);

    let identity = python_identity(&python, &["Flashinfer_Python"]).expect("identity");

    assert_eq!(identity.distributions["flashinfer-python"].version, "0.3.0");
}

#[test]
fn torch_build_is_read_from_its_version_file() {
    let Some((_dir, python, site)) = venv() else { return };
    install_fake(&site, "torch", "torch", "2.13.0", "torch/version.py,,\n");
    std::fs::create_dir_all(site.join("torch")).expect("torch");
    // Never imported: an import would fail on purpose.
    std::fs::write(site.join("torch/__init__.py"), "raise ImportError('torch must not be imported')\n")
        .expect("init");
    std::fs::write(
        site.join("torch/version.py"),
        "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n\
         __version__ = '2.13.0+cu128'\ndebug = False\ncuda: Optional[str] = '12.8'\n\
         git_version = '0123456789abcdef0123456789abcdef01234567'\nhip: Optional[str] = None\n",
    )
    .expect("version.py");

    let identity = python_identity(&python, anvil_proc::VLLM_DISTRIBUTIONS).expect("identity");

    assert_eq!(identity.distributions["torch"].version, "2.13.0");
    let build = identity.torch_build.expect("torch build");
    assert_eq!(build.cuda.as_deref(), Some("12.8"));
    assert_eq!(build.hip, None);
    assert_eq!(build.version.as_deref(), Some("2.13.0+cu128"));
    assert_eq!(build.git_version.as_deref(), Some("0123456789abcdef0123456789abcdef01234567"));
    assert_eq!(build.unreadable, None);
}

#[test]
fn a_python_that_does_not_exist_is_an_error() {
    let error = python_identity("/no/such/python3", &["vllm"]).expect_err("missing");
    assert!(matches!(error, ProcError::ProgramNotFound { .. }), "{error}");

    let error = python_identity("no-such-python-on-path", &["vllm"]).expect_err("missing");
    assert!(matches!(error, ProcError::ProgramNotFound { .. }), "{error}");
}

#[test]
fn a_program_that_is_not_python_is_an_error() {
    let error = python_identity("false", &["vllm"]).expect_err("not python");
    assert!(matches!(error, ProcError::PythonProbe { .. }), "{error}");
}
