#!/usr/bin/env bash
# The README's first command, measured as a newcomer meets it: each REV (a
# commit, default HEAD) cloned fresh, and the first `cargo run` line of its
# README run there from an empty target folder (the build and the quick
# start), one after the other on this machine, so the rows are side by
# side. Prints wall and CPU seconds per command, the command, and the ten
# longest units of its build (cargo --timings). Registry downloads are
# cached by cargo and not counted after the first build.
#
#   scripts/bench-first-build.sh                 # HEAD
#   scripts/bench-first-build.sh 319a612 HEAD    # before and after a change
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/anvil-first-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ $# -eq 0 ] && set -- HEAD
printf '%-12s %8s %8s  %s\n' rev wall_s cpu_s "command; longest units (s)"
for rev in "$@"; do
  commit=$(git -C "$repo" rev-parse --short "$rev")
  git clone -q "$repo" "$work/$commit" && git -C "$work/$commit" checkout -q "$commit"
  first=$(grep -m1 '^cargo run' "$work/$commit/README.md")
  # `cargo run [--release] -- ARGS` with --timings added to its build options.
  read -ra command <<<"${first/cargo run/cargo run --timings}"
  ( cd "$work/$commit" && /usr/bin/time -f "%e %U %S" -o "$work/$commit.time" \
      env CARGO_TARGET_DIR="$work/$commit-target" "${command[@]}" >"$work/$commit.log" 2>&1 )
  read -r wall user sys <"$work/$commit.time"
  units=$(python3 - "$work/$commit-target/cargo-timings" <<'PY'
import glob, json, re, sys
page = sorted(glob.glob(sys.argv[1] + "/cargo-timing-2*.html"))[-1]
data = json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);\n", open(page).read(), re.S).group(1))
top = sorted(data, key=lambda u: -u["duration"])[:10]
print(", ".join(f"{u['name']} {u['duration']:.0f}" for u in top))
PY
)
  printf '%-12s %8.0f %8.0f  %s; %s\n' "$commit" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$first" "$units"
done
