#!/usr/bin/env bash
# The real-engine controls of issue 35 on vLLM CPU, one after another, each written to
# results/<control>.txt with the machine it ran on. A control whose file ends with its exit
# line is done and skipped, so the script resumes where a session stopped:
#   bash experiments/verdicts/run_controls.sh [control ...]   (default: batch1 aa)
# aa2, aa3: the A/A again; handicap, handicap2, ...: the A/A's config with its engine paused
# 15% of the time by handicap.py (the positive control near the resolution).
# Each pair of fresh starts takes 4-6 minutes on the 2-core CI machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
TUNE=${TUNE:-.venv/bin/tune}
MODEL=${MODEL:-$HOME/.cache/tuner/models/tiny-llama}
WORKLOAD=${WORKLOAD:-experiments/workloads/quickstart.yaml}
OUT=${OUT:-tune-runs/controls}
machine() {
  echo "# $(date -u +%FT%TZ) at $(git rev-parse --short HEAD)"
  echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
       "$(grep -m1 -o -w 'avx512f\|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')avx2;" \
       "free page reporting order" \
       "$(cat /sys/module/page_reporting/parameters/page_reporting_order 2>/dev/null || echo none)"
}
run() {  # name, then the arguments of tune measure
  local name=$1 file=experiments/verdicts/results/$1.txt
  shift
  if [ -f "$file" ] && grep -q '^# exit ' "$file"; then echo "$name: done"; return; fi
  { machine; echo "\$ tune measure $*"; } >"$file"
  "$TUNE" measure --engine vllm --workload "$WORKLOAD" --model "$MODEL" --out "$OUT" "$@" \
    >>"$file" 2>&1
  echo "# exit $?" >>"$file"
  echo "$name: $(tail -1 "$file")"
}
controls=("$@")
[ ${#controls[@]} -eq 0 ] && controls=(batch1 aa)
for control in "${controls[@]}"; do
  case $control in
    batch1) run batch1 --config experiments/verdicts/controls/batch1.yaml --against defaults \
              --repeats 3 ;;
    aa) run aa --config experiments/verdicts/controls/aa.yaml --against defaults --repeats 4 ;;
    defaults*) run "$control" --repeats 5 ;;
    handicap*)  # the A/A's config with its engine paused 15% of the time: found worse
      PYTHONPATH=. .venv/bin/python experiments/verdicts/handicap.py \
        --marker='--max-num-seqs 128' --duty 0.15 >/tmp/handicap.$$.log 2>&1 &
      hp=$!
      run "$control" --config experiments/verdicts/controls/aa.yaml --against defaults \
        --repeats 4
      kill -TERM $hp; wait $hp
      f=experiments/verdicts/results/$control.txt
      grep -q '^# handicap' "$f" || sed 's/^/# /' /tmp/handicap.$$.log >>"$f"
      rm -f /tmp/handicap.$$.log ;;
    aa[0-9]) run "$control" --config experiments/verdicts/controls/aa.yaml --against defaults \
              --repeats 4 ;;
    *) echo "unknown control $control (batch1, aa, aa2, handicap, handicap2, defaults)"
       exit 2 ;;
  esac
done
