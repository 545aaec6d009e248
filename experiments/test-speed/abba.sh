#!/bin/bash
# The unit tests before and after a change, A B B A, on one machine: A and B are two checkouts
# (a git worktree of the commit before, and the change), run with one virtual environment,
# each checkout's __pycache__ removed before every run (as in CI's fresh clone), all of
# tests/unit, then the fast ones. Prints pytest's last line and the wall time of each run.
# Usage: bash experiments/test-speed/abba.sh BEFORE_DIR AFTER_DIR [PYTHON]
set -u
A=$1 B=$2 PY=${3:-$PWD/.venv/bin/python}
run() {
  cd "$1" || exit 2
  find tuner tests -name __pycache__ -prune -exec rm -rf {} +
  s=$(date +%s.%N)
  if [ "$2" = fast ]; then
    r=$("$PY" -m pytest -q -n 3 -p no:cacheprovider tests/unit -m "not integration and not slow" 2>&1 | tail -1)
  else
    r=$("$PY" -m pytest -q -n 3 -p no:cacheprovider tests/unit 2>&1 | tail -1)
  fi
  e=$(date +%s.%N)
  echo "$1 $2 ended $(date -u +%H:%M:%S) wall $(echo "$e - $s" | bc) :: $r"
}
for m in full fast; do
  for d in "$A" "$B" "$B" "$A"; do run "$d" "$m"; done
done
