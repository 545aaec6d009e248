#!/bin/bash
# The README quickstart's time, one checkout (A) against another (B), interleaved A B B A on
# one machine. Each run gets its own empty tuner cache (the models folder shared), as on a
# fresh machine: no host noise kept from earlier runs. Usage:
#   bash experiments/headroom/quickstart_time.sh A_CHECKOUT B_CHECKOUT OUT_DIR
# Prints one line per run: its commit, start and end (UTC), exit code, seconds, and the
# quickstart's closing verdict.
set -u
A=$1 B=$2 OUT=$3
PY=$(cd "$(dirname "$0")/../.." && pwd)/.venv/bin/python   # this checkout's environment
mkdir -p "$OUT"
for tag in A1 B1 B2 A2; do
  case $tag in A*) dir=$A;; B*) dir=$B;; esac
  cache=$OUT/cache-$tag; rm -rf "$cache" "$OUT/out-$tag"; mkdir -p "$cache/noise"
  ln -s ~/.cache/tuner/models "$cache/models"
  start=$(date -u +%H:%M:%S) s=$(date +%s)
  (cd "$dir" && TUNER_CACHE_DIR=$cache "$PY" -m tuner --engine vllm \
     --workload experiments/workloads/quickstart.yaml --model ~/.cache/tuner/models/tiny-llama \
     --trials 3 --remeasure-top 1 --out "$OUT/out-$tag") > "$OUT/$tag.log" 2>&1
  rc=$?
  verdict=$(grep -A1 -m1 "^unresolved\|^no configuration\|beats the defaults" "$OUT/$tag.log" | tr -s ' \n' ' ')
  echo "$tag $(git -C "$dir" rev-parse --short HEAD) $start-$(date -u +%H:%M:%S) rc=$rc $(( $(date +%s) - s )) s: $verdict"
done
