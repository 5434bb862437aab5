#!/usr/bin/env bash
# Runs every fuzz target (the proptest property tests) for a bounded time.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS (default 60) is each target's budget: its tests run side by side
# with a huge PROPTEST_CASES and stop after SECONDS (ANVIL_FUZZ_SECONDS, see
# fuzz/harness.rs), under a hard `timeout` of SECONDS + 120 that catches
# hangs. Targets: chunked http_head sse json_scan chat_chunk expr recipe
# inputs
# (default: all). Each run uses fresh seeds (printed); a failure prints the
# shrunk input and a PROPTEST_RNG_SEED that replays it.
#
# Prints, per target, the cases executed and any failures; exits 1 on a
# finding (a failed property, a panic, a hang), 2 on a usage or build error.
# CI-sized: `scripts/fuzz.sh 20`. Environment: FUZZ_CASES caps the cases
# per test (default 1000000000, i.e. time-bound).
set -uo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
[[ $# -gt 0 ]] && shift
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [[ "$seconds" -eq 0 ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
  exit 2
fi
cases="${FUZZ_CASES:-1000000000}"

# target -> the test build it runs in (scripts/test-builds.sh: lib, core
# or integration, the tiers' own builds) | test name filters
declare -A where=(
  [chunked]="lib|fuzz_chunked_ corpus_chunked_"
  [http_head]="lib|fuzz_head_ corpus_http_head_"
  [sse]="lib|fuzz_sse_ corpus_sse_"
  [json_scan]="lib|fuzz_json_"
  [chat_chunk]="lib|fuzz_chat_chunk_ corpus_chat_chunk_"
  [expr]="core|fuzz_expr_ corpus_expr_"
  [recipe]="integration|fuzz_recipe_ corpus_recipe_"
  [inputs]="lib|fuzz_inputs_ corpus_inputs_"
)
# shellcheck source=scripts/test-builds.sh
source scripts/test-builds.sh
# The cargo arguments of a build, into the array `build`.
build_args() {
  case "$1" in
    lib) build=("${build_lib[@]}") ;;
    core) build=("${build_core_integration[@]}") ;;
    integration) build=("${build_integration[@]}") ;;
  esac
}
all=(chunked http_head sse json_scan chat_chunk expr recipe inputs)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")
for t in "${targets[@]}"; do
  if [[ -z "${where[$t]:-}" ]]; then
    echo "unknown target '$t' (known: ${all[*]})" >&2
    exit 2
  fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== building the fuzz targets"
built=""
for t in "${targets[@]}"; do
  args="${where[$t]%%|*}"
  [[ " $built " == *" $args "* ]] && continue
  build_args "$args"
  if ! cargo test -q "${build[@]}" --no-run >"$work/build.log" 2>&1; then
    cat "$work/build.log" >&2
    echo "fuzz: building ($args) failed" >&2
    exit 2
  fi
  built="$built $args "
done

findings=0
summary=()
for t in "${targets[@]}"; do
  build_args "${where[$t]%%|*}"
  filters="${where[$t]#*|}"
  stats="$work/$t.stats"
  log="$work/$t.log"
  : >"$stats"
  echo "== $t: ${seconds}s"
  start=$(date +%s)
  # shellcheck disable=SC2086
  ANVIL_FUZZ_SECONDS="$seconds" PROPTEST_CASES="$cases" ANVIL_FUZZ_STATS="$stats" \
    timeout -k 10 $((seconds + 120)) cargo test -q "${build[@]}" -- --test-threads 16 $filters >"$log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  total=$(sed -n 's/^fuzz-stat .* cases=\([0-9]*\) .*/\1/p' "$stats" | awk '{s += $1} END {print s + 0}')
  tests=$(grep -c '^fuzz-stat ' "$stats")
  failed=$(grep -c '^fuzz-stat .* failed=1' "$stats")
  while read -r line; do
    echo "   ${line#fuzz-stat target=$t }"
  done < <(grep '^fuzz-stat ' "$stats")
  if [[ $rc -eq 0 ]]; then
    echo "   $t: $total cases in $tests properties, no failures (${took}s)"
    summary+=("$(printf '%-11s %12s cases  ok' "$t" "$total")")
    continue
  fi
  findings=$((findings + 1))
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    why="timed out after $((seconds + 120))s: a hang?"
  elif [[ $failed -gt 0 ]]; then
    why="$failed failing propert$([[ $failed -eq 1 ]] && echo y || echo ies)"
  else
    why="the test run failed (exit $rc)"
  fi
  echo "   $t: FINDING: $why; $total cases ran"
  grep '^fuzz-fail ' "$stats" | sed 's/^/   /'
  grep -E '^(---- |thread .* panicked|test result)' "$log" | awk '!seen[$0]++' | head -20 | sed 's/^/   | /'
  if [[ $failed -eq 0 ]]; then
    tail -n 30 "$log" | sed 's/^/   | /'
  fi
  summary+=("$(printf '%-11s %12s cases  FINDING: %s' "$t" "$total" "$why")")
done

echo "== fuzz summary (${seconds}s per target)"
printf '   %s\n' "${summary[@]}"
if [[ $findings -gt 0 ]]; then
  echo "fuzz: $findings target(s) with findings" >&2
  exit 1
fi
