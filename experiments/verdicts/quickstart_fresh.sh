#!/usr/bin/env bash
# README command 1 from N fresh clones, one after the other, on this machine: the set-up's time
# and the study's time are taken apart (the target is on the study: <= 15 min after set-up), and
# each run's whole output is kept in results/quickstart-fresh-<i>.txt with the machine it ran on.
# Resumable: a run whose file exists is skipped.
#   bash experiments/verdicts/quickstart_fresh.sh [RUNS]   (default 3; from the project's root)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
RUNS=${1:-3}
OUT=$ROOT/experiments/verdicts/results
mkdir -p "$OUT"
COMMAND=$(sed -n '/^```sh/{n;p;q}' README.md)   # README command 1, as printed there
SETUP=${COMMAND%% && *}
STUDY=${COMMAND#* && }
for i in $(seq "$RUNS"); do
  file=$OUT/quickstart-fresh-$i.txt
  [ -e "$file" ] && { echo "run $i: $file exists, skipped"; continue; }
  clone=$(mktemp -d /tmp/quickstart-fresh-XXXX)
  git clone -q "$ROOT" "$clone"
  cd "$clone"
  {
    echo "# README command 1 from a fresh clone of $(git rev-parse --short HEAD), run $i of $RUNS"
    echo "# machine: $("$ROOT/.venv/bin/python" -c 'from tuner.host import cpu_identity; print(cpu_identity())')"
    echo "# started $(date -u +%FT%TZ)"
    echo "\$ $SETUP"
  } >"$file.partial"
  start=$SECONDS
  bash -c "$SETUP" >>"$file.partial" 2>&1
  setup_s=$((SECONDS - start))
  echo "\$ $STUDY" >>"$file.partial"
  start=$SECONDS
  bash -c "$STUDY" >>"$file.partial" 2>&1
  study_s=$((SECONDS - start))
  printf '# set-up %d s; the study after set-up %d s (%.1f min)\n' "$setup_s" "$study_s" \
    "$(echo "$study_s / 60" | bc -l)" >>"$file.partial"
  mv "$file.partial" "$file"
  cd "$ROOT"
  rm -rf "$clone"
  echo "run $i: set-up ${setup_s} s, study ${study_s} s"
done
