#!/usr/bin/env bash
# What a vLLM dtype costs on this CPU, and on one limited to AVX2: the real
# vLLM (scripts/vllm.sh's install, SmolLM2-135M) started with --dtype
# bfloat16 and float32, natively and under ONEDNN_MAX_CPU_ISA=AVX2 (oneDNN
# then has no AVX-512 kernels, as on a machine of this kind without them),
# and under both that and ATEN_CPU_CAPABILITY=avx2 (PyTorch's own kernels
# limited too: oneDNN's cap alone logs the fallback but torch's linear
# still runs AVX-512), one server at a time; each serves ROUNDS requests of ~520 prompt tokens
# and 32 output tokens, one at a time. Prints a table of the seconds per
# request and whether vLLM logged oneDNN's fallback to torch linear.
#
#   scripts/bench-vllm-dtype.sh            (~12 minutes on 2 cores)
# Environment: ROUNDS (default 3), PORT (default 18431), ISAS (default
# "native AVX2 AVX2-all"), ANVIL_CACHE.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/vllm.sh --print-env)"
rounds="${ROUNDS:-3}"
port="${PORT:-18431}"
work="$(mktemp -d)"
server=""
cleanup() { [[ -n "$server" ]] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

prompt="$(python3 -c 'print(" ".join(["the quick brown fox jumps over the lazy dog"] * 58))')"
body="$(python3 -c 'import json,sys; print(json.dumps({"model":"smol","prompt":sys.argv[1],"max_tokens":32,"temperature":0,"ignore_eos":True}))' "$prompt")"

one_config() { # dtype isa
  local dtype="$1" isa="$2" log="$work/$1-$2.log"
  local -a env=(VLLM_CPU_KVCACHE_SPACE=1 HF_HUB_OFFLINE=1)
  case "$isa" in
    AVX2) env+=(ONEDNN_MAX_CPU_ISA=AVX2) ;;
    AVX2-all) env+=(ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2) ;;
  esac
  env "${env[@]}" "$VLLM_PYTHON" -m vllm.entrypoints.openai.api_server --model "$VLLM_MODEL_DIR" \
    --served-model-name smol --dtype "$dtype" --max-model-len 2048 --port "$port" >"$log" 2>&1 &
  server=$!
  local since=$SECONDS
  until curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null; do
    if ! kill -0 "$server" 2>/dev/null || (( SECONDS - since > 900 )); then
      echo "| $dtype | $isa | did not start (log: $(tail -n 1 "$log")) | | |"; server=""; return
    fi
    sleep 2
  done
  local times=()
  for _ in $(seq "$rounds"); do
    times+=("$(curl -s -o /dev/null -w '%{time_total}' -H 'content-type: application/json' \
      -d "$body" "http://127.0.0.1:$port/v1/completions")")
  done
  local fallback=no
  grep -q "fallback to torch linear" "$log" && fallback=yes
  echo "| $dtype | $isa | $((SECONDS - since)) | ${times[*]} | $fallback |"
  kill "$server"; wait "$server" 2>/dev/null || true; server=""
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); AVX-512: $(grep -qo avx512f /proc/cpuinfo && echo yes || echo no)"
echo "| dtype | kernels limited to | start s | s per request ($rounds) | oneDNN fallback logged |"
echo "|---|---|---|---|---|"
for isa in ${ISAS:-native AVX2 AVX2-all}; do
  for dtype in bfloat16 float32; do
    one_config "$dtype" "$isa"
  done
done
