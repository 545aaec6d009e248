#!/usr/bin/env bash
# How noisy is one measurement? `tune measure --repeats N` of each engine's defaults on the
# README's quickstart workload, on this machine. Each engine's printed output (with the
# machine it ran on) goes to results/<engine>.txt; an engine whose file already ends with its
# verdict is skipped, so the script resumes where a stopped run left off.
# Usage: bash experiments/measure-noise/run.sh [engine ...]   (default: vllm llamacpp)
set -euo pipefail
cd "$(dirname "$0")/../.."
here=experiments/measure-noise
out=$here/results
mkdir -p "$out"
repeats=${REPEATS:-5}
model=${TUNER_CACHE_DIR:-$HOME/.cache/tuner}/models/tiny-llama

machine() {
  echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores," \
       "$(free -g | awk '/Mem:/ {print $2}') GiB;" \
       "avx512f: $(grep -qw avx512f /proc/cpuinfo && echo yes || echo no)," \
       "avx2: $(grep -qw avx2 /proc/cpuinfo && echo yes || echo no)"
}

for engine in "${@:-vllm llamacpp}"; do
  for e in $engine; do
    file=$out/$e.txt
    if [ -s "$file" ] && grep -q "starts met the SLOs" "$file"; then
      echo "$e: done already ($file)"
      continue
    fi
    cmd=(.venv/bin/tune measure --engine "$e" --workload experiments/workloads/quickstart.yaml
         --model "$model" --repeats "$repeats" --out "$here/run")
    {
      echo "# $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
      machine
      echo "\$ ${cmd[*]}"
      COLUMNS=100 "${cmd[@]}" 2>/dev/null
    } >"$file.part"
    mv "$file.part" "$file"
    echo "$e: $(tail -n 4 "$file" | head -n 2 | tr '\n' ' ')"
  done
done
