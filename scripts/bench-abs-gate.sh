#!/usr/bin/env bash
# A gate over `abs(…)` between two identical simulated servers, run as whole
# campaigns: N seeded campaigns (default 200, seeds 1..N), each two servers
# alike but for a setting above the concurrency, one cell of 1,500 requests
# and one of 120, and `abs(short p50 / long p50 - 1) < 0.1` at confidence
# 0.95 (true in truth). Counts how each gate ended and prints the share
# rejected with its 95% Clopper–Pearson interval against the rate the gate
# states (`rejected_error_at_most`). The same recipe as
# tests/gate_bounds.rs, at the scale a rate needs (~10 minutes on 2 cores).
#
#   scripts/bench-abs-gate.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-200}"
cargo build --release --quiet
anvil="$PWD/target/release/anvil"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

twins() { # seed
  cat <<EOF
campaign "twins" { seed $1; }
server "sim-a" { model "m"; sim { prefill-tok-s 400000; decode-step-ms 1; max-running-seqs 32; step-jitter-pct 20; }; }
server "sim-b" { model "m"; sim { prefill-tok-s 400000; decode-step-ms 1; max-running-seqs 33; step-jitter-pct 20; }; }
workload "w" { context-tokens 32; max-tokens 4; concurrency 16; canaries #false; }
cell "short" server="sim-a" workload="w" { requests 1500; }
cell "long" server="sim-b" workload="w" { requests 120; }
gate "same" {
    confidence 0.95
    blocking #false
    require "abs(cell.short.metrics.e2e_p50_ms / cell.long.metrics.e2e_p50_ms - 1) < 0.1"
}
EOF
}

: >"$work/verdicts"
started=$SECONDS
for seed in $(seq 1 "$runs"); do
  dir="$work/$seed"
  mkdir -p "$dir"
  twins "$seed" >"$dir/twins.kdl"
  (cd "$dir" && "$anvil" run twins.kdl --store store >run.log 2>&1) || { cat "$dir/run.log"; exit 1; }
  (cd "$dir" && "$anvil" show twins.kdl:same --json --store store) |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; print(r["status"], r["rejected_error_at_most"])' >>"$work/verdicts"
  rm -rf "$dir"
  [ $((seed % 20)) -eq 0 ] && echo "  $seed of $runs campaigns ($((SECONDS - started)) s)" >&2
done

python3 - "$work/verdicts" "$runs" <<'EOF'
import math, sys
lines = [l.split() for l in open(sys.argv[1]) if l.strip()]
n = len(lines)
stated = {float(rate) for _, rate in lines}

def tail_at_least(k, n, p):  # P(X >= k), X ~ Binomial(n, p)
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))

def clopper_pearson(k, n, alpha=0.05):
    def solve(f):
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) else (lo, mid)
        return (lo + hi) / 2
    low = 0.0 if k == 0 else solve(lambda p: tail_at_least(k, n, p) < alpha / 2)
    high = 1.0 if k == n else solve(lambda p: 1 - tail_at_least(k + 1, n, p) > alpha / 2)
    return low, high

print(f"| gate ended | campaigns of {n} | share | 95% Clopper–Pearson |")
print("|---|---|---|---|")
for status in ("passed", "undecided", "rejected"):
    k = sum(1 for s, _ in lines if s == status)
    low, high = clopper_pearson(k, n)
    print(f"| {status} | {k} | {k / n:.3f} | [{low:.4f}, {high:.4f}] |")
print(f"stated rejected_error_at_most: {', '.join(str(s) for s in sorted(stated))}")
EOF
echo "($runs campaigns in $((SECONDS - started)) s)"
