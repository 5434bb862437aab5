#!/usr/bin/env bash
# The project's test command: everything a fresh machine needs, then every
# test, in three tiers (each timed; the first that fails does not stop the rest):
#
#   core     in-process: the recipe, plan, fingerprint, store and statistics
#            cores (every crate's unit tests, the doc tests, and the in-process
#            integration tests of anvil-expr, -evidence, -store and -tokens);
#            needs nothing installed
#   e2e      every other integration test: the anvil binary against simulated
#            and scripted servers over loopback, the report in a browser
#   engines  real engines and a real cluster: vLLM, llama.cpp, Slurm
#
#   scripts/test.sh                 all three tiers, after installing what they need
#   scripts/test.sh core            one tier (core installs nothing)
#   scripts/test.sh core e2e        several
#   ANVIL_SKIP_REAL_ENGINE=1 scripts/test.sh   skip the llama.cpp build (its tests then say they were skipped)
#   ANVIL_SKIP_SYSTEM=1 scripts/test.sh        neither install Chromium nor start Slurm (those tests then skip)
#   ANVIL_SKIP_VLLM=1 scripts/test.sh          skip the vLLM install (~9 min, 6.3 GB the first time; its test then skips)
#   ANVIL_E2E_THREADS=2 scripts/test.sh e2e    e2e tests at a time (default 4: they mostly wait)
#
# Slow builds are cached outside the checkout ($ANVIL_CACHE, default ~/.cache/anvil),
# so a second run on the same machine starts testing within seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

tiers=("$@")
[ ${#tiers[@]} -eq 0 ] && tiers=(core e2e engines)
for tier in "${tiers[@]}"; do
  case "$tier" in core|e2e|engines) ;; *) echo "[test.sh] unknown tier '$tier' (core, e2e, engines)" >&2; exit 2 ;; esac
done
wants() { [[ " ${tiers[*]} " == *" $1 "* ]]; }
# Only the tiers past core need engines, a browser or a cluster.
needs_system=0
if wants e2e || wants engines; then needs_system=1; fi

if [ "$needs_system" = 1 ] && [ "${ANVIL_SKIP_REAL_ENGINE:-0}" != "1" ]; then
  started=$(date +%s)
  eval "$(bash scripts/llama-server.sh --print-env)"
  echo "[test.sh] llama-server ready in $(( $(date +%s) - started ))s: $LLAMA_SERVER" >&2
  export LLAMA_SERVER SMOLLM2_GGUF
fi

# The real vLLM (CPU build) for tests/vllm.rs, installed once into the cache.
if [ "$needs_system" = 1 ] && [ "${ANVIL_SKIP_REAL_ENGINE:-0}" != "1" ] && [ "${ANVIL_SKIP_VLLM:-0}" != "1" ]; then
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
if [ "$needs_system" = 0 ]; then
  :
elif [ "$(id -u)" = 0 ] && [ "${ANVIL_SKIP_SYSTEM:-0}" != "1" ]; then
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
if [ "$needs_system" = 1 ] && ! python3 -c 'import pyarrow' 2>/dev/null; then
  python3 -m pip install -q pyarrow >&2 2>/dev/null \
    || python3 -m pip install -q --break-system-packages pyarrow >&2 \
    || echo "[test.sh] could not install pyarrow: the Parquet test will skip" >&2
fi
if python3 -c 'import pyarrow' 2>/dev/null; then
  export ANVIL_REQUIRE_PYARROW=1
fi

log=$(mktemp)
status=0
# The cargo arguments of each build (shared with scripts/fuzz.sh).
# shellcheck source=scripts/test-builds.sh
source scripts/test-builds.sh
# Test names (module paths) that need a real engine or cluster.
engine_tests=(vllm:: slurm llama_server:: llama_trace::)
skip_engines=()
for t in "${engine_tests[@]}"; do skip_engines+=(--skip "$t"); done

run_tier() {
  local tier=$1; shift
  local started tier_log tier_status=0
  started=$(date +%s)
  tier_log=$(mktemp)
  echo "[test.sh] tier $tier" >&2
  "$@" 2>&1 | tee "$tier_log" || tier_status=$?
  local passed
  passed=$(grep -Eo '^test result: .* ([0-9]+) passed' "$tier_log" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
  echo "[test.sh] tier $tier: ${passed} passed in $(( $(date +%s) - started ))s (exit ${tier_status})" | tee -a "$log" >&2
  cat "$tier_log" >> "$log"
  rm -f "$tier_log"
  [ "$tier_status" = 0 ] || status=$tier_status
}
core() {
  local s=0
  cargo test "${build_lib[@]}" --no-fail-fast || s=$?
  cargo test --workspace "${features[@]}" --doc --no-fail-fast || s=$?
  cargo test "${build_core_integration[@]}" --no-fail-fast || s=$?
  return "$s"
}
wants core && run_tier core core
# The e2e tests mostly wait on servers' replies (4 at a time on 2 cores, the
# root binary's 217 took 314 s instead of 416 s, using 2.5 CPU-minutes in
# 5.5 minutes): run 4 at once unless told otherwise.
e2e_threads=${ANVIL_E2E_THREADS:-4}
wants e2e && run_tier e2e cargo test "${build_integration[@]}" --no-fail-fast -- "${skip_engines[@]}" --test-threads "$e2e_threads"
wants engines && run_tier engines cargo test "${build_integration[@]}" --no-fail-fast -- "${engine_tests[@]}"

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
