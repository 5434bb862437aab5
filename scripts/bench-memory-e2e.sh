#!/usr/bin/env bash
# Does anvil's memory stay flat end to end as a cell's request count grows?
#
# For each request count, a trace of that many lines (2-token replies,
# evenly spaced at $RATE/s) is replayed by `anvil run` against an external
# `anvil sim` (its own process, so its memory is not counted), and then the
# stored cell is read back by `show`, `report`, `verify`, `compare` and
# `export-data`. Prints one table: peak resident memory (max RSS, from
# /usr/bin/time) per command and request count, and each count's ratio to
# the first.
#
#   scripts/bench-memory-e2e.sh                   # 2,000 and 100,000 requests at 2,000/s
#   COUNTS="2000 20000" RATE=1000 scripts/bench-memory-e2e.sh
#   CELL=poisson scripts/bench-memory-e2e.sh      # a Poisson cell of that many requests instead of a trace
set -euo pipefail
cd "$(dirname "$0")/.."

COUNTS=${COUNTS:-"2000 100000"}
RATE=${RATE:-2000}
PORT=${PORT:-18431}
ANVIL=${ANVIL:-target/release/anvil}
[ -x "$ANVIL" ] || cargo build --release --features parquet --bin anvil >&2

work=$(mktemp -d)
sim_pid=""
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null || true
  [ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT

"$ANVIL" sim --port "$PORT" --set decode-step-ms=1 --set max-running-seqs=512 \
  --set ground-truth=false >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  sleep 0.1
done

# Max RSS (MiB) of one command; its output goes to the work folder's log.
peak_mib() {
  local out="$work/time.$$"
  /usr/bin/time -f '%M' -o "$out" "$@" >>"$work/commands.log" 2>&1 || {
    echo "failed: $*" >&2
    tail -20 "$work/commands.log" >&2
    exit 1
  }
  awk '{printf "%.1f", $1 / 1024}' "$out"
}

declare -A peak
commands="run show report verify compare export-data"
for n in $COUNTS; do
  dir="$work/n$n"
  mkdir -p "$dir"
  awk -v n="$n" -v rate="$RATE" 'BEGIN {
    for (i = 0; i < n; i++)
      printf "{\"timestamp_ms\": %.3f, \"input_tokens\": 16, \"output_tokens\": 2}\n", i * 1000.0 / rate
  }' >"$dir/trace.jsonl"
  cat >"$dir/memory.kdl" <<EOF
campaign "memory-$n"
server "sim" {
    url "http://127.0.0.1:$PORT"
    model "anvil-sim"
}
EOF
  if [ "${CELL:-trace}" = poisson ]; then
    cat >>"$dir/memory.kdl" <<EOF
cell "replay" server="sim" {
    requests $n
    arrival "poisson"
    rate $RATE
    concurrency 512
    context-tokens 16
    max-tokens 2
    // A 2-token reply cannot hold the canary marker.
    canaries #false
}
EOF
  else
    cat >>"$dir/memory.kdl" <<EOF
cell "replay" server="sim" {
    trace "trace.jsonl" format="jsonl"
}
EOF
  fi
  store="$dir/store"
  peak[run,$n]=$(peak_mib "$ANVIL" --store "$store" run "$dir/memory.kdl")
  artifact=$(find "$store" -name benchmark.json | head -1)
  fingerprint=$(basename "$(dirname "$artifact")")
  peak[show,$n]=$(peak_mib "$ANVIL" --store "$store" show "$fingerprint")
  peak[report,$n]=$(peak_mib "$ANVIL" --store "$store" report "$dir/memory.kdl" -o "$dir/report.html")
  peak[verify,$n]=$(peak_mib "$ANVIL" --store "$store" verify "$artifact")
  peak[compare,$n]=$(peak_mib "$ANVIL" --store "$store" compare "$artifact" "$artifact")
  peak[export-data,$n]=$(peak_mib "$ANVIL" --store "$store" export-data "$artifact" -o "$dir/tables")
  echo "[bench-memory-e2e] $n requests: artifact $(du -h "$artifact" | cut -f1)" >&2
done

first=${COUNTS%% *}
printf '%-12s' "command"
for n in $COUNTS; do printf '%14s' "$n req MiB"; done
for n in $COUNTS; do [ "$n" = "$first" ] || printf '%14s' "$n/$first"; done
echo
for c in $commands; do
  printf '%-12s' "$c"
  for n in $COUNTS; do printf '%14s' "${peak[$c,$n]}"; done
  for n in $COUNTS; do
    [ "$n" = "$first" ] || printf '%14s' "$(awk -v a="${peak[$c,$n]}" -v b="${peak[$c,$first]}" 'BEGIN {printf "%.2fx", a / b}')"
  done
  echo
done
