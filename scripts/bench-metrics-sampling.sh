#!/usr/bin/env bash
# What sampling the server's /metrics during a cell costs the cell: the same
# llama.cpp cell (24 requests, 4 at a time) with the sampler off, every 1 s
# (the default) and every 100 ms, side by side in rounds, as a table.
#
#   scripts/bench-metrics-sampling.sh [ROUNDS]     (default 3; needs scripts/llama-server.sh's build)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
eval "$(bash scripts/llama-server.sh --print-env)"
cargo build --quiet --release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/sampling.kdl" <<'KDL'
campaign "metrics-sampling" { seed 7; }
param "llama_server" "llama-server"
param "smollm2_gguf" "model.gguf"
server "llama" {
    engine "command"
    command "{llama_server}" "-m" "{smollm2_gguf}" "--alias" "smollm2-135m" "--host" "{host}" "--port" "{port}" "-c" "8192" "--parallel" "4" "--jinja" "-t" "2" "--metrics"
    model "smollm2-135m"
    ready http="/health" status=200 timeout="2m"
    warmup requests=2 max-tokens=8
}
cell "c" server="llama" {
    context-tokens 96
    max-tokens 48
    requests 24
    concurrency 4
    canaries #false
    temperature 0.0
}
KDL
printf '%-6s %-12s %10s %14s %14s %8s\n' round interval_ms "tok/s" "ttft_p50_ms" "e2e_mean_ms" samples
for round in $(seq 1 "$rounds"); do
  for ms in 0 1000 100; do
    store="$work/store-$round-$ms"
    ANVIL_METRICS_INTERVAL_MS=$ms ./target/release/anvil run "$work/sampling.kdl" --store "$store" \
      --set "llama_server=$LLAMA_SERVER" --set "smollm2_gguf=$SMOLLM2_GGUF" > "$work/out.txt" 2>&1 \
      || { cat "$work/out.txt"; exit 1; }
    python3 - "$(find "$store" -name benchmark.json | head -1)" "$round" "$ms" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); m = a["metrics"]
series = a.get("telemetry", {}).get("server_metrics_series", [])
print("%-6s %-12s %10.1f %14.1f %14.1f %8d" % (sys.argv[2], sys.argv[3], m["throughput_tok_s"],
      m["ttft_p50_ms"], m["e2e_mean_ms"], len(series[0]["samples"]) if series else 0))
PY
  done
done
