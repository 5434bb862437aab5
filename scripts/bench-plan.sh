#!/usr/bin/env bash
# Wall time of `anvil plan` on realistic campaigns, median of RUNS runs,
# each binary given timed side by side (round-robin) so a noisy machine
# slows them alike:
#
#   qwen38     recipes/qwen38-possibility.kdl --sim (the published campaign)
#   sweep-1k   one simulated server, a 1,000-cell sweep, a screen and a gate over it
#   sweep-10k  the same with 10,000 cells
#   flat-10k   the 10,000 cells of sweep-10k written out one by one (0.9 MB of KDL)
#   ran-200    a 200-cell sweep with a screen and a gate, run once first (2
#              requests a cell), so the plan settles the screen and gate by
#              hashing the 200 stored results they read
#   ran-1k     the same with 1,000 cells (20 seconds to run on 2 cores)
#   ran-qwen38 qwen38 after one `anvil run --sim` (5 minutes; QWEN38_RUN=0 skips it)
#
# Each recipe is planned cold (a fresh store; for a case that ran, its
# store without its cache/ folder) and warm (the same store planned again).
#
#   scripts/bench-plan.sh                          the release build
#   scripts/bench-plan.sh old=/tmp/anvil-old new=target/release/anvil
#   RUNS=9 scripts/bench-plan.sh …                 (default 7)
#
# A LABEL=PROGRAM may be a wrapper script that sets environment variables.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
runs=${RUNS:-7}
if [ $# -eq 0 ]; then
  cargo build --release --quiet
  set -- "anvil=$root/target/release/anvil"
fi
labels=() programs=()
for arg in "$@"; do
  labels+=("${arg%%=*}")
  program="${arg#*=}"
  case "$program" in /*) ;; *) program="$root/$program" ;; esac
  programs+=("$program")
done
work=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "keeping $work" >&2 || trap 'rm -rf "$work"' EXIT
cd "$work"

# A sweep of a × b cells on one simulated server (each cell its own
# concurrency and context length, so its own fingerprint), with a screen
# and a gate that read every cell.
sweep_recipe() {
  local a=$1 b=$2 a_values b_values
  a_values=$(seq -s ' ' 1 "$a")
  b_values=$(seq -s ' ' 16 $((16 + b - 1)))
  cat <<EOF
campaign "plan-bench" { seed 1; }
server "sim" {
    engine "sim"
    model "bench-model"
    sim { prefill-tok-s 1000000; decode-step-ms 0.1; max-running-seqs 64; }
}
workload "tiny" {
    context-tokens 16
    concurrency 1
    requests 2
    max-tokens 8
    canaries #false
}
cell "load-a{a}-b{b}" server="sim" workload="tiny" {
    sweep "a" $a_values
    sweep "b" $b_values
    concurrency "{a}"
    context-tokens "{b}"
}
screen "best" {
    over "cell.load-*"
    metric "aggregate_tok_s"
    goal "maximize"
}
gate "no-failures" {
    require "max(cell.load-*.failed) == 0"
}
EOF
}
# The same 10,000 cells written out one by one: 0.9 MB of KDL to parse.
flat_recipe() {
  sweep_recipe 1 1 | sed '/^cell/,/^}/d'
  for a in $(seq 1 100); do
    for b in $(seq 16 115); do
      echo "cell \"load-a$a-b$b\" server=\"sim\" workload=\"tiny\" { concurrency $a; context-tokens $b; }"
    done
  done
}
sweep_recipe 20 50 >sweep-1k.kdl
sweep_recipe 100 100 >sweep-10k.kdl
flat_recipe >flat-10k.kdl
sweep_recipe 10 20 >stored-200.kdl
sweep_recipe 20 50 >stored-1k.kdl

ms_now() { date +%s%N; }
# Milliseconds one command takes (its output discarded).
timed() {
  local start end
  start=$(ms_now)
  "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; "$@" >&2 || true; exit 1; }
  end=$(ms_now)
  echo $(((end - start) / 1000000))
}
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# Run each of these once, so its plan reads stored results.
ran=(ran-200 ran-1k)
[ "${QWEN38_RUN:-1}" = 1 ] && ran+=(ran-qwen38)
recipe_of() {
  case $1 in
    qwen38|ran-qwen38) echo "$root/recipes/qwen38-possibility.kdl --sim" ;;
    ran-200) echo stored-200.kdl ;;
    ran-1k) echo stored-1k.kdl ;;
    *) echo "$1.kdl" ;;
  esac
}
for case in "${ran[@]}"; do
  echo "running $(recipe_of "$case") once for $case…" >&2
  # shellcheck disable=SC2046 # the recipe and its flags, as words
  "${programs[0]}" run $(recipe_of "$case") --store "store-$case" >"$case.log" 2>&1 ||
    { tail -n 20 "$case.log" >&2; exit 1; }
done

declare -A cold warm
for case in qwen38 sweep-1k sweep-10k flat-10k "${ran[@]}"; do
  read -r -a recipe <<<"$(recipe_of "$case")"
  for i in "${!programs[@]}"; do cold[$case/$i]="" warm[$case/$i]=""; done
  for _ in $(seq "$runs"); do
    for i in "${!programs[@]}"; do
      # Cold: a store without its cache/ (for a case that ran, the results stay).
      store="store-$case"
      [ -d "$store/entries" ] || { store="s-$i"; rm -rf "$store"; }
      rm -rf "$store/cache"
      cold[$case/$i]+=" $(timed "${programs[$i]}" plan "${recipe[@]}" --store "$store")"
      warm[$case/$i]+=" $(timed "${programs[$i]}" plan "${recipe[@]}" --store "$store")"
    done
  done
  steps=$("${programs[0]}" plan "${recipe[@]}" --store "$store" --json | grep -c '"fingerprint"' || true)
  for i in "${!programs[@]}"; do
    printf '%-11s %6s steps  %-14s cold %6s ms  warm %6s ms   (cold:%s; warm:%s)\n' "$case" "$steps" \
      "${labels[$i]}" "$(echo "${cold[$case/$i]}" | median)" "$(echo "${warm[$case/$i]}" | median)" \
      "${cold[$case/$i]}" "${warm[$case/$i]}"
  done
done
