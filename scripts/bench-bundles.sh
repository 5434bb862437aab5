#!/usr/bin/env bash
# Bundle throughput on the published Qwen3.8 campaign (its simulated twins):
# runs it once into a scratch store (~5 minutes on 2 cores), then exports,
# verifies, imports into a fresh store and reproduces it, and prints one
# table: bundle size, MB/s and peak memory of each, side by side.
#
#   scripts/bench-bundles.sh [RECIPE]      (default recipes/qwen38-possibility.kdl)
set -euo pipefail
cd "$(dirname "$0")/.."
recipe="${1:-recipes/qwen38-possibility.kdl}"
cargo build --release --quiet
anvil="$PWD/target/release/anvil"
work=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "keeping $work" >&2 || trap 'rm -rf "$work"' EXIT
cp -r recipes "$work/"
cd "$work"

# seconds and peak RSS (MB) of one command, from GNU time
measure() {
  local out="$1"; shift
  /usr/bin/time -f '%e %M' -o "$work/time.txt" "$@" >"$out" 2>&1 || { cat "$out"; exit 1; }
  read -r seconds kib <"$work/time.txt"
  echo "$seconds $((kib / 1024))"
}

echo "running $recipe --sim once (the campaign the bundle carries)…" >&2
read -r run_s run_mb < <(measure run.log "$anvil" run "$recipe" --sim --store a)
read -r export_s export_mb < <(measure export.log "$anvil" export "$recipe" --store a -o campaign.anvil)
bundle_mb=$(awk "BEGIN {print $(stat -c %s campaign.anvil) / 1e6}")
raw_mb=$(grep -Eo '[0-9.]+ MB →' export.log | grep -Eo '[0-9.]+')
read -r verify_s verify_mb < <(measure verify.log "$anvil" verify campaign.anvil)
read -r import_s import_mb < <(measure import.log "$anvil" import campaign.anvil --store b --into theirs)
read -r plan_s plan_mb < <(measure plan.log "$anvil" plan "theirs/$(basename "$recipe")" --store b --sim)
# Reproduce: the campaign run again here on its twins into a third store, compared with the bundle.
mkdir -p elsewhere
# It answers reproduced (0), differs (1) or inconclusive (3): each is a finished reproduction.
answered='"$@"; rc=$?; [ $rc -eq 0 ] || [ $rc -eq 1 ] || [ $rc -eq 3 ]'
read -r repro_s repro_mb < <(cd elsewhere && measure ../reproduce.log bash -c "$answered" _ "$anvil" reproduce ../campaign.anvil --sim --store c)

rate() { awk "BEGIN {printf \"%.1f\", $1 / ($2 > 0.005 ? $2 : 0.005)}"; }
echo
echo "bundle of $recipe: $(grep -Eo '[0-9]+ members \([0-9]+ stored steps\)' export.log), $raw_mb MB of members, $bundle_mb MB compressed"
printf '%-28s %9s %12s %10s\n' "step" "seconds" "MB/s (raw)" "peak MB"
printf '%-28s %9s %12s %10s\n' "run --sim (for scale)" "$run_s" "—" "$run_mb"
printf '%-28s %9s %12s %10s\n' "export" "$export_s" "$(rate "$raw_mb" "$export_s")" "$export_mb"
printf '%-28s %9s %12s %10s\n' "verify (hash + re-derive)" "$verify_s" "$(rate "$raw_mb" "$verify_s")" "$verify_mb"
printf '%-28s %9s %12s %10s\n' "import" "$import_s" "$(rate "$raw_mb" "$import_s")" "$import_mb"
printf '%-28s %9s %12s %10s\n' "plan after import" "$plan_s" "—" "$plan_mb"
printf '%-28s %9s %12s %10s\n' "reproduce --sim" "$repro_s" "—" "$repro_mb"
grep -E "verified|NOT VERIFIED" verify.log
grep -Eo '[0-9]+ pending, [0-9]+ cached' plan.log
tail -n 1 reproduce.log
