#!/usr/bin/env bash
# Runs every fuzz target (the proptest property tests of fuzz/harness.rs).
#
#   scripts/fuzz.sh [TARGET...]                       the fixed run (CI's)
#   scripts/fuzz.sh --explore [SECONDS] [TARGET...]   fresh seeds, time-bound
#
# The fixed run replays the seed corpus (fuzz/corpus/) and a fixed list of
# generated cases: each property runs the case count below from the fixed
# seed (batch b of 64 cases seeded seed + b), so it executes the same inputs
# on any machine and a landing's answer cannot hang on the draw. Its
# counts were sized to about 15 s a target on a 2-core machine; FUZZ_CASES
# overrides them all. A hard `timeout` of 600 s a target catches hangs.
#
# --explore searches instead: fresh seeds (printed) for SECONDS (default
# 60) a target, time-bound, under a hard `timeout` of SECONDS + 120. A
# finding prints the shrunk input and a PROPTEST_RNG_SEED that replays it:
# add the input to fuzz/corpus/<target>/ so the fixed run keeps it as a
# regression. Targets: chunked http_head sse json_scan chat_chunk expr
# recipe inputs (default: all).
#
# Prints, per target, the cases executed and any failures; exits 1 on a
# finding (a failed property, a panic, a hang), 2 on a usage or build error.
set -uo pipefail
cd "$(dirname "$0")/.."

explore=0
seconds=60
if [[ "${1:-}" == "--explore" ]]; then
  explore=1
  shift
  if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    seconds="$1"
    shift
  fi
  if [[ "$seconds" -eq 0 ]]; then
    echo "usage: scripts/fuzz.sh --explore [SECONDS] [TARGET...]" >&2
    exit 2
  fi
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh [TARGET...] (fixed cases) or scripts/fuzz.sh --explore [SECONDS] [TARGET...]" >&2
  exit 2
fi

# Cases per property in the fixed run (about 15 s a target here).
declare -A fixed_cases=(
  [chunked]=4096
  [http_head]=4096
  [sse]=3072
  [json_scan]=8192
  [chat_chunk]=3072
  [expr]=3072
  [recipe]=512
  [inputs]=4096
)

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
  start=$(date +%s)
  if [[ $explore -eq 1 ]]; then
    echo "== $t: ${seconds}s, fresh seeds"
    limit=$((seconds + 120))
    # shellcheck disable=SC2086
    ANVIL_FUZZ_EXPLORE=1 ANVIL_FUZZ_SECONDS="$seconds" PROPTEST_CASES="${FUZZ_CASES:-1000000000}" \
      ANVIL_FUZZ_STATS="$stats" \
      timeout -k 10 $limit cargo test -q "${build[@]}" -- --test-threads 16 $filters >"$log" 2>&1
  else
    cases="${FUZZ_CASES:-${fixed_cases[$t]}}"
    echo "== $t: $cases cases a property, fixed seed"
    limit=600
    # shellcheck disable=SC2086
    PROPTEST_CASES="$cases" ANVIL_FUZZ_STATS="$stats" \
      timeout -k 10 $limit cargo test -q "${build[@]}" -- --test-threads 16 $filters >"$log" 2>&1
  fi
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
    why="timed out after ${limit}s: a hang?"
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

if [[ $explore -eq 1 ]]; then echo "== fuzz summary (${seconds}s per target, fresh seeds)"; else echo "== fuzz summary (fixed cases and seed)"; fi
printf '   %s\n' "${summary[@]}"
if [[ $findings -gt 0 ]]; then
  echo "fuzz: $findings target(s) with findings" >&2
  exit 1
fi
