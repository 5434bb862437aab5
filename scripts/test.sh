#!/usr/bin/env bash
# The project's test command: everything a fresh machine needs, then every test.
#
#   scripts/test.sh            build (or reuse) the real llama.cpp server, then run all tests
#   ANVIL_SKIP_REAL_ENGINE=1 scripts/test.sh   skip the llama.cpp build (its tests then say they were skipped)
#   ANVIL_SKIP_SYSTEM=1 scripts/test.sh        neither install Chromium nor start Slurm (those tests then skip)
#   ANVIL_SKIP_VLLM=1 scripts/test.sh          skip the vLLM install (~9 min, 6.3 GB the first time; its test then skips)
#
# Slow builds are cached outside the checkout ($ANVIL_CACHE, default ~/.cache/anvil),
# so a second run on the same machine starts testing within seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${ANVIL_SKIP_REAL_ENGINE:-0}" != "1" ]; then
  started=$(date +%s)
  eval "$(bash scripts/llama-server.sh --print-env)"
  echo "[test.sh] llama-server ready in $(( $(date +%s) - started ))s: $LLAMA_SERVER" >&2
  export LLAMA_SERVER SMOLLM2_GGUF
fi

# The real vLLM (CPU build) for tests/vllm.rs, installed once into the cache.
if [ "${ANVIL_SKIP_REAL_ENGINE:-0}" != "1" ] && [ "${ANVIL_SKIP_VLLM:-0}" != "1" ]; then
  started=$(date +%s)
  if env_lines="$(bash scripts/vllm.sh --print-env)"; then
    eval "$env_lines"
    export VLLM_PYTHON VLLM_MODEL_DIR ANVIL_REQUIRE_VLLM=1
    echo "[test.sh] vLLM ready in $(( $(date +%s) - started ))s: $VLLM_PYTHON" >&2
  elif [ -n "${CI:-}" ]; then
    echo "[test.sh] could not install vLLM, and CI runs its test: failing" >&2
    exit 1
  else
    echo "[test.sh] could not install vLLM: its test will skip" >&2
  fi
fi

# The browser test needs Chromium, the cluster tests a real Slurm: bring
# them up when we can (as root), and then hold the tests to them.
if [ "$(id -u)" = 0 ] && [ "${ANVIL_SKIP_SYSTEM:-0}" != "1" ]; then
  if ! command -v chromium >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null) \
      || echo "[test.sh] could not install chromium: the browser test will skip" >&2
  fi
  if bash scripts/start-slurm.sh >&2; then
    export ANVIL_REQUIRE_SLURM=1
  else
    echo "[test.sh] Slurm did not start: the cluster tests will skip" >&2
  fi
else
  echo "[test.sh] not root (or ANVIL_SKIP_SYSTEM=1): no Chromium install, no Slurm; those tests will skip" >&2
fi

# The Parquet test reads anvil's tables with someone else's reader
# (pyarrow); once it is importable, the test fails rather than skips.
if ! python3 -c 'import pyarrow' 2>/dev/null; then
  python3 -m pip install -q pyarrow >&2 2>/dev/null \
    || python3 -m pip install -q --break-system-packages pyarrow >&2 \
    || echo "[test.sh] could not install pyarrow: the Parquet test will skip" >&2
fi
if python3 -c 'import pyarrow' 2>/dev/null; then
  export ANVIL_REQUIRE_PYARROW=1
fi

log=$(mktemp)
status=0
cargo test --workspace --no-fail-fast 2>&1 | tee "$log" || status=$?

# One summary line across every test binary, in the plain form CI reads.
passed=$(grep -Eo '^test result: .* ([0-9]+) passed' "$log" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
failed=$(grep -Eo '; ([0-9]+) failed' "$log" | grep -Eo '[0-9]+' | awk '{s+=$1} END {print s+0}')
ignored=$(grep -Eo '; ([0-9]+) ignored' "$log" | grep -Eo '[0-9]+' | awk '{s+=$1} END {print s+0}')
# A test binary that dies (abort, signal) prints no result line, and each
# crate's integration tests are one binary: say so rather than undercount.
ran=$(grep -Ec '^ +(Running|Doc-tests) ' "$log")
reported=$(grep -c '^test result: ' "$log")
rm -f "$log"
if [ "$reported" -lt "$ran" ]; then
  echo "[test.sh] $((ran - reported)) of $ran test binaries ended without a result line (crashed?)" >&2
fi
echo "summary: ${passed} passed, ${failed} failed, ${ignored} skipped"
exit "$status"
