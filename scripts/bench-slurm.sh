#!/usr/bin/env bash
# Per-job overhead of the Slurm executor: runs RECIPE (default the
# quickstart) locally and through Slurm (`--executor slurm`) in fresh
# stores, and prints, per job, submit → worker started → first step stored
# → job's last step stored, next to the same steps' wall time in the local
# run. Needs a Slurm (scripts/start-slurm.sh).
#
#   scripts/bench-slurm.sh [RECIPE] [-- extra run args, e.g. --sim]     (ANVIL_BIN=… to use a built binary)
set -euo pipefail
cd "$(dirname "$0")/.."
recipe="$(realpath "${1:-recipes/quickstart.kdl}")"; shift || true
[ "${1:-}" = "--" ] && shift
# ANVIL_BIN=path skips the release build (e.g. target/debug/anvil).
if [ -n "${ANVIL_BIN:-}" ]; then anvil="$(realpath "$ANVIL_BIN")"; else cargo build --release --quiet; anvil="$PWD/target/release/anvil"; fi
work=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "keeping $work" >&2 || trap 'rm -rf "$work"' EXIT
cd "$work"
secs() { /usr/bin/time -f '%e' -o "$work/t" "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log"; exit 1; }; cat "$work/t"; }
local_s=$(secs "$anvil" run "$recipe" --store local "$@")
slurm_s=$(secs "$anvil" run "$recipe" --store slurm --executor slurm "$@")
head=$(ls -t slurm/runs/*.json | xargs jq -r 'select(.extra.jobs != null) | input_filename' | head -1)
printf '%-28s %6s %9s %11s %11s %12s\n' job steps start_ms first_ms last_ms local_ms
jq -r --slurpfile loc <(cat local/runs/*.json | jq -s '[.[].nodes[]] | map({(.name): .duration_ms}) | add') '
  . as $run | .extra.jobs[] | . as $j
  | ([$run.nodes[] | select(.name as $n | $j.steps | index($n)) | .duration_ms] | max) as $last
  | ([$j.steps[] | $loc[0][.] // 0] | max) as $local
  | "\($j.label)\t\($j.steps | length)\t\($j.start_latency_ms)\t\($j.first_step_ms)\t\($last)\t\($local)"' "$head" |
  while IFS=$'\t' read -r label n start first last loc; do
    printf '%-28s %6s %9s %11s %11s %12s\n' "$label" "$n" "$start" "$first" "$last" "$loc"
  done
echo
echo "whole run: local ${local_s}s, through slurm ${slurm_s}s"
echo "start_ms: submit → worker running; first_ms: submit → first step stored; last_ms: the group's last step ended (head clock, from its start); local_ms: the same steps in the local run, launch to the last one ended"
